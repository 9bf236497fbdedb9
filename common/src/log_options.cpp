#include "crucible/common/log_options.h"

#include <fmt/ranges.h>

namespace crucible::log {
namespace {

const std::vector<std::pair<std::string, Level>>& level_names() {
  static const std::vector<std::pair<std::string, Level>> names = {{"trace", Level::kTrace}, {"debug", Level::kDebug},
                                                                   {"info", Level::kInfo},   {"warn", Level::kWarn},
                                                                   {"error", Level::kError}, {"off", Level::kOff}};
  return names;
}

const std::vector<std::pair<std::string, Format>>& format_names() {
  static const std::vector<std::pair<std::string, Format>> names = {
      {"auto", Format::kAuto}, {"text", Format::kText}, {"json", Format::kJson}};
  return names;
}

template <typename E>
Result<E> parse_name(const std::vector<std::pair<std::string, E>>& names, std::string_view name,
                     std::string_view what) {
  std::vector<std::string> choices;
  for (const auto& [n, v] : names) {
    if (n == name) return v;
    choices.push_back(n);
  }
  return invalid_argument("unknown log {} '{}' (one of: {})", what, name, fmt::join(choices, ", "));
}

}  // namespace

void bind_options(config::Schema& schema, LogOptions& options) {
  schema.add_enum("log.level", &options.level, "Least severe level written.", level_names());
  schema.add_enum("log.format", &options.format, "auto: human text on a terminal, JSON lines otherwise; or text, json.",
                  format_names());
}

Result<Level> parse_level(std::string_view name) { return parse_name(level_names(), name, "level"); }
Result<Format> parse_format(std::string_view name) { return parse_name(format_names(), name, "format"); }

}  // namespace crucible::log
