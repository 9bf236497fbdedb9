// Reading a validator's score API for a person: `crucible scores --url U`,
// also used by `crucible demo`.
#pragma once

#include <string>

#include "crucible/common/status.h"

namespace crucible::cli {

// GET url with a deadline; the body when the status is 200, else an error
// with the status and the API's JSON "error" message.
Result<std::string> http_get(const std::string& url, double timeout_s = 10.0);
// The /v1/scores JSON as a table, highest final score first.
Result<std::string> format_scores(const std::string& json);

}  // namespace crucible::cli
