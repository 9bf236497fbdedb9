// The backend API (backend.h): buffers, the CPU backend, discovery.
#include "crucible/kernels/backend.h"

#include <cstdlib>
#include <cstring>

#include "cpu/cpu_ops.h"
#include "crucible/kernels/cuda.h"
#include "crucible/kernels/pack12.h"

namespace crucible::kernels {

std::string_view name(Op op) noexcept {
  switch (op) {
    case Op::kTopK:
      return "topk";
    case Op::kQuantize2:
      return "quantize2";
    case Op::kEncode:
      return "encode";
    case Op::kDecode:
      return "decode";
    case Op::kMerge:
      return "merge";
    case Op::kPack12:
      return "pack12";
  }
  return "unknown";
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (data_ != nullptr && free_ != nullptr) free_(data_);
    data_ = o.data_;
    size_ = o.size_;
    free_ = o.free_;
    o.data_ = nullptr;
  }
  return *this;
}

Buffer::~Buffer() {
  if (data_ != nullptr && free_ != nullptr) free_(data_);
}

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {}
  std::string name() const override { return "cpu"; }
  Memory memory() const override { return Memory::kHost; }
  bool supports(Op) const override { return true; }

  Result<Buffer> alloc(std::size_t bytes) override {
    void* p = std::aligned_alloc(64, (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64);
    if (p == nullptr) return resource_exhausted("cpu: cannot allocate {} bytes", bytes);
    return Buffer(p, bytes, [](void* q) { std::free(q); });
  }
  Status upload(const Buffer& dst, const void* host, std::size_t bytes) override {
    if (bytes > dst.size()) return invalid_argument("cpu: {} bytes into a buffer of {}", bytes, dst.size());
    std::memcpy(dst.data(), host, bytes);
    return Status::ok();
  }
  Status download(void* host, const Buffer& src, std::size_t bytes) override {
    if (bytes > src.size()) return invalid_argument("cpu: {} bytes from a buffer of {}", bytes, src.size());
    std::memcpy(host, src.data(), bytes);
    return Status::ok();
  }

  Status topk(const TopKOp& op) override {
    const auto n = static_cast<std::size_t>(op.layout.rows * op.layout.cols);
    const auto kept = static_cast<std::size_t>(op.layout.kept());
    return select_topk({op.x, n}, op.layout, {op.indices, kept}, {op.values, kept}, threads_);
  }
  Status quantize2(const Quantize2Op& op) override {
    *op.quant = kernels::quantize2({op.values, op.n}, {op.codes, op.n}, op.per_block, threads_);
    return Status::ok();
  }
  Status encode(const EncodeOp& op) override {
    return cpu::encode(op.ef, op.delta, op.beta, op.layout, op.indices, op.codes, op.quant, threads_);
  }
  Status decode(const DecodeOp& op) override {
    return cpu::decode(op.layout, op.indices, op.codes, op.quant, op.out, threads_);
  }
  Status merge(const MergeOp& op) override { return cpu::merge(op.layout, op.peers, op.out, threads_); }
  Status pack12(const Pack12Op& op) override {
    return pack_indices12({op.indices, op.n}, {op.out, packed12_size(op.n)});
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<Backend> cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

std::vector<std::unique_ptr<Backend>> available_backends(int threads) {
  std::vector<std::unique_ptr<Backend>> all;
  all.push_back(cpu_backend(threads));
  for (int d = 0; d < cuda::device_count(); ++d) {
    if (auto b = cuda_backend(d); b.is_ok()) all.push_back(std::move(*b));
  }
  return all;
}

}  // namespace crucible::kernels
