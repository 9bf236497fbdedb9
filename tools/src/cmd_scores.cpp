// `crucible scores --url http://127.0.0.1:8080`: a validator's scores as a table.
#include <memory>

#include <fmt/format.h>

#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/scores.h"

namespace crucible::cli {

void add_scores_command(CLI::App& app, int& exit_code) {
  auto url = std::make_shared<std::string>("http://127.0.0.1:8080");
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("scores", "Print a validator's scores (its HTTP API, GET /v1/scores)");
  cmd->add_option("--url", *url, "The validator's API")->capture_default_str();
  cmd->add_flag("--json", *json, "Print the JSON as it came");
  cmd->callback([url, json, &exit_code] {
    std::string base = *url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto body = http_get(base + "/v1/scores");
    if (!body.is_ok()) {
      fmt::print(stderr, "error: {}\n", body.status().message());
      exit_code = kExitFailure;
      return;
    }
    if (*json) {
      fmt::print("{}", *body);
      exit_code = kExitOk;
      return;
    }
    auto table = format_scores(*body);
    if (!table.is_ok()) {
      fmt::print(stderr, "error: {}\n", table.status().message());
      exit_code = kExitFailure;
      return;
    }
    fmt::print("{}", *table);
    exit_code = kExitOk;
  });
}

}  // namespace crucible::cli
