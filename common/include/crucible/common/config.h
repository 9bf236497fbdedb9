// Config: TOML files -> plain option structs.
//
// A module describes its option struct by binding each field to a dotted key
// in a Schema (`bind_options(schema, opts)` next to the struct). A binary
// builds one Schema for everything it reads and calls load(), which applies,
// in increasing precedence: the struct's defaults, the TOML file, environment
// variables (CRUCIBLE_<KEY>, dots as underscores, upper case), then flags
// (`--set key=value` and the binary's shortcut flags). Unknown keys, wrong
// types and out-of-range values are errors that name the key and where it
// came from (file and line, variable, or flag). Libraries never read the
// environment: the binary passes it in.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "crucible/common/status.h"

namespace crucible::config {

using Value = std::variant<bool, std::int64_t, std::uint64_t, double, std::string, std::vector<std::string>>;

// kUint: unsigned 64-bit keys. TOML integers are signed, so values above
// 2^63 - 1 are written as a decimal string ("18446744073709551615").
enum class ValueType : std::uint8_t { kBool, kInt, kUint, kDouble, kString, kStringList };
std::string_view value_type_name(ValueType type) noexcept;  // "an integer", "a string", ...

// Where a value came from, for messages and `config show`.
struct Origin {
  enum class Kind : std::uint8_t { kDefault, kFile, kEnvironment, kFlag } kind = Kind::kDefault;
  std::string where;  // "miner.toml line 4", "CRUCIBLE_LOG_LEVEL", "--set", ""
  std::string describe() const;
};

struct Field {
  std::string key;
  ValueType type = ValueType::kString;
  std::string help;
  bool secret = false;                         // never printed by `config show`
  std::function<Status(const Value&)> assign;  // range/choice checks inside
  std::function<std::string()> render;         // current value as TOML text
};

class Schema {
 public:
  Schema() = default;
  Schema(const Schema&) = delete;
  Schema& operator=(const Schema&) = delete;
  Schema(Schema&&) = default;
  Schema& operator=(Schema&&) = default;

  Schema& add_bool(std::string key, bool* target, std::string help);

  template <typename Int>
  Schema& add_int(std::string key, Int* target, std::string help,
                  std::int64_t min = static_cast<std::int64_t>(std::numeric_limits<Int>::min()),
                  std::int64_t max = static_cast<std::int64_t>(std::numeric_limits<Int>::max())) {
    static_assert(std::is_integral_v<Int> && !std::is_same_v<Int, bool>);
    if constexpr (std::is_same_v<Int, std::uint64_t>) {
      return add_uint_field(
          std::move(key), std::move(help), static_cast<std::uint64_t>(min),
          max < 0 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(max),
          [target](std::uint64_t v) { *target = v; }, [target] { return *target; });
    }
    return add_int_field(
        std::move(key), std::move(help), min, max, [target](std::int64_t v) { *target = static_cast<Int>(v); },
        [target] { return static_cast<std::int64_t>(*target); });
  }

  // Finite doubles within [min, max].
  Schema& add_double(std::string key, double* target, std::string help,
                     double min = -std::numeric_limits<double>::max(), double max = std::numeric_limits<double>::max());

  // Strings; a non-empty `choices` restricts the value to one of them.
  Schema& add_string(std::string key, std::string* target, std::string help, std::vector<std::string> choices = {});
  Schema& add_secret(std::string key, std::string* target, std::string help);
  Schema& add_string_list(std::string key, std::vector<std::string>* target, std::string help);

  // An enum spelled as one of the given names in the file.
  template <typename Enum>
  Schema& add_enum(std::string key, Enum* target, std::string help, std::vector<std::pair<std::string, Enum>> names) {
    auto shared = std::make_shared<std::vector<std::pair<std::string, Enum>>>(std::move(names));
    std::vector<std::string> choices;
    for (const auto& [name, value] : *shared) choices.push_back(name);
    return add_choice_field(
        std::move(key), std::move(help), std::move(choices),
        [target, shared](const std::string& name) {
          for (const auto& [n, v] : *shared)
            if (n == name) *target = v;
        },
        [target, shared] {
          for (const auto& [n, v] : *shared)
            if (v == *target) return n;
          return std::string("?");
        });
  }

  // A key this program no longer reads: setting it (in a file, the
  // environment or a flag) is an error that says `why` (what replaced it),
  // where an unknown key would only be called unknown.
  Schema& retire(std::string key, std::string why);
  const std::string* retired(std::string_view key) const;  // its `why`, or null
  const std::vector<std::pair<std::string, std::string>>& retired_keys() const noexcept { return retired_; }

  const Field* find(std::string_view key) const;
  // Drops every field whose key `keep` refuses (a schema for a subset of a
  // struct's keys, e.g. a network manifest's).
  void retain(const std::function<bool(std::string_view key)>& keep);
  bool has_section(std::string_view dotted_prefix) const;  // "miner" or "validator.api"
  const std::vector<Field>& fields() const noexcept { return fields_; }

  // The closest known key to `key`, if one is near enough to suggest.
  std::optional<std::string> suggest(std::string_view key) const;

  // Environment variable name for a key: "log.level" -> "CRUCIBLE_LOG_LEVEL".
  static std::string env_name(std::string_view key);

 private:
  Schema& add_field(Field field);
  Schema& add_int_field(std::string key, std::string help, std::int64_t min, std::int64_t max,
                        std::function<void(std::int64_t)> set, std::function<std::int64_t()> get);
  Schema& add_uint_field(std::string key, std::string help, std::uint64_t min, std::uint64_t max,
                         std::function<void(std::uint64_t)> set, std::function<std::uint64_t()> get);
  Schema& add_choice_field(std::string key, std::string help, std::vector<std::string> choices,
                           std::function<void(const std::string&)> set, std::function<std::string()> get);

  std::vector<Field> fields_;
  std::vector<std::pair<std::string, std::string>> retired_;  // key, why
};

// One command-line override: `--set key=text`, or a shortcut flag such as --log-level.
struct FlagValue {
  std::string key;
  std::string text;
  std::string flag;  // how the user spelled it, for messages; "" means "--set <key>"
};

struct LoadInputs {
  std::vector<std::string> files;                  // TOML files, applied in order (later wins)
  std::map<std::string, std::string> environment;  // usually the process's
  std::vector<FlagValue> flags;                    // in command-line order; later wins
};

// Where each key's current value came from, filled by load().
using Origins = std::map<std::string, Origin>;

// Fills the bound structs. On failure returns invalid_argument (or not_found
// for a missing file) whose message lists every problem, one per line; the
// structs may then be partly filled and must not be used.
Status load(const Schema& schema, const LoadInputs& inputs, Origins* origins = nullptr);

// Parses `text` as a value of `type` (for environment variables and flags).
Result<Value> parse_text(ValueType type, std::string_view text);

// Copies the CRUCIBLE_* variables of `envp` (as passed to main) into a map.
std::map<std::string, std::string> crucible_environment(char** envp);

}  // namespace crucible::config
