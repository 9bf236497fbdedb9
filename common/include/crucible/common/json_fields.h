// Strict, typed reading of a JSON object's fields: the one way every record
// a node wrote (validator state, miner state, dataset manifests) is read
// back. A missing field, one of another type, or a number that does not fit
// the type asked for is an error naming the field, never a default and never
// an exception (nlohmann's get<T> throws on a type and silently narrows a
// number).
//
//   JsonFields f(j, "score record");
//   s.mu = f.get<double>("mu");
//   s.last = f.opt<std::uint64_t>("last_evaluated");  // absent or null: nullopt
//   if (!f.ok()) return f.status();                    // data_loss: "score record: field 'mu' is missing"
//
// After the first error every read returns T{} and the first error stays.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "crucible/common/status.h"

namespace crucible {

class JsonFields {
 public:
  JsonFields(const nlohmann::json& j, std::string what) : j_(j), what_(std::move(what)) {
    if (!j_.is_object()) error_ = "not a JSON object";
  }

  bool ok() const { return error_.empty(); }
  // What went wrong, without `what` (for callers with their own status).
  const std::string& error() const { return error_; }
  Status status() const { return ok() ? Status::ok() : data_loss("{}: {}", what_, error_); }

  // Present and not null.
  bool has(const char* k) const { return j_.is_object() && j_.contains(k) && !j_[k].is_null(); }

  // A required field.
  template <typename T>
  T get(const char* k) {
    if (!ok()) return T{};
    if (!has(k)) return fail<T>(k, "missing");
    std::optional<T> v = convert<T>(j_[k]);
    if (!v) return fail<T>(k, "of the wrong type or out of range");
    return *v;
  }
  // Absent or null: nullopt; present: as get.
  template <typename T>
  std::optional<T> opt(const char* k) {
    if (!has(k)) return std::nullopt;
    T v = get<T>(k);
    return ok() ? std::optional<T>(std::move(v)) : std::nullopt;
  }
  // Absent or null: `fallback`; present: as get.
  template <typename T>
  T get_or(const char* k, T fallback) {
    if (!has(k)) return fallback;
    return get<T>(k);
  }

  // A check of the caller's own (a bound, a format): records the first error.
  void check(bool condition, const char* k, std::string_view why) {
    if (ok() && !condition) error_ = fmt::format("field '{}' {}", k, why);
  }

 private:
  template <typename T>
  struct is_vector : std::false_type {};
  template <typename E>
  struct is_vector<std::vector<E>> : std::true_type {};

  template <typename T>
  static std::optional<T> convert(const nlohmann::json& v) {
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) return std::nullopt;
      return v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      if (v.is_number_unsigned()) {
        const auto x = v.get<std::uint64_t>();
        if (x > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
        return static_cast<T>(x);
      }
      if (v.is_number_integer()) {  // negative
        const auto x = v.get<std::int64_t>();
        if constexpr (std::is_unsigned_v<T>) {
          return std::nullopt;
        } else {
          if (x < static_cast<std::int64_t>(std::numeric_limits<T>::min())) return std::nullopt;
          return static_cast<T>(x);
        }
      }
      return std::nullopt;
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) return std::nullopt;
      return v.get<T>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) return std::nullopt;
      return v.get<std::string>();
    } else if constexpr (is_vector<T>::value) {
      if (!v.is_array()) return std::nullopt;
      T out;
      out.reserve(v.size());
      for (const auto& e : v) {
        auto x = convert<typename T::value_type>(e);
        if (!x) return std::nullopt;
        out.push_back(std::move(*x));
      }
      return out;
    } else {
      try {
        return v.get<T>();
      } catch (const nlohmann::json::exception&) {
        return std::nullopt;
      }
    }
  }

  template <typename T>
  T fail(const char* k, const char* why) {
    error_ = fmt::format("field '{}' is {}", k, why);
    return T{};
  }

  const nlohmann::json& j_;
  std::string what_;
  std::string error_;
};

}  // namespace crucible
