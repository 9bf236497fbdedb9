// The codec steps a node runs (error feedback with compression, decode, the
// §8 merge) on the backend of its `device`: host data in, host results out.
// On the CPU backend the op reads and writes the caller's memory itself; on
// a device backend (CUDA) the inputs are uploaded to buffers of its memory,
// the op runs there, and the outputs come back only when it succeeded, so a
// refused step leaves the caller's data as it was, as on the CPU. The
// results are the same bytes on every backend (backend.h).
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/backend.h"
#include "crucible/kernels/error_feedback.h"

namespace crucible::kernels {

// The backend for a node's `device`: "cpu" (on `threads` threads, <= 0: the
// hardware's count), "cuda" (device 0) or "cuda:N". invalid_argument for
// another name; unavailable/unimplemented when the build or the machine has
// no such CUDA device.
Result<std::unique_ptr<Backend>> backend_for(std::string_view device, int threads = 0);

// error_feedback_step, decompress and aggregate (error_feedback.h,
// aggregate.h) on `backend`, with the same checks and the same bytes.
// `k_per_4096` is the protocol's density (codec.h); other values are for
// benches that measure the density's effect (bench/convergence).
Result<CompressedTensor> error_feedback_step(Backend& backend, std::span<float> ef, std::span<const float> delta,
                                             std::span<const std::int64_t> shape, float beta,
                                             int k_per_4096 = kTopKPer4096);
Status decompress(Backend& backend, const CompressedTensor& c, std::span<float> out);
Status aggregate(Backend& backend, std::vector<PeerUpdate> peers, std::span<float> out);

}  // namespace crucible::kernels
