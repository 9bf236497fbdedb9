// The error type used at every module boundary, in the spirit of RocksDB's
// Status and absl::StatusOr: a code a caller can branch on plus a message that
// names the offending input. Both are [[nodiscard]], so an ignored error is a
// compile error under -Werror.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace crucible {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,     // the input is malformed, whatever the state
  kNotFound,            // a key, file or object does not exist
  kAlreadyExists,       // create refused: it is there already
  kPermissionDenied,    // the caller is known but not allowed (file mode, 403)
  kUnauthenticated,     // credentials or signature are wrong
  kResourceExhausted,   // a size cap, a quota, disk full
  kFailedPrecondition,  // the system is not in the state the call needs
  kOutOfRange,          // a value outside its allowed range
  kDeadlineExceeded,    // the call ran past its deadline
  kUnavailable,         // transient: worth retrying (5xx, reset, refused)
  kDataLoss,            // stored or received bytes are corrupt or truncated
  kUnimplemented,       // not supported (an unknown version, say)
  kAborted,             // interrupted (shutdown requested, conflict)
  kInternal,            // an invariant broke: a bug
};

// Stable lower-case name of a code ("invalid_argument"), used in logs and JSON.
std::string_view status_code_name(StatusCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(StatusCode code, std::string message);

  static Status ok() noexcept { return {}; }

  bool is_ok() const noexcept { return code_ == StatusCode::kOk; }
  explicit operator bool() const noexcept { return is_ok(); }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // True for failures that a retry may cure (unavailable, deadline exceeded).
  bool is_transient() const noexcept;

  // "invalid_argument: key 'x' ..." — or "ok".
  std::string to_string() const;

  // Returns a copy whose message is "context: original message"; the code is kept.
  Status with_context(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) noexcept {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& out, const Status& status);

// Thrown by Result<T>::value() when the result holds an error: reading a
// value that is not there is a bug in the caller, never a peer's doing.
class BadResultAccess : public std::logic_error {
 public:
  explicit BadResultAccess(const Status& status);
};

// Either a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(state_).is_ok()) {
      state_ = Status(StatusCode::kInternal, "Result constructed from an ok Status without a value");
    }
  }

  bool is_ok() const noexcept { return std::holds_alternative<T>(state_); }
  explicit operator bool() const noexcept { return is_ok(); }

  const Status& status() const noexcept {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(state_);
  }

  T& value() & {
    check();
    return std::get<T>(state_);
  }
  const T& value() const& {
    check();
    return std::get<T>(state_);
  }
  T&& value() && {
    check();
    return std::get<T>(std::move(state_));
  }
  T value_or(T fallback) const& { return is_ok() ? std::get<T>(state_) : std::move(fallback); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void check() const {
    if (!is_ok()) throw BadResultAccess(std::get<Status>(state_));
  }
  std::variant<T, Status> state_;
};

// Builders that format their message with fmt: invalid_argument("bad key '{}'", k).
#define CRUCIBLE_STATUS_BUILDER(fn, code)                                              \
  template <typename... Args>                                                          \
  Status fn(fmt::format_string<Args...> format, Args&&... args) {                      \
    return Status(StatusCode::code, fmt::format(format, std::forward<Args>(args)...)); \
  }
CRUCIBLE_STATUS_BUILDER(invalid_argument, kInvalidArgument)
CRUCIBLE_STATUS_BUILDER(not_found, kNotFound)
CRUCIBLE_STATUS_BUILDER(already_exists, kAlreadyExists)
CRUCIBLE_STATUS_BUILDER(permission_denied, kPermissionDenied)
CRUCIBLE_STATUS_BUILDER(unauthenticated, kUnauthenticated)
CRUCIBLE_STATUS_BUILDER(resource_exhausted, kResourceExhausted)
CRUCIBLE_STATUS_BUILDER(failed_precondition, kFailedPrecondition)
CRUCIBLE_STATUS_BUILDER(out_of_range, kOutOfRange)
CRUCIBLE_STATUS_BUILDER(deadline_exceeded, kDeadlineExceeded)
CRUCIBLE_STATUS_BUILDER(unavailable, kUnavailable)
CRUCIBLE_STATUS_BUILDER(data_loss, kDataLoss)
CRUCIBLE_STATUS_BUILDER(unimplemented, kUnimplemented)
CRUCIBLE_STATUS_BUILDER(aborted, kAborted)
CRUCIBLE_STATUS_BUILDER(internal_error, kInternal)
#undef CRUCIBLE_STATUS_BUILDER

}  // namespace crucible

#define CRUCIBLE_CONCAT_INNER(a, b) a##b
#define CRUCIBLE_CONCAT(a, b) CRUCIBLE_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define CRUCIBLE_RETURN_IF_ERROR(expr)                      \
  do {                                                      \
    ::crucible::Status _crucible_status = (expr);           \
    if (!_crucible_status.is_ok()) return _crucible_status; \
  } while (false)

// `CRUCIBLE_ASSIGN_OR_RETURN(auto x, make_x());` — declares/assigns x from a
// Result, or returns its Status from the enclosing function.
#define CRUCIBLE_ASSIGN_OR_RETURN(lhs, expr) \
  CRUCIBLE_ASSIGN_OR_RETURN_IMPL(CRUCIBLE_CONCAT(_crucible_result_, __LINE__), lhs, expr)
#define CRUCIBLE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.is_ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

template <>
struct fmt::formatter<crucible::Status> : fmt::formatter<std::string_view> {
  auto format(const crucible::Status& s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.to_string(), ctx);
  }
};
