// `crucible demo`, the README's main job, end to end: the network learns
// (held-out loss recorded every window, falling), the API serves it, the
// weights reach the chain, and the run leaves summary.json and progress.svg.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using ::testing::HasSubstr;

// Two honest miners and a bad miner of each kind (one demo run, as both
// cost a minute): the network still learns, none of the bad ones enters a
// set or earns weight. The plain `crucible demo` of the README is
// Quickstart.FollowsTheDocument's first command.
TEST(Demo, RunsTheLocalNetworkLearnsWithBadMinersWhoEarnNothingAndWritesItsReport) {
  testing::TempDir dir;
  const auto out = dir.path() / "demo-out";
  auto r = testing::run_process({testing::bin("crucible"), "demo", "--windows", "3", "--miners", "2", "--bad-miner",
                                 "noise", "--bad-miner", "zero", "--bad-miner", "copy", "--dir", dir.path().string(),
                                 "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("bad miner uid 3: noise"));
  EXPECT_THAT(r.out, HasSubstr("window done"));
  EXPECT_THAT(r.out, HasSubstr("heldout_loss="));
  EXPECT_THAT(r.out, HasSubstr("set="));
  EXPECT_THAT(r.out, HasSubstr("last evaluated"));  // the score table
  EXPECT_THAT(r.out, HasSubstr("demo: stopped"));
  // The run is described by a network manifest (docs/network.md) that
  // every node joined with, and that the prepared data verifies against.
  const auto manifest = dir.path() / "run" / "network.toml";
  auto verified = testing::run_process(
      {testing::bin("crucible"), "network", "verify", manifest.string(), "--data", (dir.path() / "data").string()});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_THAT(verified.out, HasSubstr("this machine can join network \"local-demo\""));
  std::ifstream log_in(dir.path() / "run" / "logs" / "validator.log");
  const std::string log((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(log, HasSubstr("network=local-demo"));

  std::ifstream in(out / "summary.json");
  ASSERT_TRUE(in.good()) << r.out;
  const auto s = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(s.is_object());
  // The API served every window's held-out loss, and it fell over the run.
  const auto& windows = s["windows"];
  ASSERT_GE(windows.size(), 3u) << s.dump(2);
  for (const auto& w : windows) ASSERT_TRUE(w["heldout_loss"].is_number()) << w.dump();
  EXPECT_LT(windows.back()["heldout_loss"].get<double>(), windows.front()["heldout_loss"].get<double>()) << s.dump(2);
  // The honest miners' uploads were aggregated, no bad miner's: the bad
  // ones were seen (scored) but never in a set.
  EXPECT_EQ(s["miners"].size(), 2u);
  EXPECT_GT(s["figures"]["miner_uploads_aggregated"].get<int>(), 0) << s.dump(2);
  int bad_uploads_seen = 0;
  for (const auto& w : windows) {
    for (const auto& uid : w["set"]) EXPECT_LE(uid.get<int>(), 2) << "a bad miner in the set: " << w.dump();
    for (const char* bad : {"3", "4", "5"}) bad_uploads_seen += w["scores"].contains(bad);
  }
  EXPECT_GT(bad_uploads_seen, 0) << "the bad miners were never seen: " << s.dump(2);
  // Weights went to the chain in a transaction, none to a bad miner.
  ASSERT_GE(s["weight_posts"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["weight_posts"][0]["status"], "confirmed");
  EXPECT_THAT(s["weight_posts"][0]["tx"].get<std::string>(), ::testing::StartsWith("0x"));
  for (const char* bad : {"3", "4", "5"}) {
    EXPECT_FALSE(s["weight_posts"].back()["weights"].contains(bad)) << s["weight_posts"].back().dump();
  }
  std::ifstream svg_in(out / "progress.svg");
  const std::string svg((std::istreambuf_iterator<char>(svg_in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(svg, HasSubstr("<polyline"));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
}

}  // namespace
}  // namespace crucible

namespace crucible {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `--store s3`: every node on its own bucket of a SigV4-checking S3 server
// (Ceph radosgw), others reading with the read-only keys it publishes:
// uploads and gather, the lead's set payloads, a checkpoint and the miners'
// catch-up all over S3; the server is gone at the end.
TEST(Demo, RunsTheNetworkOnS3Buckets) {
  testing::TempDir dir;
  const auto out = dir.path() / "demo-out";
  auto r = testing::run_process({testing::bin("crucible"), "demo", "--store", "s3", "--windows", "3", "--miners", "2",
                                 "--validator-option", "checkpoint_every=2", "--dir", dir.path().string(), "--out",
                                 out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto run = dir.path() / "run";
  for (const char* node : {"validator", "miner1", "miner2"}) {
    EXPECT_THAT(read_file(run / fmt::format("{}.toml", node)),
                HasSubstr(fmt::format("url = \"s3://crucible-{}?endpoint=http://127.0.0.1:", node)));
  }
  std::ifstream in(out / "summary.json");
  const auto s = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(s.is_object()) << r.out;
  // Gathered from the miners' buckets with their read-only keys: both in the sets.
  EXPECT_GT(s["figures"]["miner_uploads_aggregated"].get<int>(), 0) << s.dump(2);
  for (const auto& w : s["windows"]) EXPECT_EQ(w["set"].size(), 2u) << w.dump();
  const std::string validator = read_file(run / "logs/validator.log");
  EXPECT_THAT(validator, HasSubstr("published aggregation set"));
  EXPECT_THAT(validator, HasSubstr("published checkpoint"));
  EXPECT_THAT(validator, ::testing::Not(HasSubstr("unreachable")));
  // The miners applied the lead's sets, read from the validator's bucket.
  for (const char* m : {"miner1", "miner2"}) {
    EXPECT_THAT(read_file(run / fmt::format("logs/{}.log", m)), HasSubstr("applied aggregate")) << m;
  }
  ASSERT_GE(s["weight_posts"].size(), 1u);
  EXPECT_THAT(read_file(run / "logs/s3.log"), HasSubstr("S3 ready"));
  EXPECT_THAT(testing::processes_mentioning(dir.path().string()), ::testing::IsEmpty());  // radosgw too
}

}  // namespace
}  // namespace crucible
