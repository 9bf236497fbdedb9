// Reward against effort (issue #28): three honest crucible-miner processes
// on one network, alike but for their inner steps per window (1, 2 and 4:
// a quarter, half and all of what covers their assigned samples), beside
// the real validator on anvil. It prints each one's evidence, trust, final
// score and weight on chain; docs/validator.md tabulates them over seeds:
//   for s in 1 2 3; do CRUCIBLE_E2E_SEED=$s build/bin/e2e_tests --gtest_filter='EffortTest.*'; done
#include <gtest/gtest.h>

#include <cstdlib>

#include "e2e/network_base.h"

namespace crucible {
namespace {

std::uint64_t e2e_seed() {
  const char* s = std::getenv("CRUCIBLE_E2E_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 1;
}

class EffortTest : public e2e::NetworkBase {
 protected:
  void SetUp() override {
    blocks_per_window_ = 12;
    start_network();
    const auto& keys = chain_->dev_keys();
    honest_keys_.push_back(keys[4]);
    honest_uids_.push_back(testing::register_key(*chain_, keys[4]));
  }
};

double field(storage::StateStore& db, std::uint16_t uid, const char* name) {
  auto v = db.get(storage::Family::kRatings, validator::rating_key(uid));
  if (!v.is_ok() || !v->has_value()) return -1e9;
  return nlohmann::json::parse(**v).value(name, -1e9);
}

TEST_F(EffortTest, MoreInnerStepsEarnMore) {
  const std::uint64_t seed = e2e_seed();
  const int windows = e2e::kValidatorWindows + 2;
  auto validator =
      start_validator("validator", fmt::format("max_windows = {}\nrandom_seed = \"seed-{}\"", windows, seed));
  const int steps[] = {1, 2, 4};
  std::vector<std::unique_ptr<testing::Child>> miners;
  for (std::size_t i = 0; i < 3; ++i) miners.push_back(start_miner(i, windows + 2, steps[i]));
  ASSERT_EQ(validator->wait(600'000), 0) << validator->read_until("never", 100);
  for (auto& m : miners) m->signal(SIGINT);
  for (auto& m : miners) EXPECT_EQ(m->wait(60'000), 0);

  auto db = storage::StateStore::open((dir_.path() / "validator-state/db").string());
  ASSERT_TRUE(db.is_ok()) << db.status();
  auto reader = chain::EvmChain::connect(chain::to_evm_options(testing::chain_options(*chain_)), std::nullopt);
  ASSERT_TRUE(reader.is_ok());
  auto onchain = onchain_weights(**reader).weights;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::uint16_t uid = honest_uids_[i];
    std::printf(
        "seed %llu inner_steps %d uid %u: evidence %.3f bma %.3f judged %.0f sync %.3f final %.4f weight %llu\n",
        static_cast<unsigned long long>(seed), steps[i], uid, field(**db, uid, "evidence"), field(**db, uid, "bma"),
        field(**db, uid, "judged"), field(**db, uid, "sync"), NetworkBase::final_of(**db, uid),
        static_cast<unsigned long long>(onchain[uid]));
  }
  // Evidence (the gain of the update's direction at the common norm, over
  // the window's best) rises with the work; the final score, which trust's
  // noise can reorder between neighbours (docs/validator.md), at least from
  // a quarter to all of it.
  EXPECT_LT(field(**db, honest_uids_[0], "evidence"), field(**db, honest_uids_[1], "evidence"));
  EXPECT_LT(field(**db, honest_uids_[1], "evidence"), field(**db, honest_uids_[2], "evidence"));
  EXPECT_GT(NetworkBase::final_of(**db, honest_uids_[2]), NetworkBase::final_of(**db, honest_uids_[0]));
}

}  // namespace
}  // namespace crucible
