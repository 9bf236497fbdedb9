// deploy/: the systemd units pass `systemd-analyze verify` (every directive
// known and well-formed; a warning is a failure), and the flags in their
// ExecStart are ones the node binaries take.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using ::testing::HasSubstr;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Units : public ::testing::TestWithParam<std::string> {};

TEST_P(Units, VerifyCleanlyAndNameFlagsTheBinaryTakes) {
  const std::string role = GetParam();
  const std::string unit = read(std::string(CRUCIBLE_SOURCE_DIR) + "/deploy/systemd/crucible-" + role + ".service");
  ASSERT_FALSE(unit.empty());
  // verify checks that ExecStart's binary exists: point it at this build's.
  testing::TempDir dir;
  const std::string local =
      std::regex_replace(unit, std::regex("/usr/local/bin/"), std::string(CRUCIBLE_BIN_DIR) + "/");
  const std::string path = dir.write("crucible-" + role + ".service", local);
  auto v = testing::run_process({"/usr/bin/env", "systemd-analyze", "verify", path});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(v.err, "") << "systemd-analyze warned";

  std::smatch exec;
  ASSERT_TRUE(std::regex_search(unit, exec, std::regex("\nExecStart=([^\n]*)")));
  const std::string help = testing::run_process({testing::bin("crucible-" + role), "--help"}).out;
  const std::string cmd = exec[1];
  const std::regex flag(" (--[a-z-]+)");
  for (std::sregex_iterator it(cmd.begin(), cmd.end(), flag), end; it != end; ++it) {
    EXPECT_THAT(help, HasSubstr((*it)[1].str() + " ")) << "crucible-" << role << " has no flag " << (*it)[1];
  }
  EXPECT_THAT(cmd, HasSubstr("--password-file ${CREDENTIALS_DIRECTORY}/"));  // secrets as systemd credentials
  EXPECT_THAT(unit, HasSubstr("RestartPreventExitStatus=2"));                // a config error does not loop
}

INSTANTIATE_TEST_SUITE_P(Deploy, Units, ::testing::Values("miner", "validator"));

}  // namespace
}  // namespace crucible
