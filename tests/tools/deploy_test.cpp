// deploy/: the systemd units pass `systemd-analyze verify` (every directive
// known and well-formed; a warning is a failure), and the flags in their
// ExecStart are ones the node binaries take.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "crucible/chain/keys.h"
#include "crucible/common/child_process.h"
#include "support/local_network.h"
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

// docs/deployment.md followed as far as this machine allows (no systemd as
// PID 1): the files the page installs, in a scratch root; each
// LoadCredential= source copied into a credentials folder with mode 0400,
// as systemd hands them to the service; then the unit's ExecStart, as is
// but for the scratch paths, against a chain that does not answer. The node
// reads every file it is given (config, secrets, data, keystore, password)
// and stops only at the chain: exit 1, where any file it could not read or
// would refuse (a keystore readable by others) is exit 2.
TEST_P(Units, ExecStartReadsEveryFileThePageInstalls) {
  const std::string role = GetParam();
  const std::string unit = read(std::string(CRUCIBLE_SOURCE_DIR) + "/deploy/systemd/crucible-" + role + ".service");
  const std::string page = read(std::string(CRUCIBLE_SOURCE_DIR) + "/docs/deployment.md");
  testing::TempDir dir;
  const auto root = dir.path() / "root";
  const auto etc = root / "etc/crucible";
  std::filesystem::create_directories(etc / "credentials");
  const std::string data = testing::prepare_brown(dir.path());
  auto port = free_loopback_port();
  ASSERT_TRUE(port.is_ok());
  // The page installs the node's config (no secrets) with 0644 and every
  // credential with 0600; here with the role's folders and a dead chain.
  std::ofstream(etc / (role + ".toml")) << fmt::format(
      "[chain]\nrpc_url = \"http://127.0.0.1:{}\"\nrpc_timeout_s = 1.0\n[storage]\nurl = \"file://{}\"\n[{}]\n"
      "data_dir = \"{}\"\n",
      *port, (dir.path() / "store").string(), role, data);
  testing::write_keystore(*chain::PrivateKey::generate(), etc / "credentials" / (role + ".json"), "the password");
  std::ofstream(etc / "credentials" / (role + "-wallet-password")) << "the password\n";
  std::ofstream(etc / "credentials" / (role + "-secrets.toml")) << "[storage]\nread_secret_access_key = \"unused\"\n";
  for (const char* f : {"-wallet-password", "-secrets.toml"})
    std::filesystem::permissions(etc / "credentials" / (role + f),
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // The page's keystore goes where the unit's LoadCredential reads it, 0600.
  EXPECT_THAT(page, HasSubstr("install -m 0600 miner.json /etc/crucible/credentials/miner.json"));

  // LoadCredential=NAME:SOURCE -> $CREDENTIALS_DIRECTORY/NAME, mode 0400.
  const auto credentials = root / "run/credentials" / ("crucible-" + role + ".service");
  std::filesystem::create_directories(credentials);
  const std::regex load("\nLoadCredential=([^:\n]+):/etc/crucible/([^\n]+)");
  int loaded = 0;
  for (std::sregex_iterator it(unit.begin(), unit.end(), load), end; it != end; ++it, ++loaded) {
    const auto source = etc / (*it)[2].str();
    ASSERT_TRUE(std::filesystem::exists(source)) << source << ": the page installs no such file";
    std::filesystem::copy_file(source, credentials / (*it)[1].str());
    std::filesystem::permissions(credentials / (*it)[1].str(), std::filesystem::perms::owner_read);
  }
  EXPECT_EQ(loaded, 3);  // the keystore, its password, the store's secrets

  std::smatch exec;
  ASSERT_TRUE(std::regex_search(unit, exec, std::regex("\nExecStart=([^\n]*)")));
  std::string cmd = exec[1];
  cmd = std::regex_replace(cmd, std::regex("/usr/local/bin/"), std::string(CRUCIBLE_BIN_DIR) + "/");
  cmd = std::regex_replace(cmd, std::regex("/etc/crucible"), etc.string());
  cmd = std::regex_replace(cmd, std::regex("\\$\\{CREDENTIALS_DIRECTORY\\}"), credentials.string());
  const auto state = root / "var/lib/crucible" / role;
  std::filesystem::create_directories(state);
  cmd = std::regex_replace(cmd, std::regex("\\$\\{STATE_DIRECTORY\\}"), state.string());
  std::vector<std::string> argv;
  std::istringstream words(cmd);
  for (std::string w; words >> w;) argv.push_back(w);
  auto r = testing::run_process(argv);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("cannot start"));
  EXPECT_THAT(r.out + r.err, HasSubstr(std::to_string(*port)));  // it got as far as the chain
}

INSTANTIATE_TEST_SUITE_P(Deploy, Units, ::testing::Values("miner", "validator"));

}  // namespace
}  // namespace crucible
