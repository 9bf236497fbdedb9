// Every binary answers --help and --version, and refuses bad configs with a
// clear message and exit code 2 before doing anything.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "crucible/common/version.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using testing::bin;
using ::testing::HasSubstr;
using testing::run_process;

class Binary : public ::testing::TestWithParam<std::string> {};

TEST_P(Binary, HelpListsItsOptions) {
  auto r = run_process({bin(GetParam()), "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(GetParam()));
  EXPECT_THAT(r.out, HasSubstr("--version"));
}

TEST_P(Binary, VersionNamesProgramAndVersion) {
  auto r = run_process({bin(GetParam()), "--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(GetParam() + " " + std::string(project_version())));
}

TEST_P(Binary, UnknownFlagIsAUsageError) {
  std::vector<std::string> argv = {bin(GetParam())};
  if (GetParam() == "crucible") argv.push_back("demo");  // it needs a subcommand first
  argv.push_back("--no-such-flag");
  auto r = run_process(argv);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err + r.out, HasSubstr("no-such-flag"));
}

INSTANTIATE_TEST_SUITE_P(All, Binary, ::testing::Values("crucible", "crucible-miner", "crucible-validator"));

class NodeBinary : public ::testing::TestWithParam<std::string> {};

TEST_P(NodeBinary, BadConfigFileStopsWithExitTwo) {
  testing::TempDir dir;
  std::string path = dir.write("bad.toml", "[log]\nlevel = 3\n");
  auto r = run_process({bin(GetParam()), "--config", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("key 'log.level' in " + path + " line 2: expected a string, got an integer"));
}

TEST_P(NodeBinary, LogsJsonLinesWhenNotOnATerminal) {
  auto r = run_process({bin(GetParam()), "--set", "log.level=info"});
  std::istringstream lines(r.err);
  std::string first;
  std::getline(lines, first);
  auto j = nlohmann::json::parse(first);
  EXPECT_EQ(j["msg"], "starting");
  EXPECT_EQ(j["program"], GetParam());
  // Without a wallet a node cannot sign: a usage error that says so.
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--key KEYFILE is required"));
}

TEST_P(NodeBinary, LogFormatFlagSelectsText) {
  auto r = run_process({bin(GetParam()), "--log-format", "text"});
  EXPECT_THAT(r.err, HasSubstr(" INFO  starting program=" + GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Nodes, NodeBinary, ::testing::Values("crucible-miner", "crucible-validator"));

}  // namespace
}  // namespace crucible
