// Processes that behave (issue: children that behave): `crucible chain up`,
// a miner and a validator, each writing into a pipe whose reader has gone
// (`| head`, a `| tee` stopped with Ctrl-C), stop cleanly on SIGINT with
// exit code 0, and leave nothing running: not anvil, not a node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e/network_base.h"

namespace crucible {
namespace {

using ::testing::HasSubstr;

class SignalsTest : public e2e::NetworkBase {
 protected:
  void SetUp() override { start_network(); }
};

TEST_F(SignalsTest, ChainMinerAndValidatorBehindAClosedPipeStopOnCtrlCAndLeaveNothing) {
  const std::string chain_dir = (dir_.path() / "chain-up").string();
  testing::Child up(
      {"/bin/bash", "-c",
       fmt::format("exec '{}' chain up --port 0 --block-time 1 --dir '{}' 2>&1", testing::bin("crucible"), chain_dir)});
  ASSERT_THAT(up.read_until("Ctrl-C stops it.", 20'000), HasSubstr("local chain ready"));
  ASSERT_FALSE(testing::processes_mentioning(chain_dir).empty());  // anvil, with its --config-out under chain_dir

  auto validator = start_validator("validator", "max_windows = 1000");
  auto miner = start_miner(0);
  ASSERT_THAT(validator->read_until("score API listening", 60'000), HasSubstr("score API listening"));
  ASSERT_THAT(miner->read_until("trained window", 90'000), HasSubstr("trained window"));

  // The readers go away; the three keep writing into the void for a while.
  up.close_output();
  validator->close_output();
  miner->close_output();
  std::this_thread::sleep_for(std::chrono::seconds(3));

  for (auto* c : {&up, validator.get(), miner.get()}) c->signal(SIGINT);
  EXPECT_EQ(up.wait(30'000), 0) << "crucible chain up";
  EXPECT_EQ(validator->wait(60'000), 0) << "crucible-validator";
  EXPECT_EQ(miner->wait(60'000), 0) << "crucible-miner";
  // Nothing started from this test's folder is left: not anvil, not a node
  // (only the chain this test itself runs for the nodes).
  auto left = testing::processes_mentioning(dir_.path().string());
  std::erase(left, chain_->pid());
  EXPECT_THAT(left, ::testing::IsEmpty());
}

}  // namespace
}  // namespace crucible
