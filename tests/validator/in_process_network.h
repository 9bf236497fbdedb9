// The in-process network's fixture (tests/validator/in_process_network_test.cpp
// says what it is): a FakeChain whose blocks a thread mines every 250 ms of
// virtual time (support/virtual_clock.h: time moves only while every node
// sleeps), miners and validators as objects on their own threads,
// LocalStores on disk.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <thread>

#include "crucible/chain/keccak.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/common/file_io.h"
#include "crucible/common/model.h"
#include "crucible/common/replica.h"
#include "crucible/common/retry.h"
#include "crucible/miner/miner_state.h"
#include "crucible/miner/node.h"
#include "crucible/miner/rank_worker.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/checkpoint_pointer.h"
#include "crucible/protocol/fingerprint.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/storage/fault_store.h"
#include "crucible/storage/local_store.h"
#include "crucible/validator/gauntlet.h"
#include "crucible/validator/node.h"
#include "crucible/validator/state.h"
#include "support/in_process.h"
#include "support/process.h"
#include "support/scripted_http.h"
#include "support/temp_dir.h"
#include "support/virtual_clock.h"

namespace crucible::testing_network {

namespace fs = std::filesystem;

// Blocks every 250 ms, 12 a window: 3 s windows. The FakeChain stamps
// blocks in whole seconds, so a slot starts up to 1 s before its block is
// seen: the commitment slot is 1.25 s (+ 0.5 s skew), the reveal 0.25 s.
constexpr std::uint64_t kBlocksPerWindow = 12;

inline protocol::Options network_protocol(std::uint64_t blocks_per_window = kBlocksPerWindow) {
  protocol::Options p;
  // Synthetic random tokens: updates do not help beyond noise, so admission
  // by help would leave every set empty; these tests are about liveness.
  p.scoring.admit_ratio = -1e9;
  p.blocks_per_window = blocks_per_window;
  p.upload_slot_s = 1.25;
  p.clock_skew_s = 0.5;
  p.reveal_s = 0.25;
  p.samples_per_window = 4;
  return p;
}

// The seed of the learning tests (the genesis model and the validator's
// private choices): CRUCIBLE_E2E_SEED, default 1.
inline std::uint64_t e2e_seed() {
  const char* env = std::getenv("CRUCIBLE_E2E_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 1;
}

// The chain, two miners and the validator, each node on its own thread.
class InProcessNetwork : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_token_dataset(dir_.path() / "data");
    fake_.use_clock(clock_);
    fake_.add_neuron(validator_key_, 1000, true);
    fake_.add_neuron(follower_key_, 10, true);
    for (const auto& k : miner_keys_) miner_uids_.push_back(fake_.add_neuron(k));
    blocks_ = std::thread([this, ticket = clock_->counted()] {  // one block every 250 ms
      do {
        fake_.mine(1);
      } while (clock_->sleep(std::chrono::milliseconds(250), stop_mining_));
    });
    w0_ = fake_.head() / blocks_per_window_ + 1;  // the first whole window ahead
  }
  void TearDown() override {
    stop_mining_ = true;
    if (blocks_.joinable()) blocks_.join();
  }

  // Miner i; `io` may replace how it opens peers' stores.
  // The network's sections of a node's options: its store and state
  // folders under `name`.
  template <class NodeOptions>
  NodeOptions node_options(const std::string& name) {
    NodeOptions o;
    o.protocol = network_protocol(blocks_per_window_);
    o.chain.netuid = fake_.netuid();
    o.model = model_;
    o.storage = testing::file_store(dir_.path() / (name + "-store"));
    return o;
  }
  miner::MinerNodeOptions miner_options(const std::string& name) {
    auto mo = node_options<miner::MinerNodeOptions>(name);
    mo.miner.data_dir = data_dir_.string();
    mo.miner.state_dir = (dir_.path() / (name + "-state")).string();
    return mo;
  }
  validator::ValidatorNodeOptions validator_options(const std::string& name) {
    auto vo = node_options<validator::ValidatorNodeOptions>(name);
    vo.validator.data_dir = data_dir_.string();
    vo.validator.state_dir = (dir_.path() / (name + "-state")).string();
    return vo;
  }

  void add_miner(std::size_t i, std::uint32_t windows, protocol::StoreOpener opener = nullptr,
                 const std::function<void(miner::MinerNodeOptions&)>& tune = nullptr) {
    miner::MinerNodeOptions mo = miner_options(fmt::format("miner{}", i));
    mo.miner.inner_steps = 2;
    mo.miner.micro_batch = 2;
    mo.miner.threads = 1;
    mo.miner.progress = "off";
    mo.miner.aggregate_wait_s = 1.5;
    mo.miner.max_windows = windows;
    if (tune) tune(mo);
    auto io = testing::local_io(fake_, miner_keys_[i], dir_.path() / fmt::format("miner{}-store", i), clock_);
    if (opener) io.open_peer_store = std::move(opener);
    auto node = miner::MinerNode::create(mo, miner_keys_[i], std::move(io));
    ASSERT_TRUE(node.is_ok()) << node.status();
    miners_.push_back(std::move(node).value());
  }

  // The lead; with `follower`, a validator of less stake that follows it.
  void add_validator(std::uint64_t windows, std::uint32_t checkpoint_every = 1000, bool follower = false,
                     protocol::StoreOpener opener = nullptr,
                     const std::function<void(validator::ValidatorNodeOptions&)>& tune = nullptr) {
    const std::string name = follower ? "follower" : "validator";
    const chain::PrivateKey& key = follower ? follower_key_ : validator_key_;
    validator::ValidatorNodeOptions vo = validator_options(name);
    vo.validator.eval_batches = 2;
    vo.validator.threads = 1;
    vo.validator.observe_interval_s = 0.1;  // slots of 1.25 s
    vo.validator.weights_every = 1;
    vo.validator.checkpoint_every = checkpoint_every;
    vo.validator.start_window = static_cast<std::int64_t>(w0_);
    vo.validator.end_window = static_cast<std::int64_t>(w0_ + windows);
    if (tune) tune(vo);
    auto io = testing::local_io(fake_, key, dir_.path() / (name + "-store"), clock_);
    if (opener) io.open_peer_store = std::move(opener);
    auto v = validator::ValidatorNode::create(vo, key, std::move(io));
    ASSERT_TRUE(v.is_ok()) << v.status();
    (follower ? follower_ : validator_) = std::move(v).value();
  }

  // A store for uid 0 (the lead's stake) that the test fills, published as
  // its commitment: the test plays the lead.
  std::unique_ptr<storage::LocalStore> lead_store() {
    const fs::path lead = dir_.path() / "lead-store";
    fs::create_directories(lead);
    fake_.set_commitment_of(0, storage::encode_location(testing::file_store(lead)));
    auto store = storage::LocalStore::open(lead);
    EXPECT_TRUE(store.is_ok()) << store.status();
    return store.is_ok() ? std::move(store).value() : nullptr;
  }

  // Runs every node from the start of w0 until each has stopped (120 s of
  // real time at most).
  void run() {
    const std::atomic<bool> never{false};
    while (fake_.head() / blocks_per_window_ < w0_) clock_->sleep(std::chrono::milliseconds(50), never);
    std::atomic<bool> stop{false};
    std::vector<std::function<Status()>> nodes;
    for (auto& m : miners_) nodes.push_back([&] { return m->run(stop); });
    if (validator_) nodes.push_back([&] { return validator_->run(stop); });
    if (follower_) nodes.push_back([&] { return follower_->run(stop); });
    std::vector<Status> results(nodes.size(), Status::ok());
    std::thread watchdog([&] {  // never hang the suite
      for (int i = 0; i < 1200 && !stop.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      stop = true;
    });
    clock_->run_threads(nodes.size(), [&](std::size_t i) { results[i] = nodes[i](); });
    const bool timed_out = stop.exchange(true);
    watchdog.join();
    ASSERT_FALSE(timed_out) << "the nodes did not finish within 120 s";
    for (const auto& r : results) EXPECT_TRUE(r.is_ok()) << r;
  }

  // Miner i's committed state (the nodes must be gone: it releases the lock).
  miner::MinerState miner_state(std::size_t i) {
    auto sd = miner::StateDir::open(dir_.path() / fmt::format("miner{}-state", i));
    EXPECT_TRUE(sd.is_ok()) << sd.status();
    auto r = model::Replica::create(model_, {"cpu", 1}, 1);
    EXPECT_TRUE(r.is_ok());
    auto loaded = sd->load((*r)->specs());
    EXPECT_TRUE(loaded.is_ok() && loaded->has_value()) << loaded.status();
    if (!loaded.is_ok() || !loaded->has_value()) return {};
    return (*loaded)->second;
  }

  // Real English text (the Brown corpus, vocabulary 512, as the e2e
  // networks and the demo use) and a model small enough for 3-s windows.
  void use_brown() {
    data_dir_ = testing::prepare_brown(dir_.path() / "brown");
    model_.vocab_size = 512;
    model_.dim = 32;
    model_.hidden_dim = 64;
    model_.seq_len = 32;
  }
  // Admission by help, as a network runs it, on 16 samples a window.
  static void learnable(protocol::Options& p, std::uint64_t seed) {
    p.scoring = protocol::ScoringParams{};
    p.samples_per_window = 16;
    p.init_seed = seed;
  }
  // Miner i training `inner_steps` × micro-batch 4 a window with the e2e
  // networks' inner lr and no warm-up.
  void add_learning_miner(std::size_t i, std::uint32_t windows, std::uint64_t seed, std::uint32_t inner_steps) {
    add_miner(i, windows, nullptr, [&](miner::MinerNodeOptions& mo) {
      learnable(mo.protocol, seed);
      mo.miner.inner_steps = inner_steps;
      mo.miner.micro_batch = 4;
      mo.miner.lr = 0.003;
      mo.miner.warmup_steps = 0;
    });
  }
  // The lead, evaluating every uid on all of its samples (the own-data z's power).
  void add_learning_validator(std::uint64_t windows, std::uint64_t seed) {
    add_validator(windows, 1000, false, nullptr, [&](validator::ValidatorNodeOptions& vo) {
      learnable(vo.protocol, seed);
      vo.validator.eval_batches = 16;
      vo.validator.random_seed = fmt::format("fair-{}", seed);
    });
  }
  // Every miner's upload valid in windows w0.. w0+windows-1, and all of
  // them in the lead's set of w0.
  void expect_every_miner_valid_and_in_the_first_set(std::uint64_t windows) {
    storage::StateStore& db = validator_->state();
    for (std::uint64_t w = w0_; w < w0_ + windows; ++w) {
      for (std::uint16_t uid : miner_uids_) {
        auto row = db.get(storage::Family::kWindowScores, validator::window_uid_key(w, uid));
        ASSERT_TRUE(row.is_ok() && row->has_value()) << "window " << w << " uid " << uid;
        auto r = validator::uid_result_from_json(nlohmann::json::parse(**row));
        ASSERT_TRUE(r.is_ok());
        EXPECT_TRUE(r->valid) << "window " << w << " uid " << uid << ": " << r->detail;
      }
    }
    auto own = storage::LocalStore::open(dir_.path() / "validator-store");
    ASSERT_TRUE(own.is_ok());
    auto first = (*own)->get(protocol::keys::aggregate(w0_), protocol::kMaxSetBytes);
    ASSERT_TRUE(first.is_ok()) << first.status();
    auto set = protocol::decode_set(first->data);
    ASSERT_TRUE(set.is_ok()) << set.status();
    EXPECT_EQ(set->uids, miner_uids_);
  }

  // The validator's ratings, by uid.
  std::map<std::uint16_t, validator::MinerScore> ratings() {
    std::map<std::uint16_t, validator::MinerScore> scores;
    auto rows = validator_->state().scan(storage::Family::kRatings, "uid/");
    EXPECT_TRUE(rows.is_ok()) << rows.status();
    if (!rows.is_ok()) return scores;
    for (const auto& [k, v] : *rows) {
      const auto uid = validator::uid_of_rating_key(k);
      auto score = validator::score_from_json(nlohmann::json::parse(v.begin(), v.end()));
      EXPECT_TRUE(uid && score.is_ok()) << k << ": " << score.status();
      if (uid && score.is_ok()) scores[*uid] = *score;
    }
    return scores;
  }

  std::uint64_t blocks_per_window_ = kBlocksPerWindow;  // a suite may set it before SetUp
  testing::TempDir dir_;
  // Virtual time from the wall clock's second (the genesis block's stamp);
  // the test's own thread is counted until run() waits for the nodes.
  std::shared_ptr<testing::VirtualClock> clock_ = testing::VirtualClock::create(std::floor(unix_seconds()));
  Clock::Ticket setting_up_ = clock_->counted();
  std::filesystem::path data_dir_ = dir_.path() / "data";
  model::ModelConfig model_ = testing::tiny_model();
  testing::FakeChain fake_;
  chain::PrivateKey validator_key_ = testing::test_key(500);
  chain::PrivateKey follower_key_ = testing::test_key(503);
  std::vector<chain::PrivateKey> miner_keys_{testing::test_key(501), testing::test_key(502)};
  std::vector<std::uint16_t> miner_uids_;
  std::atomic<bool> stop_mining_{false};
  std::thread blocks_;
  std::uint64_t w0_ = 0;
  std::vector<std::unique_ptr<miner::MinerNode>> miners_;
  std::unique_ptr<validator::ValidatorNode> validator_;
  std::unique_ptr<validator::ValidatorNode> follower_;
};

}  // namespace crucible::testing_network
