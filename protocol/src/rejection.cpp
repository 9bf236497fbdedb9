#include "crucible/protocol/rejection.h"

namespace crucible::protocol {

std::string_view name(Rejection r) noexcept {
  switch (r) {
    case Rejection::kMissing:
      return "missing";
    case Rejection::kUnreachable:
      return "unreachable";
    case Rejection::kTooEarly:
      return "too_early";
    case Rejection::kTooLate:
      return "too_late";
    case Rejection::kDownloadFailed:
      return "download_failed";
    case Rejection::kBadPacket:
      return "bad_packet";
    case Rejection::kWrongSigner:
      return "wrong_signer";
    case Rejection::kWrongHeader:
      return "wrong_header";
    case Rejection::kNotAssignedData:
      return "not_assigned_data";
    case Rejection::kWrongShape:
      return "wrong_shape";
    case Rejection::kCopy:
      return "copy";
    case Rejection::kReplay:
      return "replay";
    case Rejection::kNonFinite:
      return "non_finite";
    case Rejection::kEvaluationFailed:
      return "evaluation_failed";
    case Rejection::kNotObserved:
      return "not_observed";
  }
  return "unknown";
}

std::optional<Rejection> rejection_from_name(std::string_view n) noexcept {
  for (Rejection r : kAllRejections)
    if (name(r) == n) return r;
  return std::nullopt;
}

bool ranks_last(Rejection r) noexcept {
  switch (r) {
    case Rejection::kMissing:
    case Rejection::kUnreachable:
    case Rejection::kTooEarly:
    case Rejection::kTooLate:
    case Rejection::kNotObserved:
      return false;
    default:
      return true;
  }
}

}  // namespace crucible::protocol
