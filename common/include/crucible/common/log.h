// Logging: levels, human text on a terminal, JSON lines otherwise.
//
//   log::info("packet uploaded", {{"window", w}, {"bytes", n}});
//
// The message is plain text; facts go in fields so JSON consumers can read
// them. Fields whose key names a secret (password, secret, private_key, ...)
// and values wrapped in Secret are written as "<redacted>", whatever the format.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "crucible/common/secret.h"

namespace crucible::log {

enum class Level : std::uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kOff };
enum class Format : std::uint8_t { kAuto, kText, kJson };

std::string_view level_name(Level level) noexcept;  // "info"

struct LogOptions {
  Level level = Level::kInfo;
  Format format = Format::kAuto;  // auto: text on a terminal, JSON lines otherwise
};

using FieldValue = std::variant<std::int64_t, std::uint64_t, double, bool, std::string>;

struct Field {
  template <typename T>
  Field(std::string_view k, const T& v) : key(k), value(to_value(v)) {}

  std::string key;
  FieldValue value;
  bool redacted = false;

 private:
  template <typename T>
  FieldValue to_value(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      return v;
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      return static_cast<std::int64_t>(v);
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<std::uint64_t>(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<double>(v);
    } else if constexpr (std::is_same_v<T, Secret>) {
      redacted = true;
      return std::string("<redacted>");
    } else {
      return std::string(std::string_view(v));
    }
  }
};
using Fields = std::initializer_list<Field>;

// True when a field of this name must be redacted ("wallet.password", "aws_secret_key").
bool is_secret_key(std::string_view key) noexcept;

// Formats one record; exposed for tests. `ts_ms` is milliseconds since the epoch.
std::string format_record(Format format, std::int64_t ts_ms, Level level, std::string_view msg, Fields fields);

// Where formatted lines go (each ends in '\n'). Default: stderr.
using Sink = std::function<void(std::string_view line)>;

// Process-wide settings; call once from main. Format::kAuto resolves against
// whether `is_terminal` is true (main passes isatty(stderr)).
void configure(const LogOptions& options, bool is_terminal);
void set_sink(Sink sink);  // nullptr restores stderr
Level level() noexcept;
Format format() noexcept;
bool enabled(Level level) noexcept;

void write(Level level, std::string_view msg, Fields fields = {});
inline void trace(std::string_view msg, Fields fields = {}) { write(Level::kTrace, msg, fields); }
inline void debug(std::string_view msg, Fields fields = {}) { write(Level::kDebug, msg, fields); }
inline void info(std::string_view msg, Fields fields = {}) { write(Level::kInfo, msg, fields); }
inline void warn(std::string_view msg, Fields fields = {}) { write(Level::kWarn, msg, fields); }
inline void error(std::string_view msg, Fields fields = {}) { write(Level::kError, msg, fields); }

}  // namespace crucible::log
