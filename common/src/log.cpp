#include "crucible/common/log.h"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include <nlohmann/json.hpp>

#include "crucible/common/metrics.h"

namespace crucible::log {
namespace {

struct State {
  std::mutex mu;
  Sink sink;
  std::atomic<Level> level{Level::kInfo};
  std::atomic<Format> format{Format::kText};
};

State& state() {
  static State s;
  return s;
}

constexpr std::string_view kRedacted = "<redacted>";

std::string timestamp(std::int64_t ts_ms) {
  std::time_t secs = static_cast<std::time_t>(ts_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ts_ms % 1000);
}

// Control characters never reach a terminal raw: a peer-supplied string with a
// newline must not forge a log line.
std::string escape_text(std::string_view s, bool quote_if_needed) {
  bool needs_quotes = s.empty();
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
      needs_quotes = true;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      if (c == ' ' || c == '=') needs_quotes = true;
      out += c;
    }
  }
  if (quote_if_needed && needs_quotes) return "\"" + out + "\"";
  return out;
}

std::string text_value(const FieldValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return escape_text(x, true);
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else {
          return fmt::format("{}", x);
        }
      },
      v);
}

nlohmann::json json_value(const FieldValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

bool redact(const Field& f) { return f.redacted || is_secret_key(f.key); }

}  // namespace

std::string_view level_name(Level level) noexcept {
  switch (level) {
    case Level::kTrace:
      return "trace";
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    case Level::kOff:
      return "off";
  }
  return "?";
}

bool is_secret_key(std::string_view key) noexcept {
  // Whole words of the key, split at '.', '_' and '-': "tokens_per_s" is not a token.
  static constexpr std::string_view kWords[] = {"password",   "passphrase",  "secret",        "mnemonic", "token",
                                                "credential", "credentials", "authorization", "privkey"};
  std::size_t start = 0;
  std::string_view previous;
  while (start <= key.size()) {
    std::size_t end = key.find_first_of("._-", start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view word = key.substr(start, end - start);
    for (auto w : kWords) {
      if (word == w) return true;
    }
    if (previous == "private" && word == "key") return true;
    previous = word;
    start = end + 1;
  }
  return false;
}

std::string format_record(Format format, std::int64_t ts_ms, Level level, std::string_view msg, Fields fields) {
  if (format == Format::kJson) {
    nlohmann::json j = nlohmann::json::object();
    j["ts"] = timestamp(ts_ms);
    j["level"] = level_name(level);
    j["msg"] = msg;
    for (const Field& f : fields) {
      std::string key = f.key;
      if (key == "ts" || key == "level" || key == "msg") key = "field_" + key;
      j[key] = redact(f) ? nlohmann::json(kRedacted) : json_value(f.value);
    }
    // Peer data may hold invalid UTF-8: replace, never throw from a log call.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string level_text(level_name(level));
  for (char& c : level_text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string line = fmt::format("{} {:<5} {}", timestamp(ts_ms), level_text, escape_text(msg, false));
  for (const Field& f : fields) {
    line += fmt::format(" {}={}", escape_text(f.key, false), redact(f) ? std::string(kRedacted) : text_value(f.value));
  }
  return line + "\n";
}

void configure(const LogOptions& options, bool is_terminal) {
  State& s = state();
  s.level = options.level;
  Format f = options.format;
  if (f == Format::kAuto) f = is_terminal ? Format::kText : Format::kJson;
  s.format = f;
}

void set_sink(Sink sink) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.sink = std::move(sink);
}

Level level() noexcept { return state().level; }
Format format() noexcept { return state().format; }
bool enabled(Level l) noexcept { return l != Level::kOff && l >= state().level.load(); }

void write(Level l, std::string_view msg, Fields fields) {
  if (!enabled(l)) return;
  State& s = state();
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                 .count();
  std::string line = format_record(s.format, now, l, msg, fields);
  metrics::global().add(metrics::Counter::kLogRecords, 1, {{"level", std::string(level_name(l))}});
  std::lock_guard lock(s.mu);
  if (s.sink) {
    s.sink(line);
  } else {
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

}  // namespace crucible::log
