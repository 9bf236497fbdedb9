#include "crucible/common/packet.h"

#include <bit>
#include <cstring>

namespace crucible::packet {
namespace {

constexpr std::uint64_t kMaxBlockSide = 64;

class Writer {
 public:
  explicit Writer(Bytes& out) : out_(out) {}
  template <typename Int>
  void le(Int v) {
    auto u = static_cast<std::make_unsigned_t<Int>>(v);
    for (std::size_t i = 0; i < sizeof(Int); ++i) out_.push_back(static_cast<std::uint8_t>(u >> (8 * i)));
  }
  void f32(float v) { le(std::bit_cast<std::uint32_t>(v)); }
  void raw(ByteSpan b) { out_.insert(out_.end(), b.begin(), b.end()); }

 private:
  Bytes& out_;
};

class Reader {
 public:
  explicit Reader(ByteSpan in) : in_(in) {}
  std::size_t remaining() const { return in_.size() - pos_; }
  std::size_t position() const { return pos_; }
  Status need(std::size_t n, std::string_view what) const {
    if (n > remaining()) return data_loss("packet truncated: {} needs {} bytes, {} remain", what, n, remaining());
    return Status::ok();
  }
  template <typename Int>
  Result<Int> le(std::string_view what) {
    CRUCIBLE_RETURN_IF_ERROR(need(sizeof(Int), what));
    std::make_unsigned_t<Int> u = 0;
    for (std::size_t i = 0; i < sizeof(Int); ++i) u |= static_cast<decltype(u)>(in_[pos_ + i]) << (8 * i);
    pos_ += sizeof(Int);
    return static_cast<Int>(u);
  }
  Result<float> f32(std::string_view what) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint32_t u, le<std::uint32_t>(what));
    return std::bit_cast<float>(u);
  }
  Status raw(std::uint8_t* out, std::size_t n, std::string_view what) {
    CRUCIBLE_RETURN_IF_ERROR(need(n, what));
    std::memcpy(out, in_.data() + pos_, n);
    pos_ += n;
    return Status::ok();
  }
  Result<Bytes> bytes(std::size_t n, std::string_view what) {
    CRUCIBLE_RETURN_IF_ERROR(need(n, what));  // before allocating
    Bytes b(in_.begin() + static_cast<std::ptrdiff_t>(pos_), in_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
    pos_ += n;
    return b;
  }

 private:
  ByteSpan in_;
  std::size_t pos_ = 0;
};

bool printable_name(std::string_view name) {
  for (unsigned char c : name)
    if (c < 0x21 || c > 0x7e) return false;
  return !name.empty();
}

// Names are front-coded against the previous tensor's (as RocksDB keys in a
// block): the length of the shared prefix, then the rest.
Result<Tensor> read_tensor(Reader& r, const Limits& limits, std::uint32_t index, const std::string& prev) {
  Tensor t;
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint8_t shared, r.le<std::uint8_t>("tensor name prefix"));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint8_t suffix_len, r.le<std::uint8_t>("tensor name length"));
  if (shared > prev.size()) {
    return invalid_argument("packet tensor {}: shares {} name bytes with a {}-byte name", index, shared, prev.size());
  }
  const std::size_t name_len = std::size_t{shared} + suffix_len;
  if (name_len == 0 || name_len > limits.max_name_bytes) {
    return invalid_argument("packet tensor {}: name of {} bytes (1..{} allowed)", index, name_len,
                            limits.max_name_bytes);
  }
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes suffix, r.bytes(suffix_len, "tensor name"));
  t.name = prev.substr(0, shared);
  t.name.append(suffix.begin(), suffix.end());
  if (!printable_name(t.name)) return invalid_argument("packet tensor {}: name is not printable ASCII", index);
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint8_t ndim, r.le<std::uint8_t>("tensor rank"));
  if (ndim == 0 || ndim > limits.max_dims) {
    return invalid_argument("packet tensor '{}': rank {} (1..{} allowed)", t.name, ndim, limits.max_dims);
  }
  CRUCIBLE_RETURN_IF_ERROR(r.need(std::size_t{ndim} * 4 + 28, "tensor layout"));
  for (int d = 0; d < ndim; ++d) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint32_t dim, r.le<std::uint32_t>("dimension"));
    if (dim == 0 || dim > limits.max_elements) {
      return invalid_argument("packet tensor '{}': dimension {} is {}", t.name, d, dim);
    }
    t.shape.push_back(static_cast<std::int64_t>(dim));
  }
  CRUCIBLE_ASSIGN_OR_RETURN(t.block_rows, r.le<std::uint8_t>("block rows"));
  CRUCIBLE_ASSIGN_OR_RETURN(t.block_cols, r.le<std::uint8_t>("block cols"));
  CRUCIBLE_ASSIGN_OR_RETURN(t.k, r.le<std::uint16_t>("k"));
  CRUCIBLE_ASSIGN_OR_RETURN(t.shift, r.f32("shift"));
  CRUCIBLE_ASSIGN_OR_RETURN(t.scale, r.f32("scale"));
  for (float& v : t.lookup) {
    CRUCIBLE_ASSIGN_OR_RETURN(v, r.f32("lookup"));
  }
  CRUCIBLE_ASSIGN_OR_RETURN(TensorSizes sizes, tensor_sizes(t, limits));
  CRUCIBLE_ASSIGN_OR_RETURN(t.indices, r.bytes(sizes.index_bytes, fmt::format("indices of '{}'", t.name)));
  CRUCIBLE_ASSIGN_OR_RETURN(t.codes, r.bytes(sizes.code_bytes, fmt::format("codes of '{}'", t.name)));
  return t;
}

}  // namespace

Result<TensorSizes> tensor_sizes(const Tensor& t, const Limits& limits) {
  if (t.shape.empty() || t.shape.size() > limits.max_dims) {
    return invalid_argument("packet tensor '{}': rank {} (1..{} allowed)", t.name, t.shape.size(), limits.max_dims);
  }
  TensorSizes s;
  std::uint64_t elements = 1;
  for (std::int64_t d : t.shape) {
    if (d <= 0 || static_cast<std::uint64_t>(d) > limits.max_elements / elements) {
      return invalid_argument("packet tensor '{}': more than {} elements", t.name, limits.max_elements);
    }
    elements *= static_cast<std::uint64_t>(d);
  }
  s.cols = static_cast<std::uint64_t>(t.shape.back());
  s.rows = elements / s.cols;
  if (t.shape.size() == 1) s.rows = 1;
  if (t.block_rows == 0 || t.block_cols == 0 || t.block_rows > kMaxBlockSide || t.block_cols > kMaxBlockSide ||
      s.rows % t.block_rows != 0 || s.cols % t.block_cols != 0) {
    return invalid_argument("packet tensor '{}': blocks of {} x {} do not tile {} x {}", t.name, t.block_rows,
                            t.block_cols, s.rows, s.cols);
  }
  const std::uint64_t block_elems = std::uint64_t{t.block_rows} * t.block_cols;
  if (t.k < 1 || t.k > block_elems || (t.k % 2 != 0 && t.k != block_elems)) {
    return invalid_argument("packet tensor '{}': k = {} for blocks of {}", t.name, t.k, block_elems);
  }
  s.blocks = (s.rows / t.block_rows) * (s.cols / t.block_cols);
  s.kept = s.blocks * t.k;
  s.index_bytes = (s.kept + 1) / 2 * 3;
  s.code_bytes = (s.kept + 3) / 4;
  return s;
}

Result<Bytes> encode_body(const Packet& p, const Limits& limits) {
  if (p.tensors.size() > limits.max_tensors) {
    return invalid_argument("packet: {} tensors, more than {}", p.tensors.size(), limits.max_tensors);
  }
  Bytes out;
  Writer w(out);
  w.raw(kMagic);
  w.le(kFormatVersion);
  w.le(p.protocol_version);
  w.le(p.window);
  w.le(p.uid);
  w.raw(p.signer);
  w.le(p.global_step);
  w.raw(p.model_digest);
  w.raw(p.sample_digest);
  w.le(static_cast<std::uint32_t>(p.tensors.size()));
  std::string_view prev;
  for (const Tensor& t : p.tensors) {
    if (t.name.empty() || t.name.size() > limits.max_name_bytes || !printable_name(t.name)) {
      return invalid_argument("packet: bad tensor name '{}'", t.name);
    }
    CRUCIBLE_ASSIGN_OR_RETURN(TensorSizes s, tensor_sizes(t, limits));
    if (t.indices.size() != s.index_bytes || t.codes.size() != s.code_bytes) {
      return invalid_argument("packet tensor '{}': {} index and {} code bytes, the layout needs {} and {}", t.name,
                              t.indices.size(), t.codes.size(), s.index_bytes, s.code_bytes);
    }
    for (std::int64_t d : t.shape) {
      if (d > 0xFFFFFFFF) return invalid_argument("packet tensor '{}': dimension {} exceeds 2^32 - 1", t.name, d);
    }
    std::size_t shared = 0;
    while (shared < prev.size() && shared < t.name.size() && prev[shared] == t.name[shared]) ++shared;
    w.le(static_cast<std::uint8_t>(shared));
    w.le(static_cast<std::uint8_t>(t.name.size() - shared));
    w.raw(as_bytes(std::string_view(t.name).substr(shared)));
    prev = t.name;
    w.le(static_cast<std::uint8_t>(t.shape.size()));
    for (std::int64_t d : t.shape) w.le(static_cast<std::uint32_t>(d));
    w.le(static_cast<std::uint8_t>(t.block_rows));
    w.le(static_cast<std::uint8_t>(t.block_cols));
    w.le(static_cast<std::uint16_t>(t.k));
    w.f32(t.shift);
    w.f32(t.scale);
    for (float v : t.lookup) w.f32(v);
    w.raw(t.indices);
    w.raw(t.codes);
  }
  if (out.size() + kTrailerBytes > limits.max_packet_bytes) {
    return resource_exhausted("packet: {} bytes, more than the cap of {}", out.size(), limits.max_packet_bytes);
  }
  return out;
}

Result<Decoded> decode(ByteSpan bytes, const Limits& limits) {
  if (bytes.size() > limits.max_packet_bytes) {
    return resource_exhausted("packet: {} bytes, more than the cap of {}", bytes.size(), limits.max_packet_bytes);
  }
  Reader r(bytes);
  std::array<std::uint8_t, 8> magic{};
  CRUCIBLE_RETURN_IF_ERROR(r.raw(magic.data(), magic.size(), "magic"));
  if (magic != kMagic) return data_loss("not a crucible packet (bad magic)");
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint16_t format, r.le<std::uint16_t>("format version"));
  if (format != kFormatVersion) {
    return unimplemented("packet format version {} is not supported (this build reads {})", format, kFormatVersion);
  }
  Decoded d;
  Packet& p = d.packet;
  CRUCIBLE_ASSIGN_OR_RETURN(p.protocol_version, r.le<std::uint16_t>("protocol version"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.window, r.le<std::uint64_t>("window"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.uid, r.le<std::uint16_t>("uid"));
  CRUCIBLE_RETURN_IF_ERROR(r.raw(p.signer.data(), p.signer.size(), "signer"));
  CRUCIBLE_ASSIGN_OR_RETURN(p.global_step, r.le<std::uint64_t>("global step"));
  CRUCIBLE_RETURN_IF_ERROR(r.raw(p.model_digest.data(), p.model_digest.size(), "model digest"));
  CRUCIBLE_RETURN_IF_ERROR(r.raw(p.sample_digest.data(), p.sample_digest.size(), "sample digest"));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint32_t count, r.le<std::uint32_t>("tensor count"));
  if (count > limits.max_tensors) {
    return resource_exhausted("packet declares {} tensors, more than the cap of {}", count, limits.max_tensors);
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    CRUCIBLE_ASSIGN_OR_RETURN(Tensor t,
                              read_tensor(r, limits, i, p.tensors.empty() ? std::string() : p.tensors.back().name));
    p.tensors.push_back(std::move(t));
  }
  d.body_bytes = r.position();
  CRUCIBLE_RETURN_IF_ERROR(r.raw(d.digest.data(), d.digest.size(), "digest"));
  CRUCIBLE_RETURN_IF_ERROR(r.raw(d.signature.data(), d.signature.size(), "signature"));
  if (r.remaining() != 0) return data_loss("packet has {} bytes after its signature", r.remaining());
  return d;
}

}  // namespace crucible::packet
