// libFuzzer target for the safetensors reader (common/safetensors.h): a
// lead's checkpoint is a file a peer serves. Parsing must refuse bad input
// with a Status, never throw, over-read or allocate beyond the input; what
// it accepts must serialize to a file that parses to the same tensors.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "crucible/common/safetensors.h"

using namespace crucible;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// With CRUCIBLE_FUZZ_SEED_DIR set, a valid two-tensor file with metadata
// is written there, so the run starts from the real format.
void write_seed(const std::string& dir) {
  std::vector<float> a{1, 2, 3, 4, 5, 6};
  std::vector<std::uint8_t> b{1, 2, 3};
  std::vector<safetensors::TensorView> t{
      {"w", safetensors::DType::kF32, {2, 3}, ByteSpan(reinterpret_cast<const std::uint8_t*>(a.data()), 24)},
      {"b", safetensors::DType::kU8, {3}, ByteSpan(b.data(), b.size())}};
  auto bytes = safetensors::serialize(t, {{"window", "7"}});
  if (!bytes.is_ok()) return;
  std::ofstream(dir + "/seed.safetensors", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("CRUCIBLE_FUZZ_SEED_DIR")) write_seed(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  safetensors::Limits limits;
  limits.max_header_bytes = 1 << 16;
  limits.max_file_bytes = 1 << 20;
  limits.max_tensors = 256;
  auto file = safetensors::parse(Bytes(data, data + size), limits);
  if (!file.is_ok()) return 0;
  auto bytes = safetensors::serialize(file->tensors, file->metadata);
  check(bytes.is_ok());
  auto again = safetensors::parse(std::move(*bytes), limits);
  check(again.is_ok() && again->metadata == file->metadata && again->tensors.size() == file->tensors.size());
  for (std::size_t i = 0; i < file->tensors.size(); ++i) {
    const auto& x = file->tensors[i];
    const auto* y = again->find(x.name);
    check(y != nullptr && y->dtype == x.dtype && y->shape == x.shape && y->data.size() == x.data.size() &&
          (x.data.empty() || std::memcmp(y->data.data(), x.data.data(), x.data.size()) == 0));
  }
  return 0;
}
