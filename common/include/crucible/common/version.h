// Build identity, for --version, logs and the crucible_build_info metric.
#pragma once

#include <string>
#include <string_view>

namespace crucible {

std::string_view project_version() noexcept;  // "0.1.0", from CMake's project()
std::string_view git_describe() noexcept;     // "v0.1.0-3-gabc1234" or "" outside a checkout

// "crucible-miner 0.1.0 (git v0.1.0-3-gabc1234)"
std::string version_line(std::string_view program);

}  // namespace crucible
