// libFuzzer target for the dataset manifest (dataset.json, common/dataset.h):
// parse_manifest must refuse anything but a well-formed crucible-tokens-v1
// manifest with a Status, never throw or crash, and what it accepts must be
// whole: plain shard names and token counts that add up.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "crucible/common/dataset.h"

using namespace crucible;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto info = data::parse_manifest(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!info.is_ok()) return 0;
  for (const auto& [name, split] : info->splits) {
    std::uint64_t tokens = 0;
    for (const auto& shard : split.shards) {
      if (shard.file.empty() || shard.file.find('/') != std::string::npos || shard.file[0] == '.') std::abort();
      tokens += shard.tokens;
    }
    if (tokens != split.tokens) std::abort();
  }
  return 0;
}
