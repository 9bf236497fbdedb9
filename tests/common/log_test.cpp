#include "crucible/common/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crucible/common/metrics.h"

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

namespace crucible::log {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 2026-12-02T13:05:11.123Z
constexpr std::int64_t kTs = 1'796'216'711'123;

TEST(LogFormat, TextIsOneHumanLine) {
  std::string line =
      format_record(Format::kText, kTs, Level::kWarn, "upload slow",
                    {{"window", 12}, {"bytes", std::uint64_t{1234}}, {"ratio", 0.5}, {"ok", false}, {"peer", "m 1"}});
  EXPECT_EQ(line, "2026-12-02T13:05:11.123Z WARN  upload slow window=12 bytes=1234 ratio=0.5 ok=false peer=\"m 1\"\n");
}

TEST(LogFormat, TextEscapesControlCharacters) {
  std::string line = format_record(Format::kText, kTs, Level::kInfo, "evil\nINFO forged", {{"name", "a\"b\nc\x01"}});
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);
  EXPECT_THAT(line, HasSubstr("evil\\nINFO forged"));
  EXPECT_THAT(line, HasSubstr("name=\"a\\\"b\\nc\\x01\""));
}

TEST(LogFormat, JsonIsOneObjectPerLine) {
  std::string line = format_record(Format::kJson, kTs, Level::kError, "rpc failed",
                                   {{"code", -32000}, {"retry", true}, {"url", "http://x"}, {"level", "shadow"}});
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["ts"], "2026-12-02T13:05:11.123Z");
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["msg"], "rpc failed");
  EXPECT_EQ(j["code"], -32000);
  EXPECT_EQ(j["retry"], true);
  EXPECT_EQ(j["url"], "http://x");
  EXPECT_EQ(j["field_level"], "shadow");  // a field cannot overwrite the record's own keys
}

TEST(LogFormat, JsonSurvivesInvalidUtf8) {
  std::string line = format_record(Format::kJson, kTs, Level::kInfo, "bad \xff bytes", {{"v", "\xc3"}});
  EXPECT_TRUE(nlohmann::json::accept(line));
}

TEST(LogSecrets, SecretKeysAreRedactedInBothFormats) {
  for (Format f : {Format::kText, Format::kJson}) {
    std::string line = format_record(f, kTs, Level::kInfo, "loaded",
                                     {{"wallet.password", "hunter2"},
                                      {"aws_secret_access_key", "AKIAXYZ"},
                                      {"private_key", "0x4646"},
                                      {"tokens_per_s", 99}});
    EXPECT_THAT(line, Not(HasSubstr("hunter2")));
    EXPECT_THAT(line, Not(HasSubstr("AKIAXYZ")));
    EXPECT_THAT(line, Not(HasSubstr("0x4646")));
    EXPECT_THAT(line, HasSubstr("<redacted>"));
    EXPECT_THAT(line, HasSubstr("99"));  // "tokens" is not "token"
  }
}

TEST(LogSecrets, SecretValuesAreRedactedWhateverTheKey) {
  Secret key("0xdeadbeef");
  std::string line = format_record(Format::kJson, kTs, Level::kInfo, "x", {{"harmless", key}});
  EXPECT_THAT(line, Not(HasSubstr("deadbeef")));
  EXPECT_EQ(fmt::format("{}", key), "<redacted>");
  EXPECT_EQ(key.reveal(), "0xdeadbeef");
}

TEST(LogSecrets, KeyClassification) {
  EXPECT_TRUE(is_secret_key("password"));
  EXPECT_TRUE(is_secret_key("storage.write.secret_key"));
  EXPECT_TRUE(is_secret_key("api-token"));
  EXPECT_TRUE(is_secret_key("private_key"));
  EXPECT_FALSE(is_secret_key("tokens"));
  EXPECT_FALSE(is_secret_key("key_file"));
  EXPECT_FALSE(is_secret_key("window"));
}

struct CapturingSink : ::testing::Test {
  void SetUp() override {
    set_sink([this](std::string_view line) {
      std::lock_guard lock(mu);
      lines.emplace_back(line);
    });
  }
  void TearDown() override {
    set_sink(nullptr);
    configure({}, false);
  }
  std::mutex mu;
  std::vector<std::string> lines;
};

TEST_F(CapturingSink, LevelFilters) {
  configure({Level::kWarn, Format::kText}, false);
  info("hidden");
  warn("shown");
  error("also shown");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("WARN  shown"));
  configure({Level::kOff, Format::kText}, false);
  error("nothing");
  EXPECT_EQ(lines.size(), 2u);
}

TEST_F(CapturingSink, RecordsAreCountedByLevel) {
  configure({Level::kInfo, Format::kText}, false);
  auto& m = metrics::global();
  double warns = m.value(metrics::Counter::kLogRecords, {{"level", "warn"}});
  double debugs = m.value(metrics::Counter::kLogRecords, {{"level", "debug"}});
  warn("one");
  warn("two");
  debug("filtered, so not counted");
  EXPECT_EQ(m.value(metrics::Counter::kLogRecords, {{"level", "warn"}}), warns + 2);
  EXPECT_EQ(m.value(metrics::Counter::kLogRecords, {{"level", "debug"}}), debugs);
}

TEST_F(CapturingSink, AutoFormatFollowsTerminal) {
  configure({Level::kInfo, Format::kAuto}, true);
  EXPECT_EQ(format(), Format::kText);
  configure({Level::kInfo, Format::kAuto}, false);
  EXPECT_EQ(format(), Format::kJson);
  info("x", {{"n", 1}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["n"], 1);
}

TEST_F(CapturingSink, ConcurrentWritersNeverInterleave) {
  configure({Level::kInfo, Format::kJson}, false);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) info("tick", {{"thread", t}, {"i", i}});
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(lines.size(), 800u);
  for (const auto& l : lines) EXPECT_TRUE(nlohmann::json::accept(l));
}

}  // namespace
}  // namespace crucible::log
