// The node-level codec steps on any backend (backend_codec.h).
#include "crucible/kernels/backend_codec.h"

#include <charconv>

namespace crucible::kernels {

Result<std::unique_ptr<Backend>> backend_for(std::string_view device, int threads) {
  if (device == "cpu") return cpu_backend(threads);
  if (device == "cuda") return cuda_backend(0);
  if (device.starts_with("cuda:")) {
    const std::string_view number = device.substr(5);
    int index = -1;
    const auto [end, err] = std::from_chars(number.data(), number.data() + number.size(), index);
    if (err == std::errc() && end == number.data() + number.size() && index >= 0) return cuda_backend(index);
  }
  return invalid_argument("codec: unknown device '{}' (cpu, cuda or cuda:N)", device);
}

namespace {

// The memory an op on `backend` uses for host data: the host memory itself
// on a host backend; elsewhere a buffer of the backend's memory, filled
// from the host for what the op reads, and copied back by finish() for
// what it writes.
class Staging {
 public:
  explicit Staging(Backend& backend) : backend_(backend) {}

  template <typename T>
  Result<const T*> input(const T* host, std::size_t n) {
    CRUCIBLE_ASSIGN_OR_RETURN(void* p, place(const_cast<T*>(host), n * sizeof(T), true, false));
    return static_cast<const T*>(p);
  }
  // `reads`: the op also reads what is there (an in-place update).
  template <typename T>
  Result<T*> output(T* host, std::size_t n, bool reads = false) {
    CRUCIBLE_ASSIGN_OR_RETURN(void* p, place(host, n * sizeof(T), reads, true));
    return static_cast<T*>(p);
  }
  // After the op succeeded: its outputs into the host's memory.
  Status finish() {
    for (const Staged& s : staged_) {
      if (s.written && s.bytes > 0) CRUCIBLE_RETURN_IF_ERROR(backend_.download(s.host, s.buffer, s.bytes));
    }
    return Status::ok();
  }

 private:
  struct Staged {
    Buffer buffer;
    void* host = nullptr;
    std::size_t bytes = 0;
    bool written = false;
  };

  Result<void*> place(void* host, std::size_t bytes, bool upload, bool written) {
    if (backend_.memory() == Memory::kHost) return host;
    CRUCIBLE_ASSIGN_OR_RETURN(Buffer buffer, backend_.alloc(bytes));
    if (upload && bytes > 0) CRUCIBLE_RETURN_IF_ERROR(backend_.upload(buffer, host, bytes));
    void* p = buffer.data();
    staged_.push_back({std::move(buffer), host, bytes, written});
    return p;
  }

  Backend& backend_;
  std::vector<Staged> staged_;
};

bool same_layout(const BlockLayout& a, const BlockLayout& b) {
  return a.rows == b.rows && a.cols == b.cols && a.block_rows == b.block_rows && a.block_cols == b.block_cols &&
         a.k == b.k;
}

}  // namespace

Result<CompressedTensor> error_feedback_step(Backend& backend, std::span<float> ef, std::span<const float> delta,
                                             std::span<const std::int64_t> shape, float beta, int k_per_4096) {
  if (ef.size() != delta.size()) return invalid_argument("error feedback: buffer and delta differ in size");
  if (k_per_4096 < 2 || k_per_4096 > 4096)
    return invalid_argument("error feedback: k {} per 4096 not in [2, 4096]", k_per_4096);
  CompressedTensor c;
  CRUCIBLE_ASSIGN_OR_RETURN(c.layout, layout_for(shape, k_per_4096));
  if (static_cast<std::int64_t>(ef.size()) != c.layout.rows * c.layout.cols) {
    return invalid_argument("codec: {} values for the shape", ef.size());
  }
  const auto kept = static_cast<std::size_t>(c.layout.kept());
  c.indices.resize(kept);
  c.codes.resize(kept);
  Staging s(backend);
  CRUCIBLE_ASSIGN_OR_RETURN(float* e, s.output(ef.data(), ef.size(), /*reads=*/true));
  CRUCIBLE_ASSIGN_OR_RETURN(const float* d, s.input(delta.data(), delta.size()));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint16_t * indices, s.output(c.indices.data(), kept));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint8_t * codes, s.output(c.codes.data(), kept));
  CRUCIBLE_RETURN_IF_ERROR(backend.encode({e, d, beta, c.layout, indices, codes, &c.quant}));
  CRUCIBLE_RETURN_IF_ERROR(s.finish());
  return c;
}

Status decompress(Backend& backend, const CompressedTensor& c, std::span<float> out) {
  const BlockLayout& l = c.layout;
  if (static_cast<std::int64_t>(out.size()) != l.rows * l.cols) return invalid_argument("decode: wrong output size");
  if (static_cast<std::int64_t>(c.indices.size()) != l.kept() || c.codes.size() != c.indices.size()) {
    return data_loss("decode: {} entries, the layout keeps {}", c.indices.size(), l.kept());
  }
  Staging s(backend);
  CRUCIBLE_ASSIGN_OR_RETURN(const std::uint16_t* indices, s.input(c.indices.data(), c.indices.size()));
  CRUCIBLE_ASSIGN_OR_RETURN(const std::uint8_t* codes, s.input(c.codes.data(), c.codes.size()));
  CRUCIBLE_ASSIGN_OR_RETURN(float* dense, s.output(out.data(), out.size()));
  CRUCIBLE_RETURN_IF_ERROR(backend.decode({l, indices, codes, c.quant, dense}));
  return s.finish();
}

Status aggregate(Backend& backend, std::vector<PeerUpdate> peers, std::span<float> out) {
  if (peers.empty()) {
    std::fill(out.begin(), out.end(), 0.0f);
    return Status::ok();
  }
  const BlockLayout& l = peers[0].tensor->layout;
  if (static_cast<std::int64_t>(out.size()) != l.rows * l.cols) return invalid_argument("aggregate: wrong output size");
  const auto kept = static_cast<std::size_t>(l.kept());
  for (const PeerUpdate& p : peers) {
    if (!same_layout(p.tensor->layout, l)) return invalid_argument("aggregate: uid {} has another layout", p.uid);
    const CompressedTensor& t = *p.tensor;
    if (t.indices.size() != kept || t.codes.size() != kept) {
      return data_loss("aggregate: uid {} has {} entries, the layout keeps {}", p.uid, t.indices.size(), kept);
    }
  }
  std::vector<MergePeer> merge;
  Staging s(backend);
  // A device gets all peers' indices and codes in one upload each.
  std::vector<std::uint16_t> indices;
  std::vector<std::uint8_t> codes;
  const std::uint16_t* all_indices = nullptr;
  const std::uint8_t* all_codes = nullptr;
  if (backend.memory() != Memory::kHost) {
    indices.reserve(kept * peers.size());
    codes.reserve(kept * peers.size());
    for (const PeerUpdate& p : peers) {
      indices.insert(indices.end(), p.tensor->indices.begin(), p.tensor->indices.end());
      codes.insert(codes.end(), p.tensor->codes.begin(), p.tensor->codes.end());
    }
    CRUCIBLE_ASSIGN_OR_RETURN(all_indices, s.input(indices.data(), indices.size()));
    CRUCIBLE_ASSIGN_OR_RETURN(all_codes, s.input(codes.data(), codes.size()));
  }
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const CompressedTensor& t = *peers[i].tensor;
    if (all_indices != nullptr) {
      merge.push_back({peers[i].uid, all_indices + i * kept, all_codes + i * kept, t.quant});
    } else {
      merge.push_back({peers[i].uid, t.indices.data(), t.codes.data(), t.quant});
    }
  }
  CRUCIBLE_ASSIGN_OR_RETURN(float* dense, s.output(out.data(), out.size()));
  CRUCIBLE_RETURN_IF_ERROR(backend.merge({l, merge, dense}));
  return s.finish();
}

}  // namespace crucible::kernels
