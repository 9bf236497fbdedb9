#include "crucible/common/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

namespace crucible::config {
namespace {

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string render_double(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eE") == std::string::npos && s.find_first_of("ni") == std::string::npos) s += ".0";
  return s;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// One problem found while loading; they are reported together.
class Problems {
 public:
  void add(std::string message) { lines_.push_back(std::move(message)); }
  bool empty() const { return lines_.empty(); }
  Status to_status() const { return invalid_argument("{}", fmt::join(lines_, "\n")); }

 private:
  std::vector<std::string> lines_;
};

// Converts a TOML node to the Value the field wants, or says why it cannot.
Result<Value> from_toml(const toml::node& node, ValueType want) {
  switch (want) {
    case ValueType::kBool:
      if (auto v = node.value_exact<bool>()) return Value(*v);
      break;
    case ValueType::kInt:
      if (auto v = node.value_exact<std::int64_t>()) return Value(*v);
      break;
    case ValueType::kUint:
      if (auto v = node.value_exact<std::int64_t>()) {
        if (*v < 0) return out_of_range("value {} is negative", *v);
        return Value(static_cast<std::uint64_t>(*v));
      }
      if (auto v = node.value_exact<std::string>()) return parse_text(ValueType::kUint, *v);
      break;
    case ValueType::kDouble:
      if (node.is_floating_point()) return Value(*node.value_exact<double>());
      if (auto v = node.value_exact<std::int64_t>()) return Value(static_cast<double>(*v));
      break;
    case ValueType::kString:
      if (auto v = node.value_exact<std::string>()) return Value(*v);
      break;
    case ValueType::kStringList:
      if (const auto* arr = node.as_array()) {
        std::vector<std::string> out;
        for (const auto& item : *arr) {
          auto s = item.value_exact<std::string>();
          if (!s) return invalid_argument("expected {}, got an array with a non-string item", value_type_name(want));
          out.push_back(*s);
        }
        return Value(std::move(out));
      }
      break;
  }
  std::string got;
  switch (node.type()) {
    case toml::node_type::table:
      got = "a table";
      break;
    case toml::node_type::array:
      got = "an array";
      break;
    case toml::node_type::string:
      got = "a string";
      break;
    case toml::node_type::integer:
      got = "an integer";
      break;
    case toml::node_type::floating_point:
      got = "a float";
      break;
    case toml::node_type::boolean:
      got = "a boolean";
      break;
    default:
      got = "a date/time";
      break;
  }
  return invalid_argument("expected {}, got {}", value_type_name(want), got);
}

void assign(const Schema& schema, std::string_view key, Result<Value> value, const Origin& origin, Problems& problems,
            Origins* origins) {
  const Field* field = schema.find(key);
  if (field == nullptr) {
    if (const std::string* why = schema.retired(key)) {
      problems.add(fmt::format("key '{}' in {} is no longer read: {}", key, origin.describe(), *why));
      return;
    }
    std::string hint;
    if (auto near = schema.suggest(key)) hint = fmt::format(" (did you mean '{}'?)", *near);
    problems.add(fmt::format("unknown key '{}' in {}{}", key, origin.describe(), hint));
    return;
  }
  Status st = value.is_ok() ? field->assign(value.value()) : value.status();
  if (!st.is_ok()) {
    problems.add(fmt::format("key '{}' in {}: {}", key, origin.describe(), st.message()));
    return;
  }
  if (origins != nullptr) (*origins)[std::string(key)] = origin;
}

void walk_table(const Schema& schema, const toml::table& table, const std::string& prefix, const std::string& file,
                Problems& problems, Origins* origins) {
  for (const auto& [k, node] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    Origin origin{Origin::Kind::kFile, fmt::format("{} line {}", file, node.source().begin.line)};
    if (node.is_table() && schema.find(key) == nullptr) {
      if (!schema.has_section(key)) {
        std::string hint;
        if (auto near = schema.suggest(key)) hint = fmt::format(" (did you mean '{}'?)", *near);
        problems.add(fmt::format("unknown section '{}' in {}{}", key, origin.describe(), hint));
        continue;
      }
      walk_table(schema, *node.as_table(), key, file, problems, origins);
      continue;
    }
    const Field* field = schema.find(key);
    Result<Value> value = field ? from_toml(node, field->type) : Result<Value>(Value(false));
    assign(schema, key, std::move(value), origin, problems, origins);
  }
}

}  // namespace

std::string_view value_type_name(ValueType type) noexcept {
  switch (type) {
    case ValueType::kBool:
      return "a boolean";
    case ValueType::kInt:
      return "an integer";
    case ValueType::kUint:
      return "a non-negative integer";
    case ValueType::kDouble:
      return "a number";
    case ValueType::kString:
      return "a string";
    case ValueType::kStringList:
      return "an array of strings";
  }
  return "?";
}

std::string Origin::describe() const {
  switch (kind) {
    case Kind::kDefault:
      return "the defaults";
    case Kind::kFile:
      return where;
    case Kind::kEnvironment:
      return "environment variable " + where;
    case Kind::kFlag:
      return "flag " + where;
  }
  return where;
}

Schema& Schema::add_field(Field field) {
  if (find(field.key) != nullptr) {
    throw std::logic_error("config key bound twice: " + field.key);
  }
  if (retired(field.key) != nullptr) throw std::logic_error("config key is both retired and bound: " + field.key);
  for (const Field& f : fields_) {
    if (env_name(f.key) == env_name(field.key)) {
      throw std::logic_error("config keys share an environment name: " + f.key + ", " + field.key);
    }
  }
  fields_.push_back(std::move(field));
  return *this;
}

Schema& Schema::add_bool(std::string key, bool* target, std::string help) {
  Field f;
  f.key = std::move(key);
  f.type = ValueType::kBool;
  f.help = std::move(help);
  f.assign = [target](const Value& v) {
    *target = std::get<bool>(v);
    return Status::ok();
  };
  f.render = [target] { return std::string(*target ? "true" : "false"); };
  return add_field(std::move(f));
}

Schema& Schema::add_int_field(std::string key, std::string help, std::int64_t min, std::int64_t max,
                              std::function<void(std::int64_t)> set, std::function<std::int64_t()> get) {
  Field f;
  f.key = std::move(key);
  f.type = ValueType::kInt;
  f.help = std::move(help);
  f.assign = [min, max, set = std::move(set)](const Value& v) {
    std::int64_t x = std::get<std::int64_t>(v);
    if (x < min || x > max) return out_of_range("value {} is out of range [{}, {}]", x, min, max);
    set(x);
    return Status::ok();
  };
  f.render = [get = std::move(get)] { return std::to_string(get()); };
  return add_field(std::move(f));
}

Schema& Schema::add_uint_field(std::string key, std::string help, std::uint64_t min, std::uint64_t max,
                               std::function<void(std::uint64_t)> set, std::function<std::uint64_t()> get) {
  Field f;
  f.key = std::move(key);
  f.type = ValueType::kUint;
  f.help = std::move(help);
  f.assign = [min, max, set = std::move(set)](const Value& v) {
    std::uint64_t x = std::get<std::uint64_t>(v);
    if (x < min || x > max) return out_of_range("value {} is out of range [{}, {}]", x, min, max);
    set(x);
    return Status::ok();
  };
  f.render = [get = std::move(get)] {
    // Above 2^63 - 1 a TOML integer cannot hold it: rendered as a string.
    const std::uint64_t v = get();
    return v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? "\"" + std::to_string(v) + "\""
                                                                                    : std::to_string(v);
  };
  return add_field(std::move(f));
}

Schema& Schema::add_double(std::string key, double* target, std::string help, double min, double max) {
  Field f;
  f.key = std::move(key);
  f.type = ValueType::kDouble;
  f.help = std::move(help);
  f.assign = [target, min, max](const Value& v) {
    double x = std::get<double>(v);
    if (!std::isfinite(x)) return out_of_range("value {} is not a finite number", x);
    if (x < min || x > max) return out_of_range("value {} is out of range [{}, {}]", x, min, max);
    *target = x;
    return Status::ok();
  };
  f.render = [target] { return render_double(*target); };
  return add_field(std::move(f));
}

Schema& Schema::add_choice_field(std::string key, std::string help, std::vector<std::string> choices,
                                 std::function<void(const std::string&)> set, std::function<std::string()> get) {
  Field f;
  f.key = std::move(key);
  f.type = ValueType::kString;
  f.help = std::move(help);
  f.assign = [choices = std::move(choices), set = std::move(set)](const Value& v) {
    const auto& s = std::get<std::string>(v);
    if (!choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end()) {
      return out_of_range("value '{}' is not one of: {}", s, fmt::join(choices, ", "));
    }
    set(s);
    return Status::ok();
  };
  f.render = [get = std::move(get)] { return quote(get()); };
  return add_field(std::move(f));
}

Schema& Schema::add_string(std::string key, std::string* target, std::string help, std::vector<std::string> choices) {
  return add_choice_field(
      std::move(key), std::move(help), std::move(choices), [target](const std::string& s) { *target = s; },
      [target] { return *target; });
}

Schema& Schema::add_secret(std::string key, std::string* target, std::string help) {
  add_string(std::move(key), target, std::move(help));
  fields_.back().secret = true;
  return *this;
}

Schema& Schema::add_string_list(std::string key, std::vector<std::string>* target, std::string help) {
  Field f;
  f.key = std::move(key);
  f.type = ValueType::kStringList;
  f.help = std::move(help);
  f.assign = [target](const Value& v) {
    *target = std::get<std::vector<std::string>>(v);
    return Status::ok();
  };
  f.render = [target] {
    std::vector<std::string> quoted;
    for (const auto& s : *target) quoted.push_back(quote(s));
    return fmt::format("[{}]", fmt::join(quoted, ", "));
  };
  return add_field(std::move(f));
}

void Schema::retain(const std::function<bool(std::string_view key)>& keep) {
  std::erase_if(fields_, [&](const Field& f) { return !keep(f.key); });
  std::erase_if(retired_, [&](const auto& r) { return !keep(r.first); });
}

Schema& Schema::retire(std::string key, std::string why) {
  if (find(key) != nullptr) throw std::logic_error("config key is both bound and retired: " + key);
  retired_.emplace_back(std::move(key), std::move(why));
  return *this;
}

const std::string* Schema::retired(std::string_view key) const {
  for (const auto& [k, why] : retired_) {
    if (k == key) return &why;
  }
  return nullptr;
}

const Field* Schema::find(std::string_view key) const {
  for (const Field& f : fields_) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

bool Schema::has_section(std::string_view prefix) const {
  for (const Field& f : fields_) {
    if (f.key.size() > prefix.size() && f.key.compare(0, prefix.size(), prefix) == 0 && f.key[prefix.size()] == '.') {
      return true;
    }
  }
  return false;
}

std::optional<std::string> Schema::suggest(std::string_view key) const {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, key.size() / 4) + 1;
  for (const Field& f : fields_) {
    std::size_t d = edit_distance(key, f.key);
    if (d < best_distance) {
      best_distance = d;
      best = f.key;
    }
  }
  return best;
}

std::string Schema::env_name(std::string_view key) {
  std::string out = "CRUCIBLE_";
  for (char c : key) {
    out += (c == '.' || c == '-') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

Result<Value> parse_text(ValueType type, std::string_view text) {
  switch (type) {
    case ValueType::kBool: {
      std::string lower(text);
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") return Value(true);
      if (lower == "false" || lower == "0" || lower == "no" || lower == "off") return Value(false);
      return invalid_argument("expected a boolean (true/false), got '{}'", text);
    }
    case ValueType::kInt: {
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec == std::errc::result_out_of_range) return out_of_range("value '{}' does not fit in 64 bits", text);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
        return invalid_argument("expected an integer, got '{}'", text);
      }
      return Value(v);
    }
    case ValueType::kUint: {
      std::uint64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec == std::errc::result_out_of_range) return out_of_range("value '{}' does not fit in 64 bits", text);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
        return invalid_argument("expected a non-negative integer, got '{}'", text);
      }
      return Value(v);
    }
    case ValueType::kDouble: {
      std::string copy(text);
      char* end = nullptr;
      errno = 0;
      double v = std::strtod(copy.c_str(), &end);
      if (copy.empty() || end != copy.c_str() + copy.size() || errno == ERANGE) {
        return invalid_argument("expected a number, got '{}'", text);
      }
      return Value(v);
    }
    case ValueType::kString:
      return Value(std::string(text));
    case ValueType::kStringList: {
      std::vector<std::string> items;
      std::size_t start = 0;
      while (start <= text.size() && !text.empty()) {
        std::size_t comma = text.find(',', start);
        if (comma == std::string_view::npos) comma = text.size();
        items.emplace_back(text.substr(start, comma - start));
        start = comma + 1;
      }
      return Value(std::move(items));
    }
  }
  return internal_error("unknown value type");
}

namespace {

constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;

// TOML allows characters beyond ASCII only inside strings and comments,
// and control characters (but tab) nowhere. Both are refused here, before
// toml++ sees them: toml++ 3.3 (Debian's) reaches __builtin_unreachable
// (undefined behaviour) classifying some non-ASCII characters as whitespace
// or not (e.g. U+FEF9 in a table header; a NUL that makes it scan
// a bad value on into a string's characters; found by
// tests/fuzz/config_fuzz.cpp).
Status check_non_ascii_placement(std::string_view text, const std::string& path) {
  std::size_t line = 1, column = 1;
  std::string_view quote;  // the open string's delimiter, empty outside one
  bool comment = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const std::string_view rest = text.substr(i);
    if (c == '\n') {
      ++line;
      column = 1;
      comment = false;
      if (quote == "\"" || quote == "'") quote = {};  // unterminated: toml++ reports it
      continue;
    }
    ++column;
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t' && c != '\r') || u == 0x7f) {
      return invalid_argument("{} line {} column {}: TOML syntax error: control character 0x{:02x}", path, line,
                              column - 1, u);
    }
    if (comment) continue;
    if (!quote.empty()) {
      if ((quote == "\"" || quote == "\"\"\"") && c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
        ++i;  // an escape: the next character is the string's
        ++column;
      } else if (rest.starts_with(quote)) {
        i += quote.size() - 1;
        quote = {};
      }
      continue;
    }
    if (c == '#') {
      comment = true;
    } else if (c == '"' || c == '\'') {
      const std::string_view triple = c == '"' ? "\"\"\"" : "'''";
      quote = rest.starts_with(triple) ? triple : rest.substr(0, 1);
      i += quote.size() - 1;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      return invalid_argument(
          "{} line {} column {}: TOML syntax error: a character beyond ASCII outside a string or comment", path, line,
          column - 1);
    }
  }
  return Status::ok();
}

// The file's text, at most kMaxConfigBytes, checked as above.
Result<std::string> read_config_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return not_found("config file '{}' does not exist or is not a regular file", path);
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return not_found("config file '{}': {}", path, ec.message());
  if (size > kMaxConfigBytes) return invalid_argument("config file '{}' is over {} bytes", path, kMaxConfigBytes);
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return not_found("config file '{}' could not be read", path);
  CRUCIBLE_RETURN_IF_ERROR(check_non_ascii_placement(text, path));
  return text;
}

}  // namespace

Status load(const Schema& schema, const LoadInputs& inputs, Origins* origins) {
  Problems problems;

  for (const std::string& path : inputs.files) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::string text, read_config_text(path));
    toml::table table;
    try {
      table = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
      return invalid_argument("{} line {} column {}: TOML syntax error: {}", path, e.source().begin.line,
                              e.source().begin.column, e.description());
    }
    walk_table(schema, table, "", path, problems, origins);
  }

  // Environment: only names that some key maps to are read; others are not ours to judge.
  for (const Field& field : schema.fields()) {
    std::string name = Schema::env_name(field.key);
    auto it = inputs.environment.find(name);
    if (it == inputs.environment.end()) continue;
    assign(schema, field.key, parse_text(field.type, it->second), Origin{Origin::Kind::kEnvironment, name}, problems,
           origins);
  }
  for (const auto& [key, why] : schema.retired_keys()) {
    std::string name = Schema::env_name(key);
    if (inputs.environment.count(name) != 0) {
      assign(schema, key, Value(false), Origin{Origin::Kind::kEnvironment, name}, problems, origins);
    }
  }

  for (const FlagValue& flag : inputs.flags) {
    const Field* field = schema.find(flag.key);
    Result<Value> value = field ? parse_text(field->type, flag.text) : Result<Value>(Value(false));
    std::string name = flag.flag.empty() ? "--set " + flag.key : flag.flag;
    assign(schema, flag.key, std::move(value), Origin{Origin::Kind::kFlag, name}, problems, origins);
  }

  if (!problems.empty()) return problems.to_status();
  if (origins != nullptr) {
    for (const Field& f : schema.fields()) origins->try_emplace(f.key, Origin{});
  }
  return Status::ok();
}

std::map<std::string, std::string> crucible_environment(char** envp) {
  std::map<std::string, std::string> out;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.rfind("CRUCIBLE_", 0) != 0) continue;
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return out;
}

}  // namespace crucible::config
