#include "crucible/common/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include "support/metrics_doc.h"

namespace crucible::metrics {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Checks the exposition format's structural rules, independently of the
// library that wrote it: every family has HELP then TYPE before its samples,
// names and labels are well-formed, values parse.
void expect_well_formed(const std::string& text) {
  static const std::regex help(R"re(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$)re");
  static const std::regex type(R"re(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)re");
  static const std::regex sample(
      R"re(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\\\|\\"|\\n)*",?)*\})? ([-+0-9.eE]+|[+-]Inf|NaN)( [0-9]+)?$)re");
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.back(), '\n');
  std::string family;
  bool typed = false;
  for (const std::string& line : lines_of(text)) {
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      family = m[1];
      typed = false;
    } else if (std::regex_match(line, m, type)) {
      EXPECT_EQ(m[1], family) << "TYPE must follow its HELP: " << line;
      typed = true;
    } else {
      ASSERT_TRUE(std::regex_match(line, m, sample)) << "malformed sample line: " << line;
      EXPECT_TRUE(typed) << "sample before its TYPE: " << line;
      EXPECT_EQ(std::string(m[1]).rfind(family, 0), 0u) << line << " outside family " << family;
    }
  }
}

TEST(Metrics, CatalogueNamesFollowConventions) {
  static const std::regex name(R"re(^crucible_[a-z0-9_]+$)re");
  for (int i = 0; i < static_cast<int>(Counter::kCount_); ++i) {
    const auto& d = definition(static_cast<Counter>(i));
    EXPECT_TRUE(std::regex_match(std::string(d.name), name));
    EXPECT_TRUE(std::string(d.name).ends_with("_total")) << d.name;
  }
  for (int i = 0; i < static_cast<int>(Histogram::kCount_); ++i) {
    const auto& d = definition(static_cast<Histogram>(i));
    EXPECT_TRUE(std::is_sorted(d.buckets.begin(), d.buckets.end()));
    EXPECT_FALSE(d.buckets.empty());
  }
}

// docs/observability.md's table and the catalogue in the code agree: every
// series, its type and its label names, in both directions.
TEST(Metrics, TheDocumentedCatalogueIsTheCodesCatalogue) {
  const auto doc = testing::documented_metrics();
  ASSERT_FALSE(doc.empty()) << "no catalogue table in docs/observability.md";
  std::map<std::string, testing::DocumentedMetric> by_name;
  for (const auto& m : doc) {
    EXPECT_TRUE(by_name.emplace(m.name, m).second) << m.name << " documented twice";
    EXPECT_THAT((std::vector<std::string>{"miner", "validator", "both"}), ::testing::Contains(m.exported_by)) << m.name;
  }
  std::size_t in_code = 0;
  auto check = [&](const Definition& d, const char* type) {
    ++in_code;
    auto it = by_name.find(std::string(d.name));
    ASSERT_NE(it, by_name.end()) << d.name << " is not in docs/observability.md";
    EXPECT_EQ(it->second.type, type) << d.name;
    std::vector<std::string> labels(d.labels.begin(), d.labels.end());
    EXPECT_EQ(it->second.labels, labels) << d.name;
  };
  for (int i = 0; i < static_cast<int>(Counter::kCount_); ++i) check(definition(static_cast<Counter>(i)), "counter");
  for (int i = 0; i < static_cast<int>(Gauge::kCount_); ++i) check(definition(static_cast<Gauge>(i)), "gauge");
  for (int i = 0; i < static_cast<int>(Histogram::kCount_); ++i) {
    check(definition(static_cast<Histogram>(i)), "histogram");
  }
  EXPECT_EQ(in_code, doc.size()) << "docs/observability.md lists series the code does not have";
}

TEST(Metrics, ExportedFamiliesAreReadFromAScrape) {
  Registry r;
  r.add(Counter::kEvaluations);
  r.observe(Histogram::kWindowDurationSeconds, 3, {{"role", "miner"}});
  const auto f = testing::exported_families(r.render());
  EXPECT_TRUE(f.count("crucible_evaluations_total"));
  EXPECT_TRUE(f.count("crucible_window_duration_seconds"));
  EXPECT_FALSE(f.count("crucible_uploads_valid_total"));  // documented, but no sample yet
}

TEST(Metrics, CountersAndGaugesRender) {
  Registry r;
  r.add(Counter::kLogRecords, 1, {{"level", "info"}});
  r.add(Counter::kLogRecords, 2, {{"level", "info"}});
  r.add(Counter::kLogRecords, 1, {{"level", "error"}});
  r.set(Gauge::kWindow, 42, {{"role", "miner"}});
  r.set(Gauge::kStartTimeSeconds, 1.5e9);
  EXPECT_DOUBLE_EQ(r.value(Counter::kLogRecords, {{"level", "info"}}), 3);
  EXPECT_DOUBLE_EQ(r.value(Counter::kLogRecords, {{"level", "warn"}}), 0);
  EXPECT_DOUBLE_EQ(r.value(Gauge::kWindow, {{"role", "miner"}}), 42);

  std::string text = r.render();
  expect_well_formed(text);
  EXPECT_THAT(text, HasSubstr("# HELP crucible_log_records_total Log records written, by level.\n"
                              "# TYPE crucible_log_records_total counter\n"));
  EXPECT_THAT(text, HasSubstr("crucible_log_records_total{level=\"info\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("crucible_log_records_total{level=\"error\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE crucible_window gauge\n"));
  EXPECT_THAT(text, HasSubstr("crucible_window{role=\"miner\"} 42\n"));
  EXPECT_THAT(text, HasSubstr("crucible_process_start_time_seconds 1500000000\n"));
}

TEST(Metrics, LabelValuesAreEscaped) {
  Registry r;
  r.set(Gauge::kBuildInfo, 1, {{"version", "a\"b\\c\nd"}, {"role", "miner"}});
  std::string text = r.render();
  expect_well_formed(text);
  // Exposition rules: backslash -> \\, double quote -> \", line feed -> \n.
  EXPECT_THAT(text, HasSubstr(R"re(version="a\"b\\c\nd")re"));
}

TEST(Metrics, HistogramHasCumulativeBucketsInfSumAndCount) {
  Registry r;
  for (double v : {0.2, 0.7, 3.0, 3.0, 5000.0})
    r.observe(Histogram::kWindowDurationSeconds, v, {{"role", "validator"}});
  std::string text = r.render();
  expect_well_formed(text);
  EXPECT_THAT(text, HasSubstr("# TYPE crucible_window_duration_seconds histogram\n"));

  static const std::regex bucket(R"re(^crucible_window_duration_seconds_bucket\{.*le="([^"]+)".*\} (\S+)$)re");
  std::vector<std::pair<std::string, double>> buckets;
  double sum = NAN, count = NAN;
  for (const auto& line : lines_of(text)) {
    std::smatch m;
    if (std::regex_match(line, m, bucket)) buckets.emplace_back(m[1], std::stod(m[2]));
    if (line.rfind("crucible_window_duration_seconds_sum", 0) == 0) sum = std::stod(line.substr(line.rfind(' ')));
    if (line.rfind("crucible_window_duration_seconds_count", 0) == 0) count = std::stod(line.substr(line.rfind(' ')));
  }
  const auto& def = definition(Histogram::kWindowDurationSeconds);
  ASSERT_EQ(buckets.size(), def.buckets.size() + 1);
  EXPECT_EQ(buckets.back().first, "+Inf");
  for (std::size_t i = 1; i < buckets.size(); ++i) EXPECT_GE(buckets[i].second, buckets[i - 1].second);
  EXPECT_EQ(buckets[0].first, "0.5");
  EXPECT_EQ(buckets[0].second, 1);                   // 0.2
  EXPECT_EQ(buckets[1].second, 2);                   // <= 1: 0.2, 0.7
  EXPECT_EQ(buckets[buckets.size() - 2].second, 4);  // <= 1200: all but 5000
  EXPECT_EQ(buckets.back().second, 5);
  EXPECT_DOUBLE_EQ(count, 5);
  EXPECT_DOUBLE_EQ(sum, 0.2 + 0.7 + 3 + 3 + 5000);
}

TEST(Metrics, WrongLabelsAreAProgrammingError) {
  Registry r;
  EXPECT_THROW(r.add(Counter::kLogRecords, 1), std::invalid_argument);
  EXPECT_THROW(r.add(Counter::kLogRecords, 1, {{"lvl", "x"}}), std::invalid_argument);
  EXPECT_THROW(r.set(Gauge::kStartTimeSeconds, 1, {{"role", "x"}}), std::invalid_argument);
  EXPECT_THROW(r.add(Counter::kLogRecords, -1, {{"level", "x"}}), std::invalid_argument);
}

}  // namespace
}  // namespace crucible::metrics
