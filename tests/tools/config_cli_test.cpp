// `crucible config check` and `crucible config show` through the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using testing::bin;
using ::testing::HasSubstr;
using testing::run_process;

struct ConfigCheck : ::testing::Test {
  testing::ProcessResult check(const std::string& toml, const std::string& role = "any") {
    std::string path = dir.write("node.toml", toml);
    return run_process({bin("crucible"), "config", "check", "--role", role, path});
  }
  testing::TempDir dir;
};

TEST_F(ConfigCheck, AcceptsAValidFile) {
  auto r = check("[log]\nlevel = \"debug\"\n[protocol]\nblocks_per_window = 12\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("node.toml: ok (2 keys set"));
}

TEST_F(ConfigCheck, RejectsUnknownKeyNamingKeyFileAndLine) {
  auto r = check("[log]\nlevel = \"info\"\n\n[protocol]\nblocks_per_windw = 12\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown key 'protocol.blocks_per_windw'"));
  EXPECT_THAT(r.err, HasSubstr(dir.path().string() + "/node.toml line 5"));
  EXPECT_THAT(r.err, HasSubstr("did you mean 'protocol.blocks_per_window'?"));
}

TEST_F(ConfigCheck, RejectsWrongTypeNamingKeyFileAndLine) {
  auto r = check("[protocol]\nupload_slot_s = \"seventy\"\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("key 'protocol.upload_slot_s' in " + dir.path().string() + "/node.toml line 2"));
  EXPECT_THAT(r.err, HasSubstr("expected a number, got a string"));
}

TEST_F(ConfigCheck, RejectsOutOfRangeNamingKeyFileAndLine) {
  auto r = check("# comment\n[protocol]\naggregate_top = 0\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("key 'protocol.aggregate_top' in " + dir.path().string() + "/node.toml line 3"));
  EXPECT_THAT(r.err, HasSubstr("value 0 is out of range [1, 256]"));
}

TEST_F(ConfigCheck, RejectsSyntaxErrorsAndMissingFiles) {
  auto r = check("[protocol\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("line 1"));
  auto missing = run_process({bin("crucible"), "config", "check", (dir.path() / "nope.toml").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("nope.toml"));
}

TEST_F(ConfigCheck, ShippedExamplesAreValid) {
  for (const char* name :
       {"configs/miner.example.toml", "configs/validator.example.toml", "configs/local/network.toml"}) {
    auto r = run_process({bin("crucible"), "config", "check", std::string(CRUCIBLE_SOURCE_DIR) + "/" + name});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }
}

TEST_F(ConfigCheck, ShowReportsPrecedenceFlagsOverEnvironmentOverFile) {
  std::string path =
      dir.write("p.toml", "[protocol]\nblocks_per_window = 7\nupload_slot_s = 9.5\nclock_skew_s = 2.0\n");
  auto r = run_process({bin("crucible"), "config", "show", "--config", path, "--set", "protocol.blocks_per_window=9"},
                       {{"CRUCIBLE_PROTOCOL_BLOCKS_PER_WINDOW", "8"}, {"CRUCIBLE_PROTOCOL_UPLOAD_SLOT_S", "3"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("blocks_per_window = 9  # flag --set protocol.blocks_per_window"));
  EXPECT_THAT(r.out, HasSubstr("upload_slot_s = 3.0  # environment variable CRUCIBLE_PROTOCOL_UPLOAD_SLOT_S"));
  EXPECT_THAT(r.out, HasSubstr("clock_skew_s = 2.0  # " + path + " line 4"));
  EXPECT_THAT(r.out, HasSubstr("samples_per_window = 64  # the defaults"));
}

TEST_F(ConfigCheck, ShowRejectsBadEnvironment) {
  auto r = run_process({bin("crucible"), "config", "show"}, {{"CRUCIBLE_LOG_LEVEL", "chatty"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("environment variable CRUCIBLE_LOG_LEVEL"));
}

}  // namespace
}  // namespace crucible
