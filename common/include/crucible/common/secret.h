// A string that must never reach a log or a terminal by accident: passwords,
// private keys, storage secret keys. Formats as "<redacted>"; wiped on destruction.
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>

namespace crucible {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(const Secret&) = default;
  Secret& operator=(const Secret&) = default;
  Secret(Secret&&) = default;
  Secret& operator=(Secret&&) = default;
  ~Secret();

  // The only way to read it: a call that says so.
  const std::string& reveal() const noexcept { return value_; }
  bool empty() const noexcept { return value_.empty(); }

 private:
  std::string value_;
};

}  // namespace crucible

template <>
struct fmt::formatter<crucible::Secret> : fmt::formatter<std::string_view> {
  auto format(const crucible::Secret&, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format("<redacted>", ctx);
  }
};
