// A small network in one process (as PCCL's end-to-end tests): two miners
// and the validator as objects, each on its own thread, sharing a FakeChain
// whose blocks the test mines, with LocalStores on disk. The miners train
// and upload inside their slots; the validator gathers, evaluates, fixes the
// sets and advances its model; the miners apply the lead's sets. Seconds,
// not minutes, and no binaries.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "crucible/common/replica.h"
#include "crucible/common/retry.h"
#include "crucible/miner/miner_state.h"
#include "crucible/miner/node.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/storage/local_store.h"
#include "crucible/validator/node.h"
#include "crucible/validator/state.h"
#include "support/in_process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

namespace fs = std::filesystem;

protocol::Options network_protocol() {
  protocol::Options p;
  p.blocks_per_window = 4;
  p.upload_slot_s = 2;
  p.clock_skew_s = 0.5;
  p.samples_per_window = 4;
  return p;
}

TEST(InProcessNetwork, MinersAndTheValidatorRunWindowsTogether) {
  testing::TempDir dir;
  testing::write_token_dataset(dir.path() / "data");
  testing::FakeChain fake;
  const auto validator_key = testing::test_key(500);
  fake.add_neuron(validator_key, 1000, true);
  std::vector<chain::PrivateKey> miner_keys{testing::test_key(501), testing::test_key(502)};
  std::vector<std::uint16_t> miner_uids;
  for (const auto& k : miner_keys) miner_uids.push_back(fake.add_neuron(k));

  std::atomic<bool> stop{false};
  std::atomic<bool> mining{true};
  std::thread blocks([&] {  // 4 blocks a window, one every 250 ms
    while (mining.load()) {
      fake.mine(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  const std::uint64_t w0 = fake.head() / 4 + 1;  // the first whole window ahead

  std::vector<std::unique_ptr<miner::MinerNode>> miners;
  for (std::size_t i = 0; i < miner_keys.size(); ++i) {
    miner::MinerNodeOptions mo;
    mo.protocol = network_protocol();
    mo.chain.netuid = fake.netuid();
    mo.model = testing::tiny_model();
    mo.storage = testing::file_store(dir.path() / fmt::format("miner{}-store", i));
    mo.miner.data_dir = (dir.path() / "data").string();
    mo.miner.state_dir = (dir.path() / fmt::format("miner{}-state", i)).string();
    mo.miner.inner_steps = 2;
    mo.miner.micro_batch = 2;
    mo.miner.threads = 1;
    mo.miner.progress = "off";
    mo.miner.aggregate_wait_s = 1.5;
    mo.miner.max_windows = 3;
    auto node = miner::MinerNode::create(
        mo, miner_keys[i], testing::local_io(fake, miner_keys[i], dir.path() / fmt::format("miner{}-store", i)));
    ASSERT_TRUE(node.is_ok()) << node.status();
    miners.push_back(std::move(node).value());
  }
  validator::ValidatorNodeOptions vo;
  vo.protocol = network_protocol();
  vo.chain.netuid = fake.netuid();
  vo.model = testing::tiny_model();
  vo.storage = testing::file_store(dir.path() / "validator-store");
  vo.validator.data_dir = (dir.path() / "data").string();
  vo.validator.state_dir = (dir.path() / "validator-state").string();
  vo.validator.eval_batches = 2;
  vo.validator.threads = 1;
  vo.validator.weights_every = 1;
  vo.validator.start_window = static_cast<std::int64_t>(w0);
  vo.validator.end_window = static_cast<std::int64_t>(w0 + 2);
  auto validator = validator::ValidatorNode::create(
      vo, validator_key, testing::local_io(fake, validator_key, dir.path() / "validator-store"));
  ASSERT_TRUE(validator.is_ok()) << validator.status();

  // Wait for w0 to begin so that every node starts on a whole window.
  while (fake.head() / 4 < w0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<std::thread> threads;
  std::vector<Status> results(miners.size() + 1, Status::ok());
  for (std::size_t i = 0; i < miners.size(); ++i) threads.emplace_back([&, i] { results[i] = miners[i]->run(stop); });
  threads.emplace_back([&] { results.back() = (*validator)->run(stop); });
  std::thread watchdog([&] {  // never hang the suite
    for (int i = 0; i < 1200 && !stop.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  for (auto& t : threads) t.join();
  const bool timed_out = stop.exchange(true);
  watchdog.join();
  mining = false;
  blocks.join();
  ASSERT_FALSE(timed_out) << "the nodes did not finish within 120 s";
  for (const auto& r : results) EXPECT_TRUE(r.is_ok()) << r;

  // The validator processed w0 and w0+1: both miners' uploads valid, in the sets.
  storage::StateStore& db = (*validator)->state();
  for (std::uint64_t w = w0; w < w0 + 2; ++w) {
    for (std::uint16_t uid : miner_uids) {
      auto row = db.get(storage::Family::kWindowScores, validator::window_uid_key(w, uid));
      ASSERT_TRUE(row.is_ok() && row->has_value()) << "window " << w << " uid " << uid;
      auto r = validator::uid_result_from_json(nlohmann::json::parse(**row));
      ASSERT_TRUE(r.is_ok());
      EXPECT_TRUE(r->valid) << "window " << w << " uid " << uid << ": " << r->detail;
    }
  }
  auto own = storage::LocalStore::open(dir.path() / "validator-store");
  ASSERT_TRUE(own.is_ok());
  auto first = (*own)->get(protocol::keys::aggregate(w0), protocol::kMaxSetBytes);
  ASSERT_TRUE(first.is_ok()) << first.status();
  auto set = protocol::decode_set(first->data);
  ASSERT_TRUE(set.is_ok());
  EXPECT_EQ(set->uids, miner_uids);
  EXPECT_EQ((*validator)->model_window(), w0 + 1);

  // The miners applied the lead's set of w0 (their third window waited for it).
  miners.clear();  // releases the state folders' locks
  for (std::size_t i = 0; i < miner_keys.size(); ++i) {
    auto sd = miner::StateDir::open(dir.path() / fmt::format("miner{}-state", i));
    ASSERT_TRUE(sd.is_ok()) << sd.status();
    auto r = model::Replica::create(testing::tiny_model(), {"cpu", 1}, 1);
    ASSERT_TRUE(r.is_ok());
    auto loaded = sd->load((*r)->specs());
    ASSERT_TRUE(loaded.is_ok() && loaded->has_value()) << loaded.status();
    const miner::MinerState& st = (*loaded)->second;
    ASSERT_TRUE(st.applied_window.has_value()) << "miner " << i;
    EXPECT_GE(*st.applied_window, w0) << "miner " << i;
    EXPECT_GE(st.global_step, 1u);
  }
}

}  // namespace
}  // namespace crucible
