// What `crucible demo` leaves behind for a person to read: summary.json
// (per window: held-out loss, the aggregation set, valid uploads, scores,
// bytes; every weights post with its transaction) and progress.svg (the
// held-out loss and each uid's weight over windows). Read from the lead
// validator's HTTP API, so it shows what any user of the API would see.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crucible/common/status.h"

namespace crucible::cli {

struct DemoWindow {
  std::uint64_t window = 0;
  std::optional<double> heldout_loss;
  std::vector<std::uint16_t> set;                // the aggregation set applied
  std::vector<std::uint16_t> valid;              // uids with a valid upload
  std::map<std::uint16_t, double> scores;        // final score after the window
  std::map<std::uint16_t, double> gradient;      // gradient score of the uids evaluated
  std::map<std::uint16_t, std::string> reasons;  // why an upload was refused
  std::uint64_t bytes_received = 0;
};

struct DemoPost {
  std::uint64_t epoch = 0;
  std::uint64_t window = 0;
  std::map<std::uint16_t, double> weights;  // normalised to sum 1
  std::string status;
  std::string tx;
};

struct DemoReport {
  std::vector<std::uint16_t> miners;  // the honest miners the demo started
  std::vector<DemoWindow> windows;
  std::vector<DemoPost> posts;
};

// From the validator's API at `api` ("http://127.0.0.1:PORT").
Result<DemoReport> read_demo_report(const std::string& api, const std::vector<std::uint16_t>& miners);
// The report as parsed from the API's JSON (what read_demo_report does after its GETs).
Result<DemoReport> demo_report_from_json(const nlohmann::json& progress, const std::vector<nlohmann::json>& windows,
                                         const nlohmann::json& posts, const std::vector<std::uint16_t>& miners);

// The run's figures: the share of the miners' valid uploads that were
// aggregated, and each miner's share of the last post's weight.
struct DemoFigures {
  std::size_t valid_uploads = 0;
  std::size_t aggregated = 0;
  std::map<std::uint16_t, double> final_weights;
};
DemoFigures demo_figures(const DemoReport& r);

nlohmann::json summary_json(const DemoReport& r);
// A standalone SVG: held-out loss above, each uid's weight below.
std::string progress_svg(const DemoReport& r);
// summary.json and progress.svg in `out` (created).
Status write_demo_outputs(const DemoReport& r, const std::filesystem::path& out);

}  // namespace crucible::cli
