// A peer's update, from packet to dense values (protocol.md §5, §8): check
// a packet's tensors against the model's (count, order, names, shapes) and
// the codec's layout, decode them, and merge several peers' updates the way
// every node must (kernels::aggregate, ascending uid order), bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "crucible/common/packet.h"
#include "crucible/common/status.h"
#include "crucible/common/tensor_spec.h"
#include "crucible/kernels/backend.h"
#include "crucible/kernels/error_feedback.h"

namespace crucible::protocol {

using model::TensorSpec;
using model::TensorValues;

// The packet's tensors, checked against the specs and decoded.
Result<std::vector<kernels::CompressedTensor>> decode_update(const packet::Packet& p,
                                                             const std::vector<TensorSpec>& specs);

// The exact size of a sealed packet for this model: every layout, and so
// every payload, follows from the shapes (protocol.md §5). A validator
// compares it with the object's size at HEAD before downloading anything.
// `k_per_4096`: the protocol's density unless a bench measures another.
Result<std::uint64_t> expected_packet_bytes(const std::vector<TensorSpec>& specs,
                                            int k_per_4096 = kernels::kTopKPer4096);

struct PeerTensors {
  std::uint16_t uid = 0;
  std::vector<kernels::CompressedTensor> tensors;
};

// Dense aggregate per tensor; peers are taken in ascending uid order. The
// merge runs on `codec` (the node's device, kernels::backend_for; the
// host's is kernels::cpu_backend): the bytes are the same on every one.
Result<TensorValues> merge_updates(const std::vector<PeerTensors>& peers, const std::vector<TensorSpec>& specs,
                                   kernels::Backend& codec);

}  // namespace crucible::protocol
