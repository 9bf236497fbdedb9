#include "crucible/protocol/object_keys.h"

#include <charconv>

namespace crucible::protocol::keys {

std::optional<std::uint64_t> aggregate_window(std::string_view key) {
  const std::string p = aggregate_prefix();
  if (!key.starts_with(p) || !key.ends_with(".json")) return std::nullopt;
  std::string_view digits = key.substr(p.size(), key.size() - p.size() - 5);
  if (digits.empty() || digits.size() > 20 || (digits.size() > 1 && digits.front() == '0')) return std::nullopt;
  std::uint64_t w = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), w);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return w;
}

}  // namespace crucible::protocol::keys
