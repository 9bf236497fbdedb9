#include "crucible/common/safetensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "crucible/common/file_io.h"

namespace crucible::safetensors {
namespace {

using nlohmann::json;

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};
constexpr std::array<DTypeInfo, 11> kDTypes{{
    {DType::kF32, "F32", 4},
    {DType::kF16, "F16", 2},
    {DType::kBF16, "BF16", 2},
    {DType::kF64, "F64", 8},
    {DType::kI64, "I64", 8},
    {DType::kI32, "I32", 4},
    {DType::kI16, "I16", 2},
    {DType::kU16, "U16", 2},
    {DType::kI8, "I8", 1},
    {DType::kU8, "U8", 1},
    {DType::kBool, "BOOL", 1},
}};

// Element count times dtype size, or an error on a negative dimension or overflow.
Result<std::uint64_t> byte_size(std::string_view name, const std::vector<std::int64_t>& shape, DType dtype) {
  std::uint64_t n = dtype_size(dtype);
  for (std::int64_t d : shape) {
    if (d < 0) return invalid_argument("safetensors: tensor '{}' has a negative dimension", name);
    if (d != 0 && n > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(d)) {
      return invalid_argument("safetensors: tensor '{}' is too large", name);
    }
    n *= static_cast<std::uint64_t>(d);
  }
  return n;
}

}  // namespace

std::string_view dtype_name(DType dtype) noexcept {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

std::size_t dtype_size(DType dtype) noexcept {
  for (const auto& d : kDTypes)
    if (d.dtype == dtype) return d.size;
  return 0;
}

const TensorView* File::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Result<Bytes> serialize(std::span<const TensorView> tensors, const Metadata& metadata) {
  json header = json::object();
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      return invalid_argument("safetensors: bad tensor name '{}'", t.name);
    if (!names.insert(t.name).second) return invalid_argument("safetensors: tensor '{}' twice", t.name);
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t n, byte_size(t.name, t.shape, t.dtype));
    if (n != t.data.size()) {
      return invalid_argument("safetensors: tensor '{}' has {} bytes, its shape needs {}", t.name, t.data.size(), n);
    }
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  Bytes out;
  out.reserve(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(text.size() >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

Status write_file(const std::filesystem::path& path, std::span<const TensorView> tensors, const Metadata& metadata) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, serialize(tensors, metadata));
  return files::write_file_atomic(path, bytes);
}

// One tensor's header entry: its dtype, shape and data offsets, checked
// against the data area of `bytes` (from data_start on).
static Result<TensorView> parse_entry(const std::string& name, const json& entry, const Bytes& bytes,
                                      std::uint64_t data_start) {
  const std::uint64_t data_size = bytes.size() - data_start;
  if (name.empty()) return data_loss("safetensors: a tensor has an empty name");
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets")) {
    return data_loss("safetensors: tensor '{}' lacks dtype, shape or data_offsets", name);
  }
  const json& dt = entry["dtype"];
  const json& shape = entry["shape"];
  const json& offsets = entry["data_offsets"];
  TensorView view;
  view.name = name;
  bool known = false;
  if (dt.is_string()) {
    for (const auto& d : kDTypes) {
      if (d.name == dt.get<std::string>()) {
        view.dtype = d.dtype;
        known = true;
      }
    }
  }
  if (!known) return data_loss("safetensors: tensor '{}' has an unknown dtype {}", name, dt.dump());
  if (!shape.is_array() || shape.size() > 16) return data_loss("safetensors: tensor '{}' has a bad shape", name);
  for (const auto& d : shape) {
    if (!d.is_number_unsigned()) return data_loss("safetensors: tensor '{}' has a bad dimension", name);
    view.shape.push_back(static_cast<std::int64_t>(std::min<std::uint64_t>(d.get<std::uint64_t>(), 1ull << 62)));
  }
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    return data_loss("safetensors: tensor '{}' has bad data_offsets", name);
  }
  auto lo = offsets[0].get<std::uint64_t>();
  auto hi = offsets[1].get<std::uint64_t>();
  if (lo > hi || hi > data_size) {
    return data_loss("safetensors: tensor '{}' data [{}, {}) lies outside the {}-byte data area", name, lo, hi,
                     data_size);
  }
  auto need = byte_size(name, view.shape, view.dtype);
  if (!need.is_ok()) return data_loss("{}", need.status().message());
  if (*need != hi - lo) {
    return data_loss("safetensors: tensor '{}' spans {} bytes, its shape needs {}", name, hi - lo, *need);
  }
  view.data = ByteSpan(bytes.data() + data_start + lo, hi - lo);
  return view;
}

Result<File> parse(Bytes bytes, const Limits& limits) {
  if (bytes.size() < 8) return data_loss("safetensors: {} bytes is too short for a header length", bytes.size());
  std::uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<std::uint64_t>(bytes[static_cast<std::size_t>(i)]) << (8 * i);
  if (header_len > limits.max_header_bytes) {
    return resource_exhausted("safetensors: header of {} bytes exceeds the cap of {}", header_len,
                              limits.max_header_bytes);
  }
  if (header_len > bytes.size() - 8) {
    return data_loss("safetensors: header of {} bytes runs past the end of a {}-byte file", header_len, bytes.size());
  }
  const auto* begin = reinterpret_cast<const char*>(bytes.data() + 8);
  json header = json::parse(begin, begin + header_len, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return data_loss("safetensors: the header is not a JSON object");
  const std::uint64_t data_start = 8 + header_len;

  File file;
  if (header.size() > limits.max_tensors + 1) return resource_exhausted("safetensors: too many tensors");
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) return data_loss("safetensors: __metadata__ is not an object");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string()) return data_loss("safetensors: metadata '{}' is not a string", m.key());
        file.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    CRUCIBLE_ASSIGN_OR_RETURN(TensorView view, parse_entry(name, entry, bytes, data_start));
    file.tensors.push_back(std::move(view));
  }
  // The tensors must tile the data area: no holes, no overlaps.
  std::sort(file.tensors.begin(), file.tensors.end(),
            [](const TensorView& a, const TensorView& b) { return a.data.data() < b.data.data(); });
  const std::uint8_t* cursor = bytes.data() + data_start;
  for (const auto& t : file.tensors) {
    if (t.data.data() != cursor) return data_loss("safetensors: tensor '{}' overlaps another or leaves a hole", t.name);
    cursor += t.data.size();
  }
  if (cursor != bytes.data() + bytes.size()) return data_loss("safetensors: bytes after the last tensor");
  file.bytes = std::move(bytes);  // the vector's buffer does not move, so the views stay valid
  return file;
}

Result<File> read_file(const std::filesystem::path& path, const Limits& limits) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, files::read_file(path, limits.max_file_bytes));
  auto file = parse(std::move(bytes), limits);
  if (!file.is_ok()) return file.status().with_context(path.string());
  return file;
}

}  // namespace crucible::safetensors
