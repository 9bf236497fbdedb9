// The CUDA backend (backend.h): device buffers, the kernels of codec.cu
// launched in order on the device's default stream, and the few small sums
// that fix the order of additions done on the host, as the CPU does them.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/backend.h"
#include "crucible/kernels/cuda.h"
#include "crucible/kernels/pack12.h"
#include "launch.h"

namespace crucible::kernels {
namespace {

Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return internal_error("cuda: {}: {}", what, cudaGetErrorString(err));
}

#define CRUCIBLE_CUDA_CALL(expr) CRUCIBLE_RETURN_IF_ERROR(cuda_status((expr), #expr))

cuda::launch::Layout layout_of(const BlockLayout& l) {
  return {l.rows, l.cols, l.block_rows, l.block_cols, l.blocks_across(), l.num_blocks(), l.k};
}

// A scratch device allocation for one op.
template <typename T>
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (p_ != nullptr) cudaFree(p_);
  }
  Status allocate(std::size_t n) {
    return cuda_status(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T)),
                       "cudaMalloc");
  }
  T* get() const { return p_; }
  Status to_host(std::vector<T>& out, std::size_t n) const {
    out.resize(n);
    return cuda_status(cudaMemcpy(out.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

 private:
  T* p_ = nullptr;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {}
  std::string name() const override { return "cuda:" + std::to_string(device_); }
  Memory memory() const override { return Memory::kCuda; }
  bool supports(Op) const override { return true; }

  Result<Buffer> alloc(std::size_t bytes) override {
    CRUCIBLE_RETURN_IF_ERROR(use());
    void* p = nullptr;
    CRUCIBLE_CUDA_CALL(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
    return Buffer(p, bytes, [](void* q) { cudaFree(q); });
  }
  Status upload(const Buffer& dst, const void* host, std::size_t bytes) override {
    if (bytes > dst.size()) return invalid_argument("cuda: {} bytes into a buffer of {}", bytes, dst.size());
    CRUCIBLE_RETURN_IF_ERROR(use());
    return cuda_status(cudaMemcpy(dst.data(), host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  Status download(void* host, const Buffer& src, std::size_t bytes) override {
    if (bytes > src.size()) return invalid_argument("cuda: {} bytes from a buffer of {}", bytes, src.size());
    CRUCIBLE_RETURN_IF_ERROR(use());
    return cuda_status(cudaMemcpy(host, src.data(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

  Status topk(const TopKOp& op) override {
    CRUCIBLE_RETURN_IF_ERROR(check(op.layout));
    CRUCIBLE_CUDA_CALL(cuda::launch::topk(op.x, layout_of(op.layout), op.indices, op.values, nullptr));
    return sync("topk");
  }

  Status quantize2(const Quantize2Op& op) override {
    CRUCIBLE_RETURN_IF_ERROR(use());
    *op.quant = {};
    if (op.n == 0) return Status::ok();
    const std::size_t per = op.per_block == 0 || op.per_block > op.n ? op.n : op.per_block;
    const std::size_t runs = (op.n + per - 1) / per;
    Scratch<double> part, bin_part;
    Scratch<unsigned> bin_count;
    CRUCIBLE_RETURN_IF_ERROR(part.allocate(runs));
    CRUCIBLE_RETURN_IF_ERROR(bin_part.allocate(runs * 4));
    CRUCIBLE_RETURN_IF_ERROR(bin_count.allocate(runs * 4));
    std::vector<double> host;
    auto total = [&]() -> Result<double> {
      CRUCIBLE_RETURN_IF_ERROR(part.to_host(host, runs));
      double t = 0;
      for (double p : host) t += p;  // the runs' sums in run order, as the CPU adds them
      return t;
    };
    CRUCIBLE_CUDA_CALL(cuda::launch::run_sums(op.values, op.n, per, part.get(), nullptr));
    CRUCIBLE_ASSIGN_OR_RETURN(const double sum, total());
    const double shift = sum / static_cast<double>(op.n);
    CRUCIBLE_CUDA_CALL(cuda::launch::run_square_sums(op.values, op.n, per, shift, part.get(), nullptr));
    CRUCIBLE_ASSIGN_OR_RETURN(const double sq, total());
    const double sigma = op.n > 1 ? std::sqrt(sq) / std::sqrt(static_cast<double>(op.n - 1)) : 0.0;
    const double scale = 6.0 * sigma / 4.0;
    CRUCIBLE_CUDA_CALL(
        cuda::launch::codes(op.values, op.n, per, shift, scale, op.codes, bin_part.get(), bin_count.get(), nullptr));
    std::vector<double> sums;
    std::vector<unsigned> counts;
    CRUCIBLE_RETURN_IF_ERROR(bin_part.to_host(sums, runs * 4));
    CRUCIBLE_RETURN_IF_ERROR(bin_count.to_host(counts, runs * 4));
    std::array<double, 4> bin_sum{};
    std::array<std::size_t, 4> bin_n{};
    for (std::size_t r = 0; r < runs; ++r) {
      for (std::size_t b = 0; b < 4; ++b) {
        bin_sum[b] += sums[r * 4 + b];
        bin_n[b] += counts[r * 4 + b];
      }
    }
    op.quant->shift = static_cast<float>(shift);
    op.quant->scale = static_cast<float>(scale);
    for (std::size_t b = 0; b < 4; ++b) {
      op.quant->lookup[b] = bin_n[b] ? static_cast<float>(bin_sum[b] / static_cast<double>(bin_n[b])) : 0.0f;
    }
    return Status::ok();
  }

  Status encode(const EncodeOp& op) override {
    const BlockLayout& l = op.layout;
    if (!std::isfinite(op.beta) || op.beta < 0 || op.beta > 1)
      return invalid_argument("error feedback: beta {} not in [0, 1]", op.beta);
    CRUCIBLE_RETURN_IF_ERROR(check(l));
    const auto n = static_cast<std::size_t>(l.rows * l.cols);
    const auto kept = static_cast<std::size_t>(l.kept());
    Scratch<unsigned long long> first;
    CRUCIBLE_RETURN_IF_ERROR(first.allocate(1));
    CRUCIBLE_CUDA_CALL(cudaMemset(first.get(), 0xFF, sizeof(unsigned long long)));
    CRUCIBLE_CUDA_CALL(cuda::launch::first_non_finite(op.delta, n, first.get(), nullptr));
    std::vector<unsigned long long> bad;
    CRUCIBLE_RETURN_IF_ERROR(first.to_host(bad, 1));
    if (bad[0] != ~0ull) return invalid_argument("error feedback: non-finite delta at {}", bad[0]);
    CRUCIBLE_CUDA_CALL(cuda::launch::ef_update(op.ef, op.delta, n, op.beta, nullptr));
    Scratch<float> values;
    CRUCIBLE_RETURN_IF_ERROR(values.allocate(kept));
    CRUCIBLE_CUDA_CALL(cuda::launch::topk(op.ef, layout_of(l), op.indices, values.get(), nullptr));
    CRUCIBLE_RETURN_IF_ERROR(quantize2({values.get(), kept, static_cast<std::size_t>(l.k), op.codes, op.quant}));
    cuda::launch::Values4 sent{};
    for (std::size_t b = 0; b < 4; ++b) sent.v[b] = op.quant->lookup[b] + op.quant->shift;
    CRUCIBLE_CUDA_CALL(cuda::launch::subtract_sent(op.ef, layout_of(l), op.indices, op.codes, sent, nullptr));
    return sync("encode");
  }

  Status decode(const DecodeOp& op) override {
    const BlockLayout& l = op.layout;
    CRUCIBLE_RETURN_IF_ERROR(check(l));
    CRUCIBLE_RETURN_IF_ERROR(indices_valid(op.indices, l, "decode"));
    CRUCIBLE_CUDA_CALL(cudaMemset(op.out, 0, static_cast<std::size_t>(l.rows * l.cols) * sizeof(float)));
    cuda::launch::Values4 value{};
    for (std::size_t b = 0; b < 4; ++b) value.v[b] = op.quant.lookup[b] + op.quant.shift;
    CRUCIBLE_CUDA_CALL(cuda::launch::scatter(op.out, layout_of(l), op.indices, op.codes, value, nullptr));
    return sync("decode");
  }

  Status merge(const MergeOp& op) override {
    const BlockLayout& l = op.layout;
    CRUCIBLE_RETURN_IF_ERROR(check(l));
    const auto n = static_cast<std::size_t>(l.rows * l.cols);
    if (op.peers.empty()) {
      CRUCIBLE_CUDA_CALL(cudaMemset(op.out, 0, n * sizeof(float)));
      return sync("merge");
    }
    std::vector<MergePeer> peers(op.peers.begin(), op.peers.end());
    std::sort(peers.begin(), peers.end(), [](const MergePeer& a, const MergePeer& b) { return a.uid < b.uid; });
    const auto nb = static_cast<std::size_t>(l.num_blocks());
    Scratch<double> part;
    CRUCIBLE_RETURN_IF_ERROR(part.allocate(nb));
    std::vector<cuda::launch::Peer> device_peers(peers.size());
    std::vector<double> norms(peers.size()), host;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (i > 0 && peers[i].uid == peers[i - 1].uid) return invalid_argument("aggregate: uid {} twice", peers[i].uid);
      CRUCIBLE_RETURN_IF_ERROR(indices_valid(peers[i].indices, l, "aggregate"));
      cuda::launch::Values4 value{};
      for (std::size_t c = 0; c < 4; ++c) value.v[c] = peers[i].quant.lookup[c] + peers[i].quant.shift;
      CRUCIBLE_CUDA_CALL(cuda::launch::norm_parts(peers[i].codes, layout_of(l), value, part.get(), nullptr));
      CRUCIBLE_RETURN_IF_ERROR(part.to_host(host, nb));
      double total = 0;
      for (double p : host) total += p;  // blocks' sums in block order, as the CPU
      norms[i] = std::sqrt(total);
      if (!std::isfinite(norms[i])) return invalid_argument("aggregate: uid {} has a non-finite value", peers[i].uid);
      device_peers[i] = {peers[i].indices, peers[i].codes, {value.v[0], value.v[1], value.v[2], value.v[3]}, 1.0};
    }
    const double median = median_of(norms);
    for (std::size_t i = 0; i < peers.size(); ++i) {
      device_peers[i].scale = norms[i] > median && norms[i] > 0 ? median / norms[i] : 1.0;
    }
    Scratch<cuda::launch::Peer> d_peers;
    CRUCIBLE_RETURN_IF_ERROR(d_peers.allocate(device_peers.size()));
    CRUCIBLE_CUDA_CALL(cudaMemcpy(d_peers.get(), device_peers.data(), device_peers.size() * sizeof(cuda::launch::Peer),
                                  cudaMemcpyHostToDevice));
    CRUCIBLE_CUDA_CALL(
        cuda::launch::merge(d_peers.get(), static_cast<int>(device_peers.size()), layout_of(l), op.out, nullptr));
    return sync("merge");
  }

  Status pack12(const Pack12Op& op) override {
    CRUCIBLE_RETURN_IF_ERROR(use());
    if (op.n == 0) return Status::ok();
    // Indices above 4095 are refused as on the CPU: checked on a host copy.
    std::vector<std::uint16_t> host(op.n);
    CRUCIBLE_CUDA_CALL(cudaMemcpy(host.data(), op.indices, op.n * 2, cudaMemcpyDeviceToHost));
    std::vector<std::uint8_t> unused(packed12_size(op.n));
    CRUCIBLE_RETURN_IF_ERROR(check_pack12_args(host, unused));
    CRUCIBLE_CUDA_CALL(cuda::launch::pack12(op.indices, op.n, op.out, nullptr));
    return sync("pack12");
  }

 private:
  Status use() { return cuda_status(cudaSetDevice(device_), "cudaSetDevice"); }
  Status sync(const char* what) { return cuda_status(cudaDeviceSynchronize(), what); }
  Status check(const BlockLayout& l) {
    CRUCIBLE_RETURN_IF_ERROR(use());
    if (l.block_elems() > 4096) return invalid_argument("codec: blocks of {} exceed 4096", l.block_elems());
    if (l.num_blocks() > 0x7FFFFFFF) return invalid_argument("codec: {} blocks exceed one launch", l.num_blocks());
    return Status::ok();
  }
  Status indices_valid(const std::uint16_t* indices, const BlockLayout& l, const char* what) {
    Scratch<unsigned> bad;
    CRUCIBLE_RETURN_IF_ERROR(bad.allocate(1));
    CRUCIBLE_CUDA_CALL(cudaMemset(bad.get(), 0, sizeof(unsigned)));
    CRUCIBLE_CUDA_CALL(cuda::launch::check_indices(indices, layout_of(l), bad.get(), nullptr));
    std::vector<unsigned> flag;
    CRUCIBLE_RETURN_IF_ERROR(bad.to_host(flag, 1));
    if (flag[0] != 0) return data_loss("{}: an index outside its block or not ascending within it", what);
    return Status::ok();
  }

  int device_;
};

}  // namespace

Result<std::unique_ptr<Backend>> cuda_backend(int device) {
  if (device < 0 || device >= cuda::device_count()) {
    return unavailable("cuda: no CUDA device {} ({} present)", device, cuda::device_count());
  }
  return std::unique_ptr<Backend>(new CudaBackend(device));
}

Memory memory_of(const void* p) noexcept {
  cudaPointerAttributes a{};
  if (p == nullptr || cuda::device_count() == 0 || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // clear it
    return Memory::kHost;
  }
  return a.type == cudaMemoryTypeDevice ? Memory::kCuda : Memory::kHost;
}

}  // namespace crucible::kernels
