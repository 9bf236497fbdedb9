// One API for the codec's operations, whatever holds the data (ggml's
// ggml-backend.h is the model). A Backend owns buffers in its memory (host
// memory for the CPU, device memory for CUDA) and runs every op on them; the
// ops take pointers into that memory only, and quantisation parameters on
// the host. Where data lives decides which backend runs: memory_of(p).
//
//   topk       the k largest |x| per block, indices ascending (protocol.md §4)
//   quantize2  2-bit codes and the tensor's Quant2, sums per block in order
//   encode     the error-feedback step fused with compression:
//              e = beta*e + delta; top-k of e; codes; e -= sent at the kept
//   decode     a dense tensor from indices, codes and Quant2
//   merge      the §8 merge of peers into a dense tensor
//   pack12     12-bit index packing
//
// Every backend gives the same bytes as the CPU for indices, codes, packed
// bytes and Quant2, and for encode's e, decode and merge (the same
// additions in the same order, no fused multiply-add):
// tests/kernels/backend_ops_test.cpp checks every op on every backend.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crucible/common/status.h"
#include "crucible/kernels/codec.h"

namespace crucible::kernels {

enum class Op { kTopK, kQuantize2, kEncode, kDecode, kMerge, kPack12 };
inline constexpr std::array kAllOps = {Op::kTopK, Op::kQuantize2, Op::kEncode, Op::kDecode, Op::kMerge, Op::kPack12};
std::string_view name(Op op) noexcept;

enum class Memory { kHost, kCuda };

// Memory owned by one backend, freed with it.
class Buffer {
 public:
  using Free = void (*)(void*);
  Buffer() = default;
  Buffer(void* data, std::size_t size, Free free) : data_(data), size_(size), free_(free) {}
  Buffer(Buffer&& o) noexcept : data_(o.data_), size_(o.size_), free_(o.free_) { o.data_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  Free free_ = nullptr;
};

struct TopKOp {
  const float* x = nullptr;  // layout.rows * layout.cols
  BlockLayout layout;
  std::uint16_t* indices = nullptr;  // layout.kept()
  float* values = nullptr;           // layout.kept()
};

struct Quantize2Op {
  const float* values = nullptr;
  std::size_t n = 0;
  std::size_t per_block = 0;  // the layout's k (0: one run)
  std::uint8_t* codes = nullptr;
  Quant2* quant = nullptr;  // host
};

struct EncodeOp {
  float* ef = nullptr;  // updated in place
  const float* delta = nullptr;
  float beta = 0;
  BlockLayout layout;
  std::uint16_t* indices = nullptr;  // layout.kept()
  std::uint8_t* codes = nullptr;     // layout.kept()
  Quant2* quant = nullptr;           // host
};

struct DecodeOp {
  BlockLayout layout;
  const std::uint16_t* indices = nullptr;
  const std::uint8_t* codes = nullptr;
  Quant2 quant;
  float* out = nullptr;
};

struct MergePeer {
  std::uint16_t uid = 0;
  const std::uint16_t* indices = nullptr;  // layout.kept(), in the backend's memory
  const std::uint8_t* codes = nullptr;
  Quant2 quant;
};

struct MergeOp {
  BlockLayout layout;
  std::span<const MergePeer> peers;  // any order; uids distinct
  float* out = nullptr;
};

struct Pack12Op {
  const std::uint16_t* indices = nullptr;
  std::size_t n = 0;
  std::uint8_t* out = nullptr;  // packed12_size(n)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda:0"
  virtual Memory memory() const = 0;
  virtual bool supports(Op op) const = 0;

  virtual Result<Buffer> alloc(std::size_t bytes) = 0;
  virtual Status upload(const Buffer& dst, const void* host, std::size_t bytes) = 0;
  virtual Status download(void* host, const Buffer& src, std::size_t bytes) = 0;

  // invalid_argument for a layout the codec does not allow; data_loss for
  // an index outside its block or not above the one before it in its block
  // (decode, merge: as packets are checked); invalid_argument for a
  // non-finite delta (encode: e unchanged) or merged value. Buffer sizes
  // are the caller's: layout.rows * layout.cols values, layout.kept() kept.
  virtual Status topk(const TopKOp& op) = 0;
  virtual Status quantize2(const Quantize2Op& op) = 0;
  virtual Status encode(const EncodeOp& op) = 0;
  virtual Status decode(const DecodeOp& op) = 0;
  virtual Status merge(const MergeOp& op) = 0;
  virtual Status pack12(const Pack12Op& op) = 0;
};

// The CPU backend on `threads` threads (<= 0: the hardware's count).
std::unique_ptr<Backend> cpu_backend(int threads = 0);
// The CUDA backend on `device`: unavailable without CUDA in this build or
// without that device.
Result<std::unique_ptr<Backend>> cuda_backend(int device = 0);
// The CPU backend, then one CUDA backend per device present.
std::vector<std::unique_ptr<Backend>> available_backends(int threads = 0);
// Where `p` lives: a CUDA device's memory, or the host's.
Memory memory_of(const void* p) noexcept;

}  // namespace crucible::kernels
