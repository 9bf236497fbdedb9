// A file built into the binary (cmake/embed_assets.cmake): the validator's
// dashboard is served from these, so a node needs nothing installed beside
// its executable.
#pragma once

#include <span>
#include <string_view>

namespace crucible {

struct EmbeddedAsset {
  std::string_view path;          // "/dashboard.js": where it is served
  std::string_view content_type;  // from its extension
  std::string_view bytes;
};

}  // namespace crucible
