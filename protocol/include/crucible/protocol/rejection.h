// Why a uid's upload for a window is not valid (protocol.md §6): one enum,
// so the API field, the metric label crucible_uploads_rejected_total{reason}
// and the tests all use the same names, and no code branches on message text.
// The detail string beside it is for people.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace crucible::protocol {

enum class Rejection {
  kMissing,           // no object at the window's key
  kUnreachable,       // no readable store, or it did not answer
  kTooEarly,          // its commitment first observed before the upload slot opened
  kTooLate,           // its commitment first observed after the upload slot closed
  kDownloadFailed,    // listed but could not be fetched whole
  kBadPacket,         // not a well-formed, signed packet
  kWrongSigner,       // signed by a key other than the uid's hotkey
  kWrongHeader,       // names another uid, window or protocol version
  kNotAssignedData,   // sample digest is not the uid's assignment
  kWrongShape,        // tensors do not fit the model
  kCopy,              // the same update as another upload of this window (both are rejected)
  kReplay,            // the same update as one of an earlier window
  kNonFinite,         // applying it makes the loss NaN or infinite
  kEvaluationFailed,  // evaluating or decoding it failed
  kNotObserved,       // when it appeared cannot be established (not seen in the slot, or with an equal update)
};

inline constexpr std::array kAllRejections = {
    Rejection::kMissing,         Rejection::kUnreachable,      Rejection::kTooEarly,    Rejection::kTooLate,
    Rejection::kDownloadFailed,  Rejection::kBadPacket,        Rejection::kWrongSigner, Rejection::kWrongHeader,
    Rejection::kNotAssignedData, Rejection::kWrongShape,       Rejection::kCopy,        Rejection::kReplay,
    Rejection::kNonFinite,       Rejection::kEvaluationFailed, Rejection::kNotObserved,
};

// Stable snake_case names: "missing", "too_late", "not_assigned_data", ...
std::string_view name(Rejection r) noexcept;
std::optional<Rejection> rejection_from_name(std::string_view name) noexcept;

// True when the uid put something up in time that is not a valid update:
// such uploads rank last in the window (an absent, mistimed or unordered
// one is only counted as missing).
bool ranks_last(Rejection r) noexcept;

}  // namespace crucible::protocol
