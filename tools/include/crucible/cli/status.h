// `crucible status`: one uid as its operator needs to see it, from the
// chain, its store and a validator's score API; and, when its score is 0,
// which factor made it 0 and what to do about it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "crucible/common/status.h"

namespace crucible::cli {

// One reason a final score is 0 (final = rating ordinal × BMA × sync ×
// penalty, or 0 while the last evaluation was invalid; docs/protocol.md §9).
struct ZeroFactor {
  std::string factor;  // rejection, rating, bma, sync, penalty, not_evaluated
  std::string why;     // in words, with the numbers
  std::string todo;    // what the operator can do
};

// `miner_json`: the score API's GET /v1/miners/{uid} body. Every factor
// that holds the score at 0 (or, for the penalty, near it), in the order of
// the formula; empty when the score is positive. data_loss when the body is
// not such an answer.
Result<std::vector<ZeroFactor>> explain_zero(std::string_view miner_json);

// What to do about an upload rejected for `reason` (protocol/rejection.h names).
std::string advice_for_rejection(std::string_view reason);

}  // namespace crucible::cli
