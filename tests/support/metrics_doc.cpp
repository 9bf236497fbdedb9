#include "support/metrics_doc.h"

#include <fstream>
#include <sstream>

namespace crucible::testing {

namespace {

std::string trim(std::string s) {
  const auto a = s.find_first_not_of(" \t`");
  const auto b = s.find_last_not_of(" \t`");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::vector<std::string> cells_of(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream in(row.substr(1));
  for (std::string c; std::getline(in, c, '|');) out.push_back(trim(c));
  return out;
}

// "result (ok, late, failed)" -> {"result"}; "version, role" -> {"version", "role"}.
std::vector<std::string> label_names(std::string cell) {
  std::string plain;
  int depth = 0;
  for (char c : cell) {
    if (c == '(') ++depth;
    if (depth == 0) plain += c;
    if (c == ')') --depth;
  }
  std::vector<std::string> out;
  std::stringstream in(plain);
  for (std::string l; std::getline(in, l, ',');)
    if (!trim(l).empty()) out.push_back(trim(l));
  return out;
}

}  // namespace

std::vector<DocumentedMetric> documented_metrics() {
  std::ifstream in(std::string(CRUCIBLE_SOURCE_DIR) + "/docs/observability.md");
  std::vector<DocumentedMetric> out;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("| name | type | labels | exported by |")) {
      in_table = true;
      continue;
    }
    if (!in_table || line.starts_with("|---")) continue;
    if (!line.starts_with("|")) {
      if (!out.empty()) break;
      continue;
    }
    auto c = cells_of(line);
    if (c.size() < 5) continue;
    out.push_back({c[0], c[1], label_names(c[2]), c[3]});
  }
  return out;
}

std::set<std::string> exported_families(const std::string& scrape) {
  std::set<std::string> out;
  std::stringstream in(scrape);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    if (name.ends_with("_bucket") || name.ends_with("_sum")) continue;
    if (name.ends_with("_count")) name.resize(name.size() - 6);
    out.insert(name);
  }
  return out;
}

}  // namespace crucible::testing
