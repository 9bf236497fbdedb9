// The network at scale (issue #26): 32 miner uids judged by one real
// crucible-validator: two real crucible-miner processes and a swarm of 30
// uids played by this test (bench/swarm.h: each its own key, store and
// published location, each window a signed packet of its own-data update at
// the genesis model, committed in the slot and revealed after it, as a
// miner does). Every upload of every window must pass every check, every uid
// be evaluated in turn, weights be posted, the training miners' updates join
// the aggregated set, no window take the validator longer than the
// window, and nothing be left running. The validator evaluates up to 20 a
// window, as many as start in the first half of the window (its default
// eval_window_share): a slower machine evaluates fewer a window, and still
// ends each window in its time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "crucible/common/model_config.h"
#include "crucible/protocol/options.h"
#include "crucible/validator/gauntlet.h"
#include "crucible/validator/state.h"
#include "crucible/validator/validator_options.h"
#include "e2e/network_base.h"
#include "swarm.h"

namespace crucible {
namespace {

using e2e::NetworkBase;
using ::testing::HasSubstr;

constexpr int kSwarm = 30;
constexpr int kWindows = 8;  // up to 20 of 32 evaluated a window: every uid in turn, about five times

class ScaleTest : public NetworkBase {
 protected:
  void SetUp() override {
    blocks_per_window_ = 12;
    // Every assigned sample evaluated (16; the default is 8), without the
    // gradient check (the default): the cost of the half-size evaluations
    // with the gradient measured, which this test ran until 2026-12-07, at
    // √2 the own-data z per evaluation.
    eval_batches_ = e2e::kSamples;
    eval_window_share_ = validator::ValidatorOptions{}.eval_window_share;  // the default: half the window
    // About five evaluations a uid in eight windows: any accumulated z
    // above chance counts as trust (as in AttackTest), not the default bar
    // of 2 (see below).
    protocol_extra_ = "min_evaluations = 2\ntrust_z = 0.0";
    start_network();
  }
};

// The validator's "window done" lines: window -> seconds.
std::map<std::uint64_t, double> window_seconds(const std::string& log) {
  std::map<std::uint64_t, double> out;
  const std::regex line(R"(window done window=(\d+) .* seconds=([0-9.]+))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    out[std::stoull((*it)[1].str())] = std::stod((*it)[2].str());
  }
  return out;
}

// The validator's "window done" line of window w (its steps' seconds), for
// a failure's message.
std::string window_done_line(const std::string& log, std::uint64_t w) {
  const std::string key = fmt::format("window done window={} ", w);
  const auto at = log.find(key);
  return at == std::string::npos ? std::string("(no line)") : log.substr(at, log.find('\n', at) - at);
}

// Every uid in the aggregated set of some window ("set=" of the "window
// done" lines).
std::set<std::uint16_t> set_members(const std::string& log) {
  std::set<std::uint16_t> out;
  const std::regex line(R"(window done window=\d+ .* set=([0-9,]*) )");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    std::stringstream uids((*it)[1].str());
    for (std::string uid; std::getline(uids, uid, ',');) {
      if (!uid.empty()) out.insert(static_cast<std::uint16_t>(std::stoul(uid)));
    }
  }
  return out;
}

TEST_F(ScaleTest, ThirtyTwoMinersAllCheckedAndEvaluatedInTurnAndEveryWindowFitsItsLength) {
  swarm::SwarmOptions so;
  so.dir = dir_.path() / "swarm";
  so.chain = testing::chain_options(*chain_);
  so.protocol.blocks_per_window = blocks_per_window_;
  so.protocol.upload_slot_s = e2e::kUploadSlotS;
  so.protocol.clock_skew_s = e2e::kClockSkewS;
  so.protocol.reveal_s = 1.0;
  so.protocol.samples_per_window = e2e::kSamples;
  auto model = model::load_model_config(std::string(CRUCIBLE_SOURCE_DIR) + "/configs/models/tiny.toml");
  ASSERT_TRUE(model.is_ok());
  so.model = *model;
  so.data = data_;
  so.miners = kSwarm;
  so.updates = swarm::Updates::kOwnGradient;
  // Load, not training: each swarm uid's update from 4 of its 16 samples
  // (still its own data's direction), so that preparing eight windows of 30
  // takes about a minute on two cores, not three.
  so.gradient_samples = 4;
  so.lead_store = dir_.path() / "validator-store";
  auto created = swarm::Swarm::create(so);
  ASSERT_TRUE(created.is_ok()) << created.status();
  auto& swarm = *created;
  const auto swarm_uids = swarm->uids();
  ASSERT_EQ(swarm_uids.size(), static_cast<std::size_t>(kSwarm));

  // The swarm's updates, computed before the nodes start: one window's to
  // learn how long that takes, then the windows that far ahead.
  auto reader = chain::EvmChain::connect(chain::to_evm_options(testing::chain_options(*chain_)), std::nullopt);
  ASSERT_TRUE(reader.is_ok());
  auto window_now = [&] {
    auto head = (*reader)->block_number();
    EXPECT_TRUE(head.is_ok());
    return head.is_ok() ? *head / blocks_per_window_ : 0;
  };
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(swarm->prepare(window_now() + 1, window_now() + 1).is_ok());
  const double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t first =
      window_now() + 2 + static_cast<std::uint64_t>(std::ceil(1.5 * one * kWindows / blocks_per_window_));
  const std::uint64_t last = first + kWindows - 1;
  ASSERT_TRUE(swarm->prepare(first, last).is_ok());
  std::fprintf(stderr, "ScaleTest: %d windows of 30 uids' updates prepared in %.0f s (one window %.1f s)\n", kWindows,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), one);
  ASSERT_LT(window_now(), first) << "preparing took longer than planned (" << one << " s a window)";
  auto validator = start_validator("validator", fmt::format("start_window = {}\nend_window = {}", first, last + 1));
  while (window_now() + 1 < first) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Eight inner steps over the window's 16 samples (each seen twice): an
  // update that helps its own samples more clearly than one pass does, for
  // the trust assertion below (docs/benchmarks.md, "Scale").
  auto a = start_miner(0, 100, 8);  // stopped at the end
  auto b = start_miner(1, 100, 8);
  std::atomic<bool> stop{false};
  Status swarm_status = Status::ok();
  std::thread player([&] { swarm_status = swarm->run(first, last, stop); });
  const int rc = validator->wait(static_cast<int>((kWindows + 6) * blocks_per_window_ * 1000 + 120'000));
  stop = true;
  player.join();
  EXPECT_TRUE(swarm_status.is_ok()) << swarm_status;
  const std::string log = validator->read_until("validator stopped", 5'000);
  ASSERT_EQ(rc, 0) << log;
  ASSERT_THAT(log, HasSubstr("posted weights")) << log;

  // Every window inside its length (12 one-second blocks).
  const auto seconds = window_seconds(log);
  EXPECT_EQ(seconds.size(), static_cast<std::size_t>(kWindows)) << log;
  for (const auto& [w, s] : seconds) {
    EXPECT_LT(s, blocks_per_window_) << "window " << w << ": " << window_done_line(log, w);
    std::fprintf(stderr, "ScaleTest: %s\n", window_done_line(log, w).c_str());  // evaluations and steps, for the record
  }
  // Every upload of every window valid: 30 from the swarm, 2 from the miners.
  const std::regex valid_line(R"(window done window=(\d+) uploads_valid=(\d+))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), valid_line); it != std::sregex_iterator(); ++it) {
    EXPECT_EQ(std::stoi((*it)[2].str()), kSwarm + 2) << "window " << (*it)[1].str();
  }

  // No upload of an honest uid was refused.
  {
    auto state = storage::StateStore::open((dir_.path() / "validator-state/db").string());
    ASSERT_TRUE(state.is_ok()) << state.status();
    auto reasons = rejections(**state);
    for (std::uint16_t u : swarm_uids) EXPECT_EQ(reasons[u], "") << "swarm uid " << u;
    for (std::size_t i = 0; i < honest_uids_.size(); ++i) {
      EXPECT_EQ(reasons[honest_uids_[i]], "") << "miner uid " << honest_uids_[i] << "\n"
                                              << (i == 0 ? a : b)->read_until("miner stopped", 100);
    }
  }

  // Every uid evaluated in turn: each at least once, and none fewer times
  // than a fair share less one (at 20 a window, each five times; at the 9
  // or 10 a window a slow machine fits in half its windows, two or three
  // times).
  auto db = storage::StateStore::open((dir_.path() / "validator-state/db").string());
  ASSERT_TRUE(db.is_ok()) << db.status();
  std::vector<std::uint16_t> all = swarm_uids;
  all.insert(all.end(), honest_uids_.begin(), honest_uids_.end());
  std::map<std::uint16_t, int> evaluations;
  int total = 0;
  for (std::uint16_t u : all) {
    auto v = (*db)->get(storage::Family::kRatings, validator::rating_key(u));
    ASSERT_TRUE(v.is_ok() && v->has_value()) << "uid " << u << " was never scored";
    evaluations[u] = nlohmann::json::parse(**v)["evaluations"].get<int>();
    total += evaluations[u];
  }
  const int fair = total / static_cast<int>(all.size());
  for (const auto& [u, n] : evaluations) {
    EXPECT_GE(n, std::max(1, fair - 1)) << "uid " << u << " (" << total << " evaluations in all)";
  }
  // Weights posted, and both training miners' updates helped (evidence above
  // 0) and joined the aggregated set in some window (their evidence reached
  // admit_ratio, against the window's best: §8's own test of "at or near
  // the best"), made on the network's model (sync: they kept up with the
  // lead's sets at this scale), and paid wherever trust allows. Evidence
  // itself is not held to a bar: the two miners train on different data, and
  // one window's own-data gain of one can be a twentieth of the other's
  // (0.0008 against 0.014), which halves the evidence of a miner that was
  // the window's best the window before. And each ends with weight: its
  // own-data z's accumulated above chance (trust_z 0 here). With every
  // assigned sample evaluated one evaluation's z measured 2.3 ± 1.2 (−0.1
  // to 4.4, 24 evaluations), so about five of them accumulate to about
  // 4.9, four standard deviations above 0; with three in six windows of the
  // half-size evaluations before 2026-12-07 (1.5 ± 1.2 each) a miner ended
  // at 0.5 (docs/benchmarks.md, "Scale").
  // The swarm's uids are load, not miners: their updates are genesis
  // gradients less the swarm's mean, by construction no help on random data.
  const auto in_a_set = set_members(log);
  auto chain_weights = onchain_weights(**reader);
  EXPECT_GE(chain_weights.posts, 2u);
  std::uint64_t weighted = 0;
  for (const auto& [u, v] : chain_weights.weights) weighted += v;
  EXPECT_GT(weighted, 0u);
  for (std::uint16_t u : honest_uids_) {
    const std::string rating = rating_json(**db, u);
    auto score = validator::score_from_json(nlohmann::json::parse(rating));
    ASSERT_TRUE(score.is_ok()) << score.status();
    EXPECT_GT(score->evidence, 0.0) << "training miner uid " << u << ": " << rating;
    EXPECT_TRUE(in_a_set.count(u)) << "training miner uid " << u << " never joined a set: " << rating;
    EXPECT_GE(score->sync, protocol::Options{}.scoring.admit_sync) << "training miner uid " << u << ": " << rating;
    EXPECT_GE(score->evaluations, 2) << "training miner uid " << u << ": " << rating;
    EXPECT_GT(validator::accumulated_own_z(*score), 0.0) << "training miner uid " << u << ": " << rating;
    EXPECT_GT(score->final_score, 0.0) << "training miner uid " << u << ": " << rating;
    EXPECT_GT(chain_weights.weights[u], 0u) << "training miner uid " << u << ": " << rating;
    // Printed for the record: weight and accumulated z, and each
    // evaluation's own-data z.
    std::fprintf(stderr, "ScaleTest: training miner uid %u: weight %llu, %s\n", u,
                 static_cast<unsigned long long>(chain_weights.weights[u]), rating.c_str());
    const std::regex evaluated(fmt::format(R"(evaluated window=(\d+) uid={} .* own_z=([-0-9.e]+))", u));
    for (auto it = std::sregex_iterator(log.begin(), log.end(), evaluated); it != std::sregex_iterator(); ++it) {
      std::fprintf(stderr, "ScaleTest: training miner uid %u: window %s own_z %s\n", u, (*it)[1].str().c_str(),
                   (*it)[2].str().c_str());
    }
  }
  for (auto* m : {a.get(), b.get()}) {
    m->signal(SIGTERM);
    EXPECT_EQ(m->wait(30'000), 0);
  }
}

}  // namespace
}  // namespace crucible
