// The safetensors file format (Hugging Face): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
// {str: str}} padded with spaces to a multiple of 8, then the raw
// little-endian tensor data. No torch here: tensors are named byte spans,
// so checkpoint files of any size can be checked without a model.
//
// Reading treats the file as untrusted: the header length, every dtype,
// shape and offset pair are checked against each other and the file size
// (tensors must tile the data area exactly) before anything is used.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "crucible/common/bytes.h"
#include "crucible/common/status.h"

namespace crucible::safetensors {

enum class DType : std::uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kU16, kI8, kU8, kBool };
std::string_view dtype_name(DType dtype) noexcept;  // "F32", ...
std::size_t dtype_size(DType dtype) noexcept;

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  ByteSpan data;  // exactly product(shape) * dtype_size bytes
};

using Metadata = std::map<std::string, std::string>;

// The file's bytes: header then data. Names must be unique and non-empty.
Result<Bytes> serialize(std::span<const TensorView> tensors, const Metadata& metadata = {});
// serialize() then an atomic write.
Status write_file(const std::filesystem::path& path, std::span<const TensorView> tensors,
                  const Metadata& metadata = {});

struct Limits {
  std::uint64_t max_header_bytes = 100ull << 20;  // the reference implementation's cap
  std::uint64_t max_file_bytes = 64ull << 30;
  std::size_t max_tensors = 1 << 20;
};

// A parsed file; views point into `bytes`, so it moves but never copies.
struct File {
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  File(File&&) = default;
  File& operator=(File&&) = default;

  Bytes bytes;
  Metadata metadata;
  std::vector<TensorView> tensors;  // in data-offset order
  const TensorView* find(std::string_view name) const;
};

Result<File> parse(Bytes bytes, const Limits& limits = {});
Result<File> read_file(const std::filesystem::path& path, const Limits& limits = {});

}  // namespace crucible::safetensors
