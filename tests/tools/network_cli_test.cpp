// `crucible network init|show|verify` and a node config that names the
// manifest, through the real binary (issue #31).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using testing::bin;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_process;

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct NetworkManifestTest : ::testing::Test {
  void SetUp() override {
    data_ = testing::prepare_brown(dir.path());
    manifest_ = (dir.path() / "network.toml").string();
    auto r = init(manifest_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("wrote " + manifest_));
  }
  testing::ProcessResult init(const std::string& out, const std::string& extra_set = "") {
    std::vector<std::string> argv{bin("crucible"), "network",      "init",     "--name", "test-net",
                                  "--config",      local_network_, "--config", tiny_,    "--data",
                                  data_,           "--out",        out};
    if (!extra_set.empty()) argv.insert(argv.end(), {"--set", extra_set});
    return run_process(argv);
  }
  testing::ProcessResult show_config(const std::vector<std::string>& extra) {
    std::vector<std::string> argv{bin("crucible"), "config", "show", "--role", "miner", "--network", manifest_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv);
  }

  testing::TempDir dir;
  std::string data_, manifest_;
  const std::string local_network_ = std::string(CRUCIBLE_SOURCE_DIR) + "/configs/local/network.toml";
  const std::string tiny_ = std::string(CRUCIBLE_SOURCE_DIR) + "/configs/models/tiny.toml";
};

TEST_F(NetworkManifestTest, InitWritesEveryValueWithTheDigestsAndVerifyAcceptsTheSameData) {
  const std::string text = read(manifest_);
  EXPECT_THAT(text, HasSubstr("name = \"test-net\""));
  EXPECT_THAT(text, HasSubstr("netuid = 1"));
  EXPECT_THAT(text, HasSubstr("samples_per_window = 16"));  // configs/local/network.toml's
  EXPECT_THAT(text, HasSubstr("vocab_size = 2048"));        // the tiny preset's
  EXPECT_THAT(text, HasSubstr("trust_z = "));               // a default, written out all the same
  std::smatch digest;
  ASSERT_TRUE(std::regex_search(text, digest, std::regex("dataset_sha256 = \"([0-9a-f]{64})\"")));
  EXPECT_THAT(run_process({bin("crucible"), "data", "info", data_}).out, HasSubstr(digest[1].str()));
  EXPECT_TRUE(std::regex_search(text, std::regex("genesis_sha256 = \"[0-9a-f]{64}\"")));

  auto shown = run_process({bin("crucible"), "network", "show", manifest_});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("network   test-net"));
  EXPECT_THAT(shown.out, HasSubstr("join with --network " + manifest_));

  auto ok = run_process({bin("crucible"), "network", "verify", manifest_, "--data", data_});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("ok        genesis model"));
  EXPECT_THAT(ok.out, HasSubstr("this machine can join network \"test-net\""));

  // The same corpus and settings, prepared again elsewhere: the same digest.
  auto again = testing::prepare_brown(dir.path() / "again");
  auto same = run_process({bin("crucible"), "network", "verify", manifest_, "--data", again});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
}

TEST_F(NetworkManifestTest, VerifyNamesOtherDataAndAnotherGenesis) {
  auto other = testing::prepare_brown(dir.path() / "other", 600);
  auto r = run_process({bin("crucible"), "network", "verify", manifest_, "--data", other});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("MISMATCH  dataset " + other));
  EXPECT_THAT(r.out, HasSubstr("protocol.dataset_sha256"));
  EXPECT_THAT(r.out, Not(HasSubstr("can join")));

  // A manifest whose init_seed was changed by hand after init: its genesis digest no longer holds.
  std::string text = read(manifest_);
  text = std::regex_replace(text, std::regex("init_seed = 1\n"), "init_seed = 2\n");
  const std::string edited = dir.write("edited.toml", text);
  auto g = run_process({bin("crucible"), "network", "verify", edited});
  EXPECT_EQ(g.exit_code, 2) << g.out;
  EXPECT_THAT(g.out, HasSubstr("MISMATCH  genesis model"));
}

TEST_F(NetworkManifestTest, AManifestStatesEveryValue) {
  const std::string partial = dir.write("partial.toml", "[network]\nname = \"x\"\n[protocol]\nblocks_per_window = 5\n");
  auto r = run_process({bin("crucible"), "network", "show", partial});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("does not set chain.chain_id"));
  EXPECT_THAT(r.err, HasSubstr("model.vocab_size"));
  EXPECT_THAT(r.err, Not(HasSubstr("protocol.blocks_per_window,")));
  // A node key has no place in a manifest.
  const std::string stray = dir.write("stray.toml", read(manifest_) + "[miner]\ninner_steps = 3\n");
  auto s = run_process({bin("crucible"), "network", "show", stray});
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_THAT(s.err, HasSubstr("miner"));
}

TEST_F(NetworkManifestTest, ANodeConfigTakesTheManifestsValuesAndMayNotChangeThem) {
  auto r = show_config({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("samples_per_window = 16  # " + manifest_));
  EXPECT_THAT(r.out, HasSubstr("manifest = \"" + manifest_ + "\"  # flag --network"));

  // The same value again is no conflict (the model preset beside the manifest).
  EXPECT_EQ(show_config({"--config", tiny_}).exit_code, 0);

  auto conflict = show_config({"--set", "protocol.samples_per_window=32", "--set", "model.dim=64"});
  EXPECT_EQ(conflict.exit_code, 2);
  EXPECT_THAT(conflict.err, HasSubstr("differs from the network manifest " + manifest_));
  EXPECT_THAT(conflict.err,
              HasSubstr("protocol.samples_per_window = 32 from flag --set protocol.samples_per_window, the "
                        "network's is 16 (" +
                        manifest_ + " line"));
  EXPECT_THAT(conflict.err, HasSubstr("model.dim = 64"));

  // Named in a config file instead of the flag, with a conflicting key in the same file.
  const std::string node =
      dir.write("node.toml", "[network]\nmanifest = \"" + manifest_ + "\"\n[model]\nseq_len = 64\n");
  auto from_file = run_process({bin("crucible"), "config", "show", "--role", "miner", "--config", node});
  EXPECT_EQ(from_file.exit_code, 2);
  EXPECT_THAT(from_file.err, HasSubstr("model.seq_len = 64 from " + node + " line 4"));
}

}  // namespace
}  // namespace crucible
