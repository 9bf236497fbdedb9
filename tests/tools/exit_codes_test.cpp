// The exit-code table of docs/quickstart.md, case by case through every
// binary (issue #31): 2 for what the operator must fix (systemd's
// RestartPreventExitStatus=2 then stops restarting), 1 for a failure a later
// try may not meet. None of these cases needs a chain: each stops before it
// would talk to one, or finds none.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "crucible/chain/keys.h"
#include "crucible/common/child_process.h"
#include "support/local_network.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using ::testing::HasSubstr;

struct Case {
  std::string what;
  std::vector<std::string> argv;  // after the binary; "{dir}" is the test folder, "{data}" prepared data
  std::string binary;
  int code;
  std::string says;  // in stdout or stderr
};

class ExitCodes : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = testing::prepare_brown(dir_.path());
    key_ = testing::write_keystore(*chain::PrivateKey::generate(), dir_.path() / "node.key", "right");
    wrong_ = dir_.write("wrong.pw", "wrong");
    right_ = dir_.write("right.pw", "right");
    ::chmod(wrong_.c_str(), 0600);
    ::chmod(right_.c_str(), 0600);
    auto port = free_loopback_port();
    ASSERT_TRUE(port.is_ok());
    closed_rpc_ = fmt::format("chain.rpc_url=http://127.0.0.1:{}", *port);  // nothing listens there
  }

  std::string expand(std::string s) const {
    for (auto [from, to] : {std::pair<std::string, std::string>{"{dir}", dir_.path().string()},
                            {"{data}", data_},
                            {"{key}", key_},
                            {"{wrong}", wrong_},
                            {"{right}", right_},
                            {"{closed}", closed_rpc_}}) {
      for (auto at = s.find(from); at != std::string::npos; at = s.find(from)) s.replace(at, from.size(), to);
    }
    return s;
  }

  testing::TempDir dir_;
  std::string data_, key_, wrong_, right_, closed_rpc_;
};

TEST_F(ExitCodes, EveryBinaryFollowsTheTable) {
  const std::string bad_toml = dir_.write("bad.toml", "[protocol]\nblocks_per_windw = 3\n");
  // One node file per role (a miner's file has no [validator] section).
  auto node_file = [&](const std::string& role, const std::string& data) {
    return dir_.write(role + (data == data_ ? "-data" : "-none") + ".toml",
                      expand("[protocol]\nsamples_per_window = 16\n[" + role + "]\ndata_dir = \"" + data +
                             "\"\nstate_dir = \"{dir}/" + role + "-state\"\n"));
  };
  const std::string miner_no_data = node_file("miner", expand("{dir}/none"));
  const std::string validator_no_data = node_file("validator", expand("{dir}/none"));
  const std::string miner = node_file("miner", data_);
  const std::string validator = node_file("validator", data_);
  std::ifstream key_in(key_);
  const std::string open_key =
      dir_.write("open.key", std::string(std::istreambuf_iterator<char>(key_in), std::istreambuf_iterator<char>()));
  ::chmod(open_key.c_str(), 0644);
  const std::vector<Case> cases{
      {"an unknown flag", {"config", "show", "--no-such-flag"}, "crucible", 2, "no-such-flag"},
      {"an unknown flag", {"--no-such-flag"}, "crucible-miner", 2, "no-such-flag"},
      {"an unknown flag", {"--no-such-flag"}, "crucible-validator", 2, "no-such-flag"},
      {"an unknown config key", {"--config", bad_toml, "--key", "{key}"}, "crucible-miner", 2, "blocks_per_windw"},
      {"an unknown config key", {"--config", bad_toml, "--key", "{key}"}, "crucible-validator", 2, "blocks_per_windw"},
      {"config check of an invalid file", {"config", "check", bad_toml}, "crucible", 2, "blocks_per_windw"},
      {"config show of an invalid value",
       {"config", "show", "--set", "protocol.aggregate_top=0"},
       "crucible",
       2,
       "out of range"},
      {"a missing data folder",
       {"--config", miner_no_data, "--key", "{key}", "--password-file", "{right}"},
       "crucible-miner",
       2,
       "crucible data prepare"},
      {"a missing data folder",
       {"--config", validator_no_data, "--key", "{key}", "--password-file", "{right}"},
       "crucible-validator",
       2,
       "crucible data prepare"},
      {"config check of a miner without its data",
       {"config", "check", "--role", "miner", miner_no_data},
       "crucible",
       2,
       "miner.data_dir"},
      {"config check of a miner with its data",
       {"config", "check", "--role", "miner", miner},
       "crucible",
       0,
       "data checked"},
      {"config check of a readable key without a password",
       {"config", "check", "--role", "miner", miner, "--key", "{key}"},
       "crucible",
       0,
       "password not checked"},
      {"config check of a key that opens",
       {"config", "check", "--role", "miner", miner, "--key", "{key}", "--password-file", "{right}"},
       "crucible",
       0,
       "opens"},
      {"config check of a key with a wrong password",
       {"config", "check", "--role", "miner", miner, "--key", "{key}", "--password-file", "{wrong}"},
       "crucible",
       2,
       "wrong password"},
      {"config check of a missing key",
       {"config", "check", "--role", "miner", miner, "--key", "{dir}/no-such.key"},
       "crucible",
       2,
       "no-such.key"},
      {"config check of a key others can read",
       {"config", "check", "--role", "miner", miner, "--key", open_key},
       "crucible",
       2,
       "0644"},
      {"a wrong password",
       {"--config", miner, "--key", "{key}", "--password-file", "{wrong}"},
       "crucible-miner",
       2,
       "cannot decrypt"},
      {"a wrong password",
       {"--config", validator, "--key", "{key}", "--password-file", "{wrong}"},
       "crucible-validator",
       2,
       "cannot decrypt"},
      {"a wrong password", {"wallet", "check", "{key}", "--password-file", "{wrong}"}, "crucible", 2, "wrong password"},
      {"a wrong password",
       {"chain", "register", "--key", "{key}", "--password-file", "{wrong}"},
       "crucible",
       2,
       "wrong password"},
      {"no password and no terminal", {"wallet", "check", "{key}"}, "crucible", 2, "--password-file"},
      {"a keystore that exists",
       {"wallet", "new", "--out", "{key}", "--password-file", "{right}"},
       "crucible",
       2,
       "exists"},
      {"--ranks out of its range (the schema checks the rank flags)",
       {"--config", miner, "--key", "{key}", "--password-file", "{right}", "--ranks", "0"},
       "crucible-miner",
       2,
       "--ranks"},
      {"rank flags that do not fit together",
       {"--config", miner, "--key", "{key}", "--password-file", "{right}", "--ranks", "2", "--world-size", "3"},
       "crucible-miner",
       2,
       "set one of them"},
      {"a worker rank not below the world size",
       {"--config", miner, "--rank", "2", "--world-size", "2"},
       "crucible-miner",
       2,
       "not below"},
      {"a chain that does not answer",
       {"chain", "metagraph", "--set", "{closed}", "--set", "chain.rpc_timeout_s=1"},
       "crucible",
       1,
       "127.0.0.1"},
      {"a chain that does not answer",
       {"--config", miner, "--key", "{key}", "--password-file", "{right}", "--set", "{closed}", "--set",
        "chain.rpc_timeout_s=1"},
       "crucible-miner",
       1,
       "cannot start"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv{testing::bin(c.binary)};
    for (const auto& a : c.argv) argv.push_back(expand(a));
    auto r = testing::run_process(argv);
    EXPECT_EQ(r.exit_code, c.code) << c.binary << ", " << c.what << ":\n" << r.out << r.err;
    EXPECT_THAT(r.out + r.err, HasSubstr(c.says)) << c.binary << ", " << c.what;
  }
}

}  // namespace
}  // namespace crucible
