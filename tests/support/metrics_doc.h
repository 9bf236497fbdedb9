// The metrics catalogue as docs/observability.md documents it, and what a
// node's /metrics actually exports: tests compare the two.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace crucible::testing {

struct DocumentedMetric {
  std::string name;
  std::string type;                 // counter, gauge, histogram
  std::vector<std::string> labels;  // label names, in the documented order
  std::string exported_by;          // miner, validator, both
};

// The rows of the table under "## Metrics" (empty when the file is missing).
std::vector<DocumentedMetric> documented_metrics();

// The metric names that have at least one sample in a Prometheus text
// scrape; a histogram counts under its family name (from name_count).
std::set<std::string> exported_families(const std::string& scrape);

}  // namespace crucible::testing
