// The validator in process: its window steps and the whole node on a
// FakeChain, LocalStores on disk and RocksDB, with no binaries and no anvil.
// Every gather rejection one by one, copy marking, the lead's set, the
// weights log across simulated crashes, and restore after a restart.
#include "crucible/validator/window.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "crucible/chain/fault_chain.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/common/dataset.h"
#include "crucible/common/file_io.h"
#include "crucible/common/log.h"
#include "crucible/common/retry.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/protocol/fingerprint.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/storage/fault_store.h"
#include "crucible/storage/local_store.h"
#include "crucible/validator/node.h"
#include "support/fake_chain.h"
#include "support/in_process.h"
#include "support/temp_dir.h"

namespace crucible::validator {
namespace {

namespace fs = std::filesystem;
namespace keys = protocol::keys;
using protocol::Rejection;

constexpr std::uint32_t kSamples = 4;

template <typename T>
T take(Result<T> r) {
  EXPECT_TRUE(r.is_ok()) << r.status();
  return std::move(r).value();
}

chain::PrivateKey key_of(std::uint32_t n) { return testing::test_key(n); }
using testing::tiny_model;

// A clock the test sets: the observer's polls happen when the test says.
class SteppedClock final : public Clock {
 public:
  double unix_seconds() override { return now.load(); }
  bool sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) override {
    return sleep_unless_stopped(d, stop);
  }
  std::atomic<double> now{0};
};

// A clock each read of which is a second later than the last: a deadline
// falls between two of the evaluate step's reads, as on a slow machine,
// with nothing in the test timed.
class TickingClock final : public Clock {
 public:
  double unix_seconds() override { return now += 1.0; }
  bool sleep(std::chrono::milliseconds d, const std::atomic<bool>& stop) override {
    return sleep_unless_stopped(d, stop);
  }
  double now = 0;
};

struct Miner {
  chain::PrivateKey key;
  std::uint16_t uid = 0;
  fs::path root;
  std::shared_ptr<storage::ObjectStore> store;
};

class ValidatorInProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_token_dataset(dir_.path() / "data");
    auto ds = data::Dataset::open(dir_.path() / "data", "train");
    ASSERT_TRUE(ds.is_ok()) << ds.status();
    dataset_.emplace(std::move(*ds));
    o_.model = tiny_model();
    o_.protocol.blocks_per_window = 2;
    o_.protocol.upload_slot_s = 10;
    o_.protocol.clock_skew_s = 1;
    o_.protocol.reveal_s = 2;
    o_.protocol.samples_per_window = kSamples;
    o_.chain.netuid = fake_.netuid();
    o_.validator.data_dir = (dir_.path() / "data").string();
    o_.validator.state_dir = (dir_.path() / "validator").string();
    o_.validator.eval_batches = 2;
    o_.validator.weights_every = 1;
    o_.validator.checkpoint_every = 1000;
    o_.validator.aggregate_wait_s = 1;
    o_.validator.random_seed = "test";
    // The uploads here are random values on random tokens: they never help
    // beyond noise, so admission by help would leave every set empty. These
    // tests are about the window's mechanics; admission has its own tests
    // (gauntlet_test, and the real binaries in e2e/demo_test).
    o_.protocol.scoring.admit_ratio = -1e9;
    o_.protocol.scoring.admit_sync = 0;  // nor do they carry a fingerprint of the model
    o_.storage.url = "file://" + (dir_.path() / "validator-store").string();
    validator_uid_ = fake_.add_neuron(validator_key_, 1000, true);
    for (std::size_t i = 0; i < replica_specs().size(); ++i) specs_.push_back(replica_specs()[i]);
  }

  const std::vector<model::TensorSpec>& replica_specs() {
    if (!replica_) replica_ = take(model::Replica::create(tiny_model(), {"cpu", 1}, o_.protocol.init_seed));
    return replica_->specs();
  }

  Miner& add_miner(bool commit = true) {
    Miner m{key_of(static_cast<std::uint32_t>(miners_.size() + 1)), 0, {}, nullptr};
    m.uid = fake_.add_neuron(m.key);
    m.root = dir_.path() / ("miner-" + std::to_string(m.uid));
    m.store = take(storage::LocalStore::open(m.root));
    if (commit) {
      storage::StorageOptions so;
      so.url = "file://" + m.root.string();
      fake_.set_commitment_of(m.uid, storage::encode_location(so));
    }
    miners_.push_back(std::move(m));
    return miners_.back();
  }

  // Mines through window `w`'s slot block, stamped `age_s` seconds ago.
  void mine_through(std::uint64_t block, double age_s) {
    const auto t = static_cast<std::uint64_t>(crucible::unix_seconds() - age_s);
    while (fake_.head() < block) fake_.mine(1, t);
  }

  packet::Packet honest_packet(const Miner& m, std::uint64_t w, float scale, std::uint64_t seed) {
    packet::Packet p;
    p.window = w;
    p.uid = m.uid;
    auto idx = dataset_->assignment(m.uid, w, kSamples, static_cast<std::uint64_t>(o_.model.seq_len));
    p.sample_digest = dataset_->digest(*idx, static_cast<std::uint64_t>(o_.model.seq_len));
    std::mt19937 rng(static_cast<std::uint32_t>(seed));
    std::normal_distribution<float> normal(0.0f, scale);
    for (const auto& s : specs_) {
      std::vector<float> x(static_cast<std::size_t>(s.numel()));
      for (float& v : x) v = normal(rng);
      p.tensors.push_back(*kernels::to_packet_tensor(s.name, s.shape, *kernels::compress(x, s.shape, 1)));
    }
    return p;
  }

  // The validator's observer, played by the test: every key of windows
  // 0..15 of every miner, polled whenever the test says (observe(at)).
  Observer& observer() {
    if (!observer_) {
      ObserverOptions oo;
      oo.interval_s = 0.5;
      oo.max_latency_s = 5;  // the stepped clock does not move during a poll
      observer_ = std::make_unique<Observer>(oo, clock_);
    }
    return *observer_;
  }
  void observe(double at) {
    EXPECT_GE(at, clock_->now.load()) << "observations go forward in time";
    clock_->now = at;
    std::vector<Watched> stores;
    for (const auto& m : miners_) stores.push_back(Watched{m.uid, m.store});
    observer().watch(0, 15, std::move(stores));
    observer().poll_round();
  }

  // Commits to `bytes` at time `at` (Unix seconds) as this validator's
  // observer sees it (absent at at - 0.5, there at `at`), and reveals them
  // at once. Both files are dated a day earlier: a store's dates prove nothing.
  void put_gradient(const Miner& m, std::uint64_t w, const Bytes& bytes, double at) {
    commit(m, w, chain::keccak256(bytes), at);
    reveal(m, w, bytes);
  }
  void commit(const Miner& m, std::uint64_t w, const chain::Hash32& hash, double at) {
    observe(std::max(clock_->now.load(), at - 0.5));  // a read before: it was not there yet
    ASSERT_TRUE(m.store->put(keys::commitment(w), ByteSpan(hash.data(), hash.size())).is_ok());
    back_date(m.root / keys::commitment(w), 24);
    observe(at);
  }
  void reveal(const Miner& m, std::uint64_t w, const Bytes& bytes) {
    ASSERT_TRUE(m.store->put(keys::gradient(w), bytes).is_ok());
    back_date(m.root / keys::gradient(w), 24);
  }
  static void back_date(const fs::path& file, int hours) {
    fs::last_write_time(file, std::chrono::file_clock::now() - std::chrono::hours(hours));
  }

  void upload(const Miner& m, std::uint64_t w, const packet::Packet& p, double at,
              const chain::PrivateKey* signer = nullptr) {
    auto sealed = chain::seal_packet(p, signer ? *signer : m.key);
    ASSERT_TRUE(sealed.is_ok()) << sealed.status();
    put_gradient(m, w, *sealed, at);
  }

  double slot_start_of(std::uint64_t w) {
    auto b = fake_.as(validator_key_)->block(protocol::WindowClock(o_.protocol).slot_block(w));
    return static_cast<double>(b->timestamp);
  }

  protocol::NodeIo io(std::shared_ptr<chain::Chain> chain = nullptr) {
    protocol::NodeIo io;
    io.chain = chain ? chain : fake_.as(validator_key_);
    io.store = take(storage::LocalStore::open(dir_.path() / "validator-store"));
    io.open_peer_store = protocol::default_store_opener(testing::local_peers());
    io.clock = system_clock();
    return io;
  }

  // The validator (its key, this chain and store) created and run through
  // its configured windows; null, with the failure reported, when either fails.
  std::unique_ptr<ValidatorNode> run_validator(const Observer* observed) {
    auto node = ValidatorNode::create(o_, validator_key_, io());
    if (!node.is_ok()) {
      ADD_FAILURE() << node.status();
      return nullptr;
    }
    const std::atomic<bool> stop{false};
    if (Status run = (*node)->run(stop, observed); !run.is_ok()) {
      ADD_FAILURE() << run;
      return nullptr;
    }
    return std::move(*node);
  }

  // One new miner's honest upload for window w, in its slot, gathered.
  std::vector<Upload> one_upload_gathered(std::uint64_t w, WindowContext& cx) {
    mine_through(protocol::WindowClock(o_.protocol).slot_block(w), 100);
    Miner& m = add_miner();
    upload(m, w, honest_packet(m, w, 0.01f, 1), slot_start_of(w) + 1);
    auto uploads = gather_once(w, cx);
    EXPECT_TRUE(uploads.is_ok()) << uploads.status();
    return uploads.is_ok() ? std::move(*uploads) : std::vector<Upload>{};
  }

  // The one evaluation evaluate makes of `uploads` (an invalid one when it
  // fails or makes another number).
  static Evaluation sole_evaluation(std::uint64_t w, std::vector<Upload>& uploads, const ValidatorState& st,
                                    WindowContext& cx) {
    auto evaluated = evaluate(w, uploads, st, cx);
    EXPECT_TRUE(evaluated.is_ok()) << evaluated.status();
    if (!evaluated.is_ok() || evaluated->input.evaluations.size() != 1) return Evaluation{};
    return evaluated->input.evaluations[0];
  }

  // Window w's gather on the current metagraph, as this test's observer saw
  // the slot, with no uid cooling down.
  Result<std::vector<Upload>> gather_once(std::uint64_t w, WindowContext& cx) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto mg, fake_.as(validator_key_)->metagraph(fake_.netuid()));
    std::map<std::uint16_t, std::uint64_t> cooldown;
    CRUCIBLE_ASSIGN_OR_RETURN(auto slot, read_slot(w, cx));
    return gather(w, slot, mg, cooldown, observer(), cx);
  }

  // Window w's gather (every upload must be valid) and each upload's sync
  // against `model`, as if each had been evaluated valid.
  std::map<std::uint16_t, double> sync_of_gathered(std::uint64_t w, const protocol::ChainState& model,
                                                   WindowContext& cx) {
    auto uploads = gather_once(w, cx);
    EXPECT_TRUE(uploads.is_ok()) << uploads.status();
    if (!uploads.is_ok()) return {};
    std::vector<Evaluation> evaluations;
    for (const auto& u : *uploads) {
      EXPECT_TRUE(u.valid()) << u.uid << ": " << u.detail;
      evaluations.push_back(Evaluation{u.uid, true, "", 4, 3, 4, 3});
    }
    return sync(w, evaluations, *uploads, model, cx);
  }

  // The pieces of a WindowContext, for calling steps one by one.
  struct Parts {
    protocol::NodeIo io;
    std::unique_ptr<protocol::PeerDirectory> peers;
    std::unique_ptr<storage::StateStore> db;
    std::unique_ptr<model::Replica> replica;
    std::unique_ptr<kernels::Backend> codec = kernels::cpu_backend(1);
    std::atomic<bool> stop{false};
  };
  std::unique_ptr<Parts> parts(std::shared_ptr<chain::Chain> chain = nullptr) {
    auto p = std::make_unique<Parts>();
    p->io = io(std::move(chain));
    p->peers = std::make_unique<protocol::PeerDirectory>(*p->io.chain, fake_.netuid(), p->io.open_peer_store);
    fs::create_directories(o_.validator.state_dir);
    p->db = take(storage::StateStore::open((fs::path(o_.validator.state_dir) / "db").string()));
    p->replica = take(model::Replica::create(o_.model, {"cpu", 1}, o_.protocol.init_seed));
    return p;
  }
  const data::Dataset* heldout() {
    if (!heldout_) {
      auto v = data::Dataset::open(dir_.path() / "data", "val");
      EXPECT_TRUE(v.is_ok()) << v.status();
      heldout_.emplace(std::move(*v));
    }
    return &*heldout_;
  }
  WindowContext context(Parts& p) {
    return WindowContext{WindowOptions::of(o_),
                         p.io,
                         protocol::WindowClock(o_.protocol),
                         *p.peers,
                         *p.db,
                         *dataset_,
                         heldout(),
                         *p.replica,
                         validator_uid_,
                         7,
                         p.stop,
                         *p.codec};
  }

  testing::TempDir dir_;
  testing::FakeChain fake_;
  ValidatorNodeOptions o_;
  std::optional<data::Dataset> dataset_;
  std::optional<data::Dataset> heldout_;
  std::unique_ptr<model::Replica> replica_;
  std::vector<model::TensorSpec> specs_;
  chain::PrivateKey validator_key_ = key_of(1000);
  std::uint16_t validator_uid_ = 0;
  std::deque<Miner> miners_;
  std::shared_ptr<SteppedClock> clock_ = std::make_shared<SteppedClock>();
  std::unique_ptr<Observer> observer_;
};

TEST_F(ValidatorInProcess, GatherRejectsEachKindOfBadUploadOneByOne) {
  const std::uint64_t w = 3;
  mine_through(protocol::WindowClock(o_.protocol).slot_block(w), 100);
  const double start = slot_start_of(w);
  const double in_slot = start + 2;
  // In the order this validator sees them.
  Miner& early = add_miner();
  upload(early, w, honest_packet(early, w, 0.01f, 3), start - 5);
  Miner& honest = add_miner();
  upload(honest, w, honest_packet(honest, w, 0.01f, 1), in_slot);
  Miner& missing = add_miner();
  Miner& late = add_miner();
  Miner& garbage = add_miner();
  put_gradient(garbage, w, Bytes(300, 0x42), in_slot);
  Miner& wrong_signer = add_miner();
  const auto stranger = key_of(999);
  upload(wrong_signer, w, honest_packet(wrong_signer, w, 0.01f, 4), in_slot, &stranger);
  Miner& wrong_header = add_miner();
  auto other_window = honest_packet(wrong_header, w, 0.01f, 5);
  other_window.window = w + 1;
  upload(wrong_header, w, other_window, in_slot);
  Miner& other_data = add_miner();
  auto od = honest_packet(other_data, w, 0.01f, 6);
  od.sample_digest = honest_packet(honest, w, 0.01f, 6).sample_digest;
  upload(other_data, w, od, in_slot);
  Miner& shape = add_miner();
  auto bent = honest_packet(shape, w, 0.01f, 7);
  {
    // A matrix claimed transposed: the same size on the wire, another shape.
    const auto& s = specs_[0];
    std::vector<std::int64_t> other{s.shape[1], s.shape[0]};
    std::vector<float> x(static_cast<std::size_t>(s.numel()), 0.01f);
    bent.tensors[0] = *kernels::to_packet_tensor(s.name, other, *kernels::compress(x, other, 1));
  }
  upload(shape, w, bent, in_slot);
  Miner& oversized = add_miner();
  {
    auto sealed = chain::seal_packet(honest_packet(oversized, w, 0.01f, 8), oversized.key);
    Bytes big = *sealed;
    big.resize(big.size() + 1000, 0);  // a valid packet with bytes after it: refused at HEAD
    put_gradient(oversized, w, big, in_slot);
  }
  Miner& overflow = add_miner();
  {
    auto bad = honest_packet(overflow, w, 0.01f, 9);
    bad.tensors[1].shift = 3e38f;  // each part finite, lookup + shift is not
    bad.tensors[1].lookup = {3e38f, 3e38f, 3e38f, 3e38f};
    upload(overflow, w, bad, in_slot);
  }
  Miner& corrupted = add_miner();  // committed in the slot; one byte of its packet then damaged in its store
  {
    const Bytes sealed = *chain::seal_packet(honest_packet(corrupted, w, 0.01f, 10), corrupted.key);
    commit(corrupted, w, chain::keccak256(sealed), in_slot);
    Bytes damaged = sealed;
    damaged[damaged.size() / 2] ^= 0x01;
    reveal(corrupted, w, damaged);
  }
  Miner& uncommitted = add_miner(false);
  Miner& replayer = add_miner();
  upload(replayer, w, honest_packet(replayer, w, 0.01f, 42), in_slot);
  upload(late, w, honest_packet(late, w, 0.01f, 2), start + o_.protocol.upload_slot_s + 5);
  const chain::PrivateKey other_validator = key_of(2000);
  fake_.add_neuron(other_validator, 10, true);  // a validator: never gathered as a miner

  auto p = parts();
  WindowContext cx = context(*p);
  auto uploads = gather_once(w, cx);
  ASSERT_TRUE(uploads.is_ok()) << uploads.status();
  std::map<std::uint16_t, const Upload*> by;
  for (const auto& u : *uploads) by[u.uid] = &u;
  EXPECT_EQ(by.size(), miners_.size());  // every miner, no validator
  EXPECT_FALSE(by.count(validator_uid_));
  // Valid packets wait on disk for the window (an upload in memory is a few
  // KB whatever the model's size); nothing else does.
  for (const auto& u : *uploads) EXPECT_EQ(fs::exists(spool_path(cx, w, u.uid)), u.valid()) << "uid " << u.uid;
  {
    auto back = spooled_update(w, honest.uid, cx);
    ASSERT_TRUE(back.is_ok()) << back.status();
    EXPECT_DOUBLE_EQ(norm_of(*back), by.at(honest.uid)->norm);
    EXPECT_EQ(index_signature(*back, window_seed(cx.private_seed, w)).hashes, by.at(honest.uid)->signature.hashes);
  }
  // The replayer's update was last window's: mark_copies is told so.
  std::vector<Remembered> history{Remembered{w - 1, 77, by.at(replayer.uid)->sketch}};
  mark_copies(*uploads, history, {o_.validator.copy_overlap, o_.validator.copy_cosine});

  auto reason = [&](const Miner& m) { return by.at(m.uid)->rejection; };
  EXPECT_TRUE(by.at(honest.uid)->valid()) << by.at(honest.uid)->detail;
  EXPECT_EQ(reason(missing), Rejection::kMissing);
  EXPECT_EQ(reason(late), Rejection::kTooLate);
  EXPECT_EQ(reason(early), Rejection::kTooEarly);
  EXPECT_EQ(reason(garbage), Rejection::kBadPacket);
  EXPECT_EQ(reason(wrong_signer), Rejection::kWrongSigner);
  EXPECT_EQ(reason(wrong_header), Rejection::kWrongHeader);
  EXPECT_EQ(reason(other_data), Rejection::kNotAssignedData);
  EXPECT_EQ(reason(shape), Rejection::kWrongShape);
  EXPECT_EQ(reason(overflow), Rejection::kNonFinite);
  EXPECT_EQ(reason(corrupted), Rejection::kBadPacket) << by.at(corrupted.uid)->detail;
  EXPECT_THAT(by.at(corrupted.uid)->detail, ::testing::HasSubstr("corrupted or replaced"));
  EXPECT_THAT(by.at(overflow.uid)->detail, ::testing::HasSubstr("overflows"));
  EXPECT_EQ(reason(uncommitted), Rejection::kUnreachable);
  EXPECT_EQ(reason(oversized), Rejection::kBadPacket);
  EXPECT_THAT(by.at(oversized.uid)->detail, ::testing::HasSubstr("this model's packets are"));
  EXPECT_EQ(reason(replayer), Rejection::kReplay);
  for (const auto& u : *uploads) {
    if (u.rejection) {
      EXPECT_FALSE(u.detail.empty()) << protocol::name(*u.rejection);
    }
  }
}

// A rational copier takes an honest peer's packet, re-signs it, and has its
// own store claim it was there first (files dated two days early). But a
// packet is revealed only after the slot has closed, against a commitment
// read during the slot: a copy committed after the reveal is late, a
// commitment made blind does not match the copy, and the store's dates play
// no part. The original is never flagged. Two uids that commit to the same
// update share a source: both are copies.
TEST_F(ValidatorInProcess, ACopyOfARevealedPacketIsLateWhateverItsStoreClaims) {
  const std::uint64_t w = 3;
  mine_through(protocol::WindowClock(o_.protocol).slot_block(w), 100);
  Miner& honest = add_miner();
  Miner& after = add_miner();   // commits to its copy once the original is revealed
  Miner& blind = add_miner();   // commits in the slot to something, reveals a copy
  Miner& twin_a = add_miner();  // two uids, one update
  Miner& twin_b = add_miner();
  const double start = slot_start_of(w);
  const double closed = start + o_.protocol.upload_slot_s + o_.protocol.clock_skew_s;
  const auto copy_of_honest = [&](const Miner& m) {
    return *chain::seal_packet(honest_packet(m, w, 0.01f, 1), m.key);  // the honest payload, its own header
  };
  const Bytes original = *chain::seal_packet(honest_packet(honest, w, 0.01f, 1), honest.key);
  commit(honest, w, chain::keccak256(original), start + 1);
  chain::Hash32 guess;
  guess.fill(0x5a);
  commit(blind, w, guess, start + 2);
  const Bytes twin_update = *chain::seal_packet(honest_packet(twin_a, w, 0.01f, 9), twin_a.key);
  commit(twin_a, w, chain::keccak256(twin_update), start + 3);
  const Bytes twin_copy = [&] {
    auto p = honest_packet(twin_b, w, 0.01f, 9);
    return *chain::seal_packet(p, twin_b.key);
  }();
  commit(twin_b, w, chain::keccak256(twin_copy), start + 3);
  observe(closed + 0.5);  // the slot has closed: packets are revealed
  reveal(honest, w, original);
  reveal(twin_a, w, twin_update);
  reveal(twin_b, w, twin_copy);
  const Bytes late_copy = copy_of_honest(after);
  put_gradient(after, w, late_copy, closed + 1);
  reveal(blind, w, copy_of_honest(blind));
  back_date(after.root / keys::commitment(w), 48);
  back_date(blind.root / keys::gradient(w), 48);

  auto p = parts();
  WindowContext cx = context(*p);
  auto uploads = gather_once(w, cx);
  ASSERT_TRUE(uploads.is_ok()) << uploads.status();
  mark_copies(*uploads, {}, {o_.validator.copy_overlap, o_.validator.copy_cosine});
  std::map<std::uint16_t, const Upload*> by;
  for (const auto& u : *uploads) by[u.uid] = &u;
  EXPECT_TRUE(by.at(honest.uid)->valid()) << by.at(honest.uid)->detail;
  EXPECT_EQ(by.at(after.uid)->rejection, Rejection::kTooLate);
  EXPECT_THAT(by.at(after.uid)->detail, ::testing::HasSubstr("after the slot ended"));
  EXPECT_EQ(by.at(blind.uid)->rejection, Rejection::kBadPacket);
  EXPECT_THAT(by.at(blind.uid)->detail, ::testing::HasSubstr("not the commitment"));
  for (const Miner* m : {&twin_a, &twin_b}) {
    EXPECT_EQ(by.at(m->uid)->rejection, Rejection::kCopy) << by.at(m->uid)->detail;
    EXPECT_THAT(by.at(m->uid)->detail, ::testing::HasSubstr("shared source"));
  }
}

TEST_F(ValidatorInProcess, ASilentStoreCoolsDownInsteadOfCostingEveryWindow) {
  mine_through(protocol::WindowClock(o_.protocol).slot_block(5), 100);
  Miner& honest = add_miner();
  Miner& silent = add_miner();
  for (std::uint64_t w : {2, 3, 4, 5}) {
    upload(honest, w, honest_packet(honest, w, 0.01f, w), slot_start_of(w) + 1);
    upload(silent, w, honest_packet(silent, w, 0.01f, 100 + w), slot_start_of(w) + 1);
  }
  // The silent miner's store fails every call as a store that never answers would.
  std::shared_ptr<storage::FaultInjectingStore> faulty;
  auto p = parts();
  const std::string silent_root = silent.root.string();
  p->peers = std::make_unique<protocol::PeerDirectory>(
      *p->io.chain, fake_.netuid(),
      [&](const storage::PeerLocation& l) -> Result<std::shared_ptr<storage::ObjectStore>> {
        CRUCIBLE_ASSIGN_OR_RETURN(auto store, protocol::default_store_opener(testing::local_peers())(l));
        if (l.url != "file://" + silent_root) return store;
        storage::FaultOptions f;
        f.error_rate = 1.0;
        faulty = std::make_shared<storage::FaultInjectingStore>(store, f);
        return std::static_pointer_cast<storage::ObjectStore>(faulty);
      });
  WindowContext cx = context(*p);
  auto mg = *fake_.as(validator_key_)->metagraph(fake_.netuid());
  std::map<std::uint16_t, std::uint64_t> cooldown;
  auto first = gather(2, *read_slot(2, cx), mg, cooldown, observer(), cx);
  ASSERT_TRUE(first.is_ok());
  EXPECT_TRUE((*first)[0].valid());
  EXPECT_EQ((*first)[1].rejection, Rejection::kUnreachable);
  ASSERT_TRUE(faulty);
  const int errors = faulty->counts().errors;
  EXPECT_GT(errors, 0);
  EXPECT_EQ(cooldown[silent.uid], 2 + 1 + kPeerCooldownWindows);
  for (std::uint64_t w : {3, 4, 5}) {  // not contacted while it cools down; the honest miner is unaffected
    auto later = gather(w, *read_slot(w, cx), mg, cooldown, observer(), cx);
    ASSERT_TRUE(later.is_ok());
    EXPECT_TRUE((*later)[0].valid()) << w;
    EXPECT_EQ((*later)[1].rejection, Rejection::kUnreachable);
    EXPECT_THAT((*later)[1].detail, ::testing::HasSubstr("timed out lately"));
  }
  EXPECT_EQ(faulty->counts().errors, errors);
}

TEST_F(ValidatorInProcess, NoPositiveScoreBurnsInsteadOfLeavingOldWeights) {
  auto p = parts();
  WindowContext cx = context(*p);
  ValidatorState st;
  st.scores[5].final_score = 0;  // nobody earned anything
  o_.validator.burn_uid = 3;
  mine_through(4, 0);
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  ASSERT_EQ(fake_.weights().size(), 1u);
  EXPECT_EQ(fake_.weights()[0].uids, (std::vector<std::uint16_t>{3}));
  EXPECT_EQ(fake_.weights()[0].values, (std::vector<std::uint16_t>{65535}));
}

// A validator without a permit runs, but says at start that nothing it does
// counts, and what to do about it.
TEST_F(ValidatorInProcess, AValidatorWithoutAPermitSaysSo) {
  const chain::PrivateKey key = key_of(3000);
  fake_.add_neuron(key, 5, false);
  const protocol::WindowClock clock(o_.protocol);
  mine_through(clock.first_block(4), 100);
  std::vector<std::string> lines;
  std::mutex mu;
  log::set_sink([&](std::string_view line) {
    std::lock_guard lk(mu);
    lines.emplace_back(line);
  });
  o_.validator.end_window = 4;  // stops at once, after its first look at the chain
  o_.validator.state_dir = (dir_.path() / "no-permit").string();
  {
    auto node = ValidatorNode::create(o_, key, io(fake_.as(key)));
    ASSERT_TRUE(node.is_ok()) << node.status();
    std::atomic<bool> stop{false};
    ASSERT_TRUE((*node)->run(stop).is_ok());
  }
  log::set_sink(nullptr);
  std::lock_guard lk(mu);
  const auto warned = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("no validator permit") != std::string::npos && l.find("crucible chain stake") != std::string::npos;
  });
  EXPECT_EQ(warned, 1) << ::testing::PrintToString(lines);
}

TEST_F(ValidatorInProcess, AFreshValidatorThatStopsBeforeItsFirstCommitResumesThatWindow) {
  const protocol::WindowClock clock(o_.protocol);
  mine_through(clock.first_block(4), 100);  // window 4 under way
  o_.validator.end_window = 4;              // stops before processing anything: as a crash before the first commit
  {
    auto node = run_validator(nullptr);
    ASSERT_NE(node, nullptr);
    EXPECT_FALSE(*node->state().last_committed_window());
  }
  mine_through(clock.slot_block(7), 100);  // it comes back in window 8
  o_.validator.end_window = -1;
  o_.validator.max_windows = 1;
  auto node = run_validator(nullptr);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(*node->state().last_committed_window(), 4u);  // window 4, not the one under way
}

// A stop between a posting window's record and its weights post (nothing
// logged for the epoch yet): the restart posts them (post_missed_weights),
// once; a restart that finds the epoch logged posts nothing more.
TEST_F(ValidatorInProcess, AStopBetweenAWindowsRecordAndItsPostPostsTheWeightsAtRestart) {
  const protocol::WindowClock clock(o_.protocol);
  mine_through(clock.slot_block(5), 100);  // window 4's slot is over: it can be processed
  o_.validator.start_window = 4;
  o_.validator.max_windows = 1;
  std::uint64_t last = 0;
  {
    auto node = run_validator(nullptr);
    ASSERT_NE(node, nullptr);
    ASSERT_TRUE(node->state().last_committed_window().is_ok());
    last = node->state().last_committed_window()->value();
    ASSERT_EQ(fake_.weights().size(), 1u) << "window " << last << " posted its weights";
    // The crash: the window is recorded, its post (and the post's log entry) never happened.
    storage::StateStore::Batch forget;
    forget.remove(storage::Family::kWeightsLog, epoch_key(last / o_.validator.weights_every));
    ASSERT_TRUE(node->state().commit(std::move(forget)).is_ok());
  }
  fake_.mine(100);  // past the chain's rate limit since the first post
  o_.validator.start_window = -1;
  o_.validator.max_windows = 0;
  o_.validator.end_window = static_cast<std::int64_t>(last + 1);  // nothing new to process: only the restart's work
  {
    auto node = run_validator(nullptr);
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(*node->state().last_committed_window(), last);
    EXPECT_EQ(fake_.weights().size(), 2u) << "the missed post was not made at restart";
    auto logged = node->state().get(storage::Family::kWeightsLog, epoch_key(last / o_.validator.weights_every));
    ASSERT_TRUE(logged.is_ok() && logged->has_value());
    EXPECT_EQ(weights_entry_from_json(nlohmann::json::parse(**logged))->phase, WeightsPhase::kConfirmed);
  }
  fake_.mine(100);
  {
    auto node = run_validator(nullptr);
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(fake_.weights().size(), 2u) << "a logged epoch was posted again";
  }
}

Upload valid_upload(std::uint16_t uid, std::int64_t at_ms, std::uint8_t content,
                    std::vector<kernels::CompressedTensor> t) {
  Upload u;
  u.uid = uid;
  u.uploaded = true;
  u.seen_at = static_cast<double>(at_ms) / 1000;  // seen in (at - 0.1 s, at]
  u.absent_at = u.seen_at - 0.1;
  u.content.fill(content);
  u.sketch = sketch_of(t);
  u.signature = index_signature(t, 42);
  u.norm = norm_of(t);
  return u;
}

TEST(MarkCopies, EqualUpdatesInOneWindowAreAllCopies) {
  std::vector<float> x(4096);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  std::vector<float> y(4096);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::cos(static_cast<float>(i * 7));
  std::vector<float> z(4096);
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = std::sin(static_cast<float>(i * 13) + 0.5f);
  const std::vector<std::int64_t> shape{64, 64};
  auto cx = *kernels::compress(x, shape, 1);
  auto cy = *kernels::compress(y, shape, 1);
  auto cz = *kernels::compress(z, shape, 1);
  // Packets are private until the slot closes: equal updates in one window
  // share a source, whoever's commitment came first.
  std::vector<Upload> u{valid_upload(5, 2000, 1, {cx}), valid_upload(3, 1000, 2, {cx}),  // same indices as 3's
                        valid_upload(9, 1500, 3, {cy}), valid_upload(4, 3000, 3, {cy}),  // same payload as 9's
                        valid_upload(2, 1000, 4, {cz})};                                 // its own
  u.push_back(valid_upload(6, 500, 8, {cy}));
  u.back().reject(Rejection::kTooEarly, "x");  // invalid ones are neither copies nor originals
  mark_copies(u, {}, {0.5, 0.3});
  EXPECT_EQ(u[0].rejection, Rejection::kCopy);
  EXPECT_THAT(u[0].detail, ::testing::HasSubstr("uid 3"));
  EXPECT_EQ(u[1].rejection, Rejection::kCopy);
  EXPECT_THAT(u[1].detail, ::testing::HasSubstr("uid 5"));
  EXPECT_EQ(u[2].rejection, Rejection::kCopy);
  EXPECT_EQ(u[3].rejection, Rejection::kCopy);
  EXPECT_TRUE(u[4].valid());
  EXPECT_EQ(u[5].rejection, Rejection::kTooEarly);
  // A repeat of last window's update is a replay, and only the replay is rejected.
  std::vector<Upload> again{valid_upload(3, 1000, 2, {cx}), valid_upload(2, 1000, 4, {cz})};
  mark_copies(again, {Remembered{4, 5, again[0].sketch}}, {0.5, 0.3});
  EXPECT_EQ(again[0].rejection, Rejection::kReplay);
  EXPECT_THAT(again[0].detail, ::testing::HasSubstr("uid 5's update of window 4"));
  EXPECT_TRUE(again[1].valid());
  // An update whose values are an aggregate's, rescaled: a replay of the aggregate.
  std::vector<float> x3 = x;
  for (float& v : x3) v *= -3;
  std::vector<Upload> aggregate{valid_upload(7, 1000, 9, {*kernels::compress(x3, shape, 1)})};
  mark_copies(aggregate, {Remembered{4, std::nullopt, again[0].sketch}}, {0.5, 0.3});
  EXPECT_EQ(aggregate[0].rejection, Rejection::kReplay);
  EXPECT_THAT(aggregate[0].detail, ::testing::HasSubstr("the aggregate applied after window 4"));
}

// The history of sketches is kept in RocksDB: pruned to history_windows,
// and the same after a restart.
TEST_F(ValidatorInProcess, TheSimilarityHistorySurvivesARestartAndIsPruned) {
  auto p = parts();
  std::vector<Remembered> history;
  for (std::uint64_t w = 0; w < 6; ++w) {
    std::vector<float> x(4096);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i * (w + 1)));
    std::vector<Upload> uploads{valid_upload(3, 0, 1, {*kernels::compress(x, std::vector<std::int64_t>{64, 64}, 1)})};
    const Sketch aggregate = uploads[0].sketch;
    ASSERT_TRUE(remember(w, uploads, &aggregate, 3, history, *p->db).is_ok());
  }
  ASSERT_EQ(history.size(), 6u);  // windows 3, 4, 5: an upload and an aggregate each
  for (const auto& r : history) EXPECT_GE(r.window, 3u);
  auto restored = restore_history(*p->db);
  ASSERT_TRUE(restored.is_ok()) << restored.status();
  ASSERT_EQ(restored->size(), history.size());
  std::sort(history.begin(), history.end(), [](const Remembered& a, const Remembered& b) {
    return std::pair(a.window, a.uid) < std::pair(b.window, b.uid);
  });
  std::sort(restored->begin(), restored->end(), [](const Remembered& a, const Remembered& b) {
    return std::pair(a.window, a.uid) < std::pair(b.window, b.uid);
  });
  for (std::size_t i = 0; i < history.size(); ++i) {
    EXPECT_EQ((*restored)[i].window, history[i].window);
    EXPECT_EQ((*restored)[i].uid, history[i].uid);
    EXPECT_EQ((*restored)[i].sketch.buckets, history[i].sketch.buckets);
  }
}

TEST_F(ValidatorInProcess, TheLeadFixesItsSetOnceFromTheValidUploads) {
  const std::uint64_t w = 2;
  std::vector<Upload> uploads{valid_upload(4, 0, 1, {}), valid_upload(2, 0, 2, {}), valid_upload(7, 0, 3, {})};
  uploads[0].digest.fill(4);
  uploads[1].digest.fill(2);
  uploads[2].digest.fill(7);
  uploads[2].reject(Rejection::kCopy, "copy");
  ValidatorState st;
  st.model.window = 1;
  o_.protocol.scoring.admit_ratio = 0.25;  // this test is about admission
  st.scores[4].evaluations = 1;            // evaluated, its update helped as much as the best: admitted
  st.scores[4].evidence = 0.9;
  st.scores[2].evaluations = 1;  // evaluated, its update did little: left out
  st.scores[2].evidence = 0.05;
  st.scores[7].evaluations = 1;  // admitted, but this window's upload is a copy: left out
  st.scores[7].evidence = 0.9;
  auto p = parts();
  WindowContext cx = context(*p);
  // Gather left each valid packet in the window's spool; the lead keeps the members'.
  const Bytes packet_of_4(100, 0x44);
  for (const auto& u : uploads) {
    ASSERT_TRUE(files::write_file(spool_path(cx, w, u.uid), u.uid == 4 ? packet_of_4 : Bytes(100, 0)).is_ok());
  }
  auto set = fix_aggregation_set(w, uploads, st, cx);
  ASSERT_TRUE(set.is_ok()) << set.status();
  EXPECT_EQ(set->set.uids, (std::vector<std::uint16_t>{4}));
  EXPECT_EQ(set->set.prev, 1u);
  auto kept = p->io.store->get(keys::set_packet(w, 4), 1000);
  ASSERT_TRUE(kept.is_ok()) << kept.status();
  EXPECT_EQ(kept->data, packet_of_4);
  auto stored = p->io.store->get(keys::aggregate(w), protocol::kMaxSetBytes);
  ASSERT_TRUE(stored.is_ok());
  EXPECT_EQ(stored->data, set->bytes);
  // After a restart the published set is final, whatever the uploads are now.
  st.scores.clear();
  auto again = fix_aggregation_set(w, uploads, st, cx);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->bytes, set->bytes);
}

TEST_F(ValidatorInProcess, AWithdrawnPacketDoesNotStopTheSet) {
  // A member uploads, waits until the lead names it in the set, deletes its
  // packet: every node still applies the set, from the lead's copies.
  const std::uint64_t w = 3;
  mine_through(protocol::WindowClock(o_.protocol).slot_block(w), 100);
  Miner& a = add_miner();
  Miner& withdrawer = add_miner();
  upload(a, w, honest_packet(a, w, 0.01f, 1), slot_start_of(w) + 1);
  upload(withdrawer, w, honest_packet(withdrawer, w, 0.01f, 2), slot_start_of(w) + 1);
  auto p = parts();
  WindowContext cx = context(*p);
  auto mg = fake_.as(validator_key_)->metagraph(fake_.netuid());
  ValidatorState st;
  for (const Miner* m : {&a, &withdrawer}) {  // both admitted
    st.scores[m->uid].evaluations = 1;
    st.scores[m->uid].evidence = 1;
  }
  auto uploads = gather(w, *read_slot(w, cx), *mg, st.cooldown_until, observer(), cx);
  ASSERT_TRUE(uploads.is_ok());
  auto set = fix_aggregation_set(w, *uploads, st, cx);
  ASSERT_TRUE(set.is_ok()) << set.status();
  ASSERT_EQ(set->set.uids, (std::vector<std::uint16_t>{a.uid, withdrawer.uid}));
  ASSERT_TRUE(withdrawer.store->remove(keys::gradient(w)).is_ok());
  auto applied = ValidatorChain(st.model, cx)->advance(w, set->bytes, *p->io.store);
  ASSERT_TRUE(applied.is_ok()) << applied.status();
  EXPECT_FALSE(applied->has_value()) << protocol::to_string(**applied);
  EXPECT_EQ(st.model.window, w);
  EXPECT_EQ(st.model.last_aggregate.size(), specs_.size());
}

TEST_F(ValidatorInProcess, WeightsAreLoggedSoACrashNeverPostsTwice) {
  auto faulty = std::make_shared<chain::FaultInjectingChain>(fake_.as(validator_key_), chain::ChainFaults{});
  auto p = parts(faulty);
  WindowContext cx = context(*p);
  ValidatorState st;
  st.scores[5].final_score = 0.5;
  st.scores[6].final_score = 0.25;
  mine_through(10, 0);
  // Window 0 = epoch 0: posted once; asking again does nothing.
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  ASSERT_EQ(fake_.weights().size(), 1u);
  EXPECT_EQ(fake_.weights()[0].uids, (std::vector<std::uint16_t>{5, 6}));
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  EXPECT_EQ(fake_.weights().size(), 1u);
  // Epoch 1: the transaction lands but its receipt is lost (a crash would
  // look the same). The entry stays pending and the chain settles it.
  faulty->set_faults({.lose_next_transactions = 1});
  EXPECT_TRUE(maybe_post_weights(1, st, cx).is_ok());
  EXPECT_EQ(fake_.weights().size(), 2u);
  auto logged = p->db->get(storage::Family::kWeightsLog, epoch_key(1));
  ASSERT_TRUE(logged.is_ok() && logged->has_value());
  EXPECT_EQ(weights_entry_from_json(nlohmann::json::parse(**logged))->phase, WeightsPhase::kPending);
  fake_.mine(1);
  ASSERT_TRUE(maybe_post_weights(1, st, cx).is_ok());  // the restart's retry
  EXPECT_EQ(fake_.weights().size(), 2u);               // not posted again
  logged = p->db->get(storage::Family::kWeightsLog, epoch_key(1));
  auto entry = weights_entry_from_json(nlohmann::json::parse(**logged));
  EXPECT_EQ(entry->phase, WeightsPhase::kConfirmed);
  EXPECT_TRUE(entry->confirmed_after_restart);
  // Epoch 2: never sent before the crash: sent once after it.
  faulty->set_faults({.fail_next_transactions = 1});
  EXPECT_TRUE(maybe_post_weights(2, st, cx).is_ok());
  EXPECT_EQ(fake_.weights().size(), 2u);
  ASSERT_TRUE(maybe_post_weights(2, st, cx).is_ok());
  EXPECT_EQ(fake_.weights().size(), 3u);
  // Windows between posts post nothing.
  o_.validator.weights_every = 2;
  ASSERT_TRUE(maybe_post_weights(6, st, cx).is_ok());
  EXPECT_EQ(fake_.weights().size(), 3u);
}

TEST_F(ValidatorInProcess, CommitRevealResendsTheLoggedCommitAfterACrash) {
  fake_.set_commit_reveal(true);
  auto faulty = std::make_shared<chain::FaultInjectingChain>(fake_.as(validator_key_), chain::ChainFaults{});
  auto p = parts(faulty);
  WindowContext cx = context(*p);
  ValidatorState st;
  st.scores[5].final_score = 0.5;
  // The commit is logged, then the process dies before it is sent.
  faulty->set_faults({.fail_next_transactions = 1});
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  EXPECT_TRUE(fake_.commits().empty());
  auto logged =
      weights_entry_from_json(nlohmann::json::parse(**p->db->get(storage::Family::kWeightsLog, epoch_key(0))));
  ASSERT_TRUE(logged.is_ok());
  ASSERT_TRUE(logged->commit.has_value());
  const chain::Hash32 first_hash = logged->commit->hash;
  // (Failed sends of a commit are retried as the same commit.)
  auto reset = *logged;
  reset.phase = WeightsPhase::kCommitting;
  storage::StateStore::Batch b;
  const std::string text = to_json(reset).dump();
  b.put(storage::Family::kWeightsLog, epoch_key(0), as_bytes(text));
  ASSERT_TRUE(p->db->commit(std::move(b)).is_ok());
  st.scores[5].final_score = 0.9;  // new scores must not change what was committed
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  ASSERT_EQ(fake_.commits().size(), 1u);
  EXPECT_EQ(fake_.commits()[0].hash, first_hash);
  // Windows in the commit's own subnet epoch do not reveal it (the chain
  // would say RevealTooEarly); the first window of the next epoch does.
  // (Window 0 again: its epoch's post is done, so only reveals run.)
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  EXPECT_TRUE(fake_.weights().empty());
  fake_.mine(10);  // tempo 10: the next epoch
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  ASSERT_EQ(fake_.weights().size(), 1u);
  EXPECT_TRUE(fake_.weights()[0].revealed);
  auto revealed =
      weights_entry_from_json(nlohmann::json::parse(**p->db->get(storage::Family::kWeightsLog, epoch_key(0))));
  EXPECT_EQ(revealed->phase, WeightsPhase::kConfirmed);
  // The next post commits its own.
  ASSERT_TRUE(maybe_post_weights(1, st, cx).is_ok());
  EXPECT_EQ(fake_.commits().size(), 2u);
}

// A reveal the chain refuses as RevealTooEarly (an epoch boundary between
// reading the epoch and landing) is kept and sent again the next window.
class EarlyRevealChain final : public chain::ChainWrapper {
 public:
  using ChainWrapper::ChainWrapper;
  int refusals = 1;
  Result<chain::SentTx> reveal_weights(const chain::WeightsCommit& c) override {
    if (refusals > 0) {
      --refusals;
      return failed_precondition("eth_estimateGas: execution reverted: dispatch execution failed: RevealTooEarly");
    }
    return inner().reveal_weights(c);
  }
};

TEST_F(ValidatorInProcess, ARevealRefusedAsTooEarlyIsRetriedAndLands) {
  fake_.set_commit_reveal(true);
  auto early = std::make_shared<EarlyRevealChain>(fake_.as(validator_key_));
  auto p = parts(early);
  WindowContext cx = context(*p);
  ValidatorState st;
  st.scores[5].final_score = 0.5;
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  fake_.mine(10);  // the reveal epoch
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  EXPECT_EQ(early->refusals, 0);  // it was tried...
  EXPECT_TRUE(fake_.weights().empty());
  auto logged =
      weights_entry_from_json(nlohmann::json::parse(**p->db->get(storage::Family::kWeightsLog, epoch_key(0))));
  EXPECT_EQ(logged->phase, WeightsPhase::kCommitted);  // ...and kept
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());  // the next window
  ASSERT_EQ(fake_.weights().size(), 1u);
  EXPECT_TRUE(fake_.weights()[0].revealed);
  logged = weights_entry_from_json(nlohmann::json::parse(**p->db->get(storage::Family::kWeightsLog, epoch_key(0))));
  EXPECT_EQ(logged->phase, WeightsPhase::kConfirmed);
}

// A commit whose reveal epoch passed (the validator was down through it)
// is marked expired, not revealed, and not retried.
TEST_F(ValidatorInProcess, ACommitPastItsRevealEpochIsExpired) {
  fake_.set_commit_reveal(true);
  auto p = parts(fake_.as(validator_key_));
  WindowContext cx = context(*p);
  ValidatorState st;
  st.scores[5].final_score = 0.5;
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  ASSERT_EQ(fake_.commits().size(), 1u);
  fake_.mine(25);  // two epochs later
  ASSERT_TRUE(maybe_post_weights(0, st, cx).is_ok());
  EXPECT_TRUE(fake_.weights().empty());
  auto logged =
      weights_entry_from_json(nlohmann::json::parse(**p->db->get(storage::Family::kWeightsLog, epoch_key(0))));
  EXPECT_EQ(logged->phase, WeightsPhase::kExpired);
  ASSERT_TRUE(logged->error.has_value());
}

// The subnet's weight rules are applied before posting (weights.rs check_length, max_weight_limited).
TEST(FitWeights, PadsToMinAllowedAndCapsTheLargestShare) {
  chain::SubnetParams sp;
  sp.min_allowed_weights = 4;
  auto fitted = fit_weights_to_subnet({3}, {65535}, 6, sp);
  ASSERT_TRUE(fitted.is_ok());
  EXPECT_EQ(fitted->first, (std::vector<std::uint16_t>{0, 1, 2, 3}));
  EXPECT_EQ(fitted->second, (std::vector<std::uint16_t>{0, 0, 0, 65535}));
  sp.min_allowed_weights = 10;  // more than there are uids: all of them
  EXPECT_EQ(fit_weights_to_subnet({3}, {1}, 6, sp)->first.size(), 6u);
  // Within the limits the values go out as they are (a weight of 1 stays 1).
  sp.min_allowed_weights = 1;
  fitted = fit_weights_to_subnet({4, 2}, {1, 65535}, 6, sp);
  ASSERT_TRUE(fitted.is_ok());
  EXPECT_EQ(fitted->first, (std::vector<std::uint16_t>{2, 4}));
  EXPECT_EQ(fitted->second, (std::vector<std::uint16_t>{65535, 1}));

  sp.min_allowed_weights = 1;
  sp.max_weight_limit = 26214;  // 40 %
  fitted = fit_weights_to_subnet({1, 2, 3}, {60000, 3000, 2535}, 4, sp);
  ASSERT_TRUE(fitted.is_ok()) << fitted.status();
  std::uint64_t sum = 0, top = 0;
  for (auto v : fitted->second) {
    sum += v;
    top = std::max<std::uint64_t>(top, v);
  }
  EXPECT_LE(top * 65535, 26214ull * sum);           // the chain's own integer check
  EXPECT_GT(fitted->second[1], fitted->second[2]);  // order kept below the cap
  // Two uids cannot each stay under 40 %.
  EXPECT_EQ(fit_weights_to_subnet({1, 2}, {1, 1}, 4, sp).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(ValidatorInProcess, NodeRunsWindowsAndRestoresAfterARestart) {
  Miner& a = add_miner();
  Miner& b = add_miner();
  Miner& bad = add_miner();
  const protocol::WindowClock clock(o_.protocol);
  mine_through(clock.slot_block(3), 100);  // every slot of windows 0..2 has closed
  for (std::uint64_t w = 0; w < 3; ++w) {
    const double at = slot_start_of(w) + 1;
    upload(a, w, honest_packet(a, w, 0.01f, 10 + w), at);
    upload(b, w, honest_packet(b, w, 0.01f, 20 + w), at);
    put_gradient(bad, w, Bytes(100, 1), at);
  }
  o_.validator.start_window = 0;
  o_.validator.end_window = 3;
  {
    auto node = run_validator(&observer());
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(node->model_window(), 2u);
    auto last = node->state().last_committed_window();
    ASSERT_TRUE(last.is_ok());
    EXPECT_EQ(*last, 2u);
    auto row = node->state().get(storage::Family::kWindowScores, window_uid_key(1, bad.uid));
    ASSERT_TRUE(row.is_ok() && row->has_value());
    auto result = uid_result_from_json(nlohmann::json::parse(**row));
    ASSERT_TRUE(result.is_ok());
    EXPECT_EQ(result->rejection, Rejection::kBadPacket);
    // The global model after each window: its held-out loss, what went into it.
    for (std::uint64_t w = 0; w < 3; ++w) {
      auto p = node->state().get(storage::Family::kWindowScores, progress_key(w));
      ASSERT_TRUE(p.is_ok() && p->has_value()) << w;
      auto progress = progress_from_json(nlohmann::json::parse(**p));
      ASSERT_TRUE(progress.is_ok()) << progress.status();
      ASSERT_TRUE(progress->heldout_loss.has_value());
      EXPECT_TRUE(std::isfinite(*progress->heldout_loss));
      EXPECT_GT(*progress->heldout_loss, 0);
      EXPECT_GT(progress->bytes_received, 0u);
      EXPECT_EQ(progress->tokens_aggregated, progress->aggregate.size() * kSamples * 8);
    }
  }
  // The lead published a set for each window, chained by prev. Window 0
  // takes both valid uploads (evaluated and admitted in that window).
  auto own = take(storage::LocalStore::open(dir_.path() / "validator-store"));
  for (std::uint64_t w = 0; w < 3; ++w) {
    auto s = own->get(keys::aggregate(w), protocol::kMaxSetBytes);
    ASSERT_TRUE(s.is_ok()) << w;
    auto set = protocol::decode_set(s->data);
    ASSERT_TRUE(set.is_ok());
    EXPECT_EQ(set->prev, w == 0 ? std::nullopt : std::optional<std::uint64_t>(w - 1));
    if (w == 0) {
      EXPECT_EQ(set->uids, (std::vector<std::uint16_t>{a.uid, b.uid}));
    }
  }
  const fs::path model = fs::path(o_.validator.state_dir) / "model.safetensors";
  auto first = files::read_file(model, 1 << 30);
  ASSERT_TRUE(first.is_ok());
  // A restart with the model file lost: the node re-applies the published
  // sets and reaches the same model, bit for bit, without re-running windows.
  fs::remove(model);
  {
    auto node = run_validator(&observer());
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(node->model_window(), 2u);
  }
  auto second = files::read_file(model, 1 << 30);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(*first, *second);
}

}  // namespace
}  // namespace crucible::validator

namespace crucible::validator {
namespace {

// A recycled uid: the miner that earned its score deregisters, someone else
// registers the uid. Through the node: the new owner starts afresh.
// A uid's record as the node keeps it.
MinerScore rating_of(ValidatorNode& node, std::uint16_t uid) {
  auto row = node.state().get(storage::Family::kRatings, rating_key(uid));
  EXPECT_TRUE(row.is_ok() && row->has_value());
  if (!row.is_ok() || !row->has_value()) return MinerScore{};
  auto score = score_from_json(nlohmann::json::parse(**row));
  EXPECT_TRUE(score.is_ok()) << score.status();
  return score.is_ok() ? *score : MinerScore{};
}

TEST_F(ValidatorInProcess, ANewOwnerOfAUidDoesNotInheritItsScore) {
  Miner& a = add_miner();
  Miner& b = add_miner();
  const protocol::WindowClock clock(o_.protocol);
  mine_through(clock.slot_block(2), 100);
  for (std::uint64_t w = 0; w < 2; ++w) {
    upload(a, w, honest_packet(a, w, 0.01f, 10 + w), slot_start_of(w) + 1);
    upload(b, w, honest_packet(b, w, 0.01f, 20 + w), slot_start_of(w) + 1);
  }
  o_.validator.start_window = 0;
  o_.validator.end_window = 2;
  {
    auto node = run_validator(&observer());
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(rating_of(*node, a.uid).evaluations, 2u);
  }
  const chain::PrivateKey newcomer = key_of(4242);
  fake_.replace_neuron(a.uid, newcomer);
  mine_through(clock.slot_block(2) + 2 * o_.protocol.blocks_per_window, 100);
  o_.validator.end_window = 3;
  auto node = run_validator(&observer());
  ASSERT_NE(node, nullptr);
  const MinerScore fresh = rating_of(*node, a.uid);
  EXPECT_EQ(fresh.evaluations, 0u);
  EXPECT_DOUBLE_EQ(fresh.rating.mu, Rating{}.mu);
  EXPECT_LE(fresh.final_score, 0.0);
  EXPECT_EQ(fresh.hotkey, fake_.as(newcomer)->hotkey_of(newcomer.address()));
  EXPECT_EQ(rating_of(*node, b.uid).evaluations, 2u);  // the other miner's record is its own
}

// The same when the uid changes hands right after its first scored window:
// the record that window created is bound to the hotkey it judged.
TEST_F(ValidatorInProcess, AUidRecycledAfterItsFirstWindowDoesNotPassItsRecordOn) {
  Miner& a = add_miner();
  Miner& b = add_miner();
  const protocol::WindowClock clock(o_.protocol);
  mine_through(clock.slot_block(1), 100);
  upload(a, 0, honest_packet(a, 0, 0.01f, 10), slot_start_of(0) + 1);
  upload(b, 0, honest_packet(b, 0, 0.01f, 20), slot_start_of(0) + 1);
  o_.validator.start_window = 0;
  o_.validator.end_window = 1;
  {
    auto node = run_validator(&observer());
    ASSERT_NE(node, nullptr);
    const MinerScore first = rating_of(*node, a.uid);
    EXPECT_EQ(first.evaluations, 1u);
    EXPECT_EQ(first.hotkey, fake_.as(a.key)->hotkey_of(a.key.address()));  // bound in the window that made it
  }
  const chain::PrivateKey newcomer = key_of(4243);
  fake_.replace_neuron(a.uid, newcomer);
  mine_through(clock.slot_block(2), 100);
  o_.validator.end_window = 2;
  auto node = run_validator(&observer());
  ASSERT_NE(node, nullptr);
  const MinerScore fresh = rating_of(*node, a.uid);
  EXPECT_EQ(fresh.evaluations, 0u);
  EXPECT_DOUBLE_EQ(fresh.rating.mu, Rating{}.mu);
  EXPECT_EQ(fresh.hotkey, fake_.as(newcomer)->hotkey_of(newcomer.address()));
}

}  // namespace
}  // namespace crucible::validator

namespace crucible::validator {
namespace {

// Sync is bound to the signed packet: a miner holding the validator's model
// signs its digest and needs no file; a copy of another uid's fingerprint
// (file and digest) scores the cap, as does a file the packet does not sign.
TEST_F(ValidatorInProcess, SyncNeedsTheSignedDigestOfTheValidatorsModel) {
  const std::uint64_t w = 3;
  mine_through(protocol::WindowClock(o_.protocol).slot_block(w), 100);
  const double in_slot = slot_start_of(w) + 2;
  Miner& holder = add_miner();
  Miner& copier = add_miner();
  Miner& unbound = add_miner();
  auto p = parts();
  WindowContext cx = context(*p);
  protocol::ChainState model;  // genesis: basis 0, as every node starts
  auto fp_of = [&](const Miner& m) {
    const auto positions = protocol::fingerprint_positions(model.basis, m.uid, p->replica->specs());
    return protocol::Fingerprint{w, m.uid, model.basis, p->replica->values_at(positions)};
  };
  auto put_fingerprint = [&](const Miner& m, const protocol::Fingerprint& f) {
    ASSERT_TRUE(
        m.store->put(keys::fingerprint(w), as_bytes(protocol::encode_fingerprint(f, p->replica->specs()))).is_ok());
  };
  auto packet = honest_packet(holder, w, 0.01f, 1);
  packet.model_digest = protocol::fingerprint_digest(fp_of(holder));
  upload(holder, w, packet, in_slot);
  packet = honest_packet(copier, w, 0.01f, 2);
  packet.model_digest = protocol::fingerprint_digest(fp_of(holder));  // the holder's claim, re-signed
  upload(copier, w, packet, in_slot);
  put_fingerprint(copier, fp_of(holder));
  packet = honest_packet(unbound, w, 0.01f, 3);
  packet.model_digest.fill(7);  // signs something else than its file
  upload(unbound, w, packet, in_slot);
  put_fingerprint(unbound, fp_of(unbound));

  auto behind = sync_of_gathered(w, model, cx);
  const double cap = o_.protocol.scoring.sync_max_steps;
  EXPECT_EQ(behind.at(holder.uid), 0.0);
  EXPECT_EQ(behind.at(copier.uid), cap);
  EXPECT_EQ(behind.at(unbound.uid), cap);
}

// The outer learning rate's schedule in the sync measure (protocol.md §3,
// §6): the validator's last step took the late rate (global step 1 -> 2,
// late from one set's samples), and is measured at that rate. A miner that has not taken
// it is exactly one step behind; one that took it at the base rate (its
// schedule is not the network's) is behind by the difference, 2.5 steps.
TEST_F(ValidatorInProcess, SyncMeasuresTheLastStepAtTheRateItTook) {
  o_.protocol.outer_lr = 0.7;
  o_.protocol.outer_lr_late = 0.2;
  o_.protocol.outer_lr_late_from_samples = kSamples;  // one set's
  const std::uint64_t w = 3;
  mine_through(protocol::WindowClock(o_.protocol).slot_block(w), 100);
  const double in_slot = slot_start_of(w) + 2;
  Miner& behind = add_miner();
  Miner& off_schedule = add_miner();
  auto p = parts();
  WindowContext cx = context(*p);
  protocol::ChainState model;
  model.window = w - 1;
  model.basis.fill(9);
  model.global_step = 2;
  for (const auto& spec : p->replica->specs()) {
    std::vector<float> a(static_cast<std::size_t>(spec.numel()));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.01f * static_cast<float>(i % 7) - 0.03f;
    model.last_aggregate.push_back(std::move(a));
  }
  // A miner whose model is ours plus k * the last aggregate, its fingerprint
  // published and signed.
  auto upload_at = [&](const Miner& m, float k, std::uint64_t seed) {
    const auto positions = protocol::fingerprint_positions(model.basis, m.uid, p->replica->specs());
    protocol::Fingerprint f{w, m.uid, model.basis, p->replica->values_at(positions)};
    for (std::size_t t = 0; t < positions.size(); ++t) {
      for (std::size_t j = 0; j < positions[t].size(); ++j) {
        f.values[t][j] += k * model.last_aggregate[t][static_cast<std::size_t>(positions[t][j])];
      }
    }
    ASSERT_TRUE(
        m.store->put(keys::fingerprint(w), as_bytes(protocol::encode_fingerprint(f, p->replica->specs()))).is_ok());
    auto packet = honest_packet(m, w, 0.01f, seed);
    packet.model_digest = protocol::fingerprint_digest(f);
    upload(m, w, packet, in_slot);
  };
  upload_at(behind, 0.2f, 1);        // the last step not taken
  upload_at(off_schedule, 0.5f, 2);  // taken at 0.7 instead of 0.2

  auto steps = sync_of_gathered(w, model, cx);
  EXPECT_NEAR(steps.at(behind.uid), 1.0, 1e-4);
  EXPECT_NEAR(steps.at(off_schedule.uid), 2.5, 1e-4);
}

// The evaluation's step is at the outer rate of the step the window's set
// will take (protocol.md §3, §6): the base rate before the switch, the
// late one from it on, exactly as on a network whose rate is that one
// throughout.
TEST_F(ValidatorInProcess, TheEvaluationStepsAtTheOuterRateOfTheWindowsSet) {
  auto p = parts();
  WindowContext cx = context(*p);  // reads o_.protocol as the test sets it
  const std::uint64_t w = 3;
  auto uploads = one_upload_gathered(w, cx);
  ASSERT_EQ(uploads.size(), 1u);
  ValidatorState st;
  auto judged = [&](std::uint64_t global_step) {
    st.model.global_step = global_step;
    return sole_evaluation(w, uploads, st, cx);
  };
  o_.protocol.outer_lr = 0.7;
  o_.protocol.outer_lr_late = 0.2;
  o_.protocol.outer_lr_late_from_samples = 5 * kSamples;  // five sets'
  const Evaluation before = judged(4), at = judged(5), later = judged(50);
  o_.protocol.outer_lr_late = 0;
  const Evaluation base_rate = judged(5);
  o_.protocol.outer_lr = 0.2;
  const Evaluation late_rate = judged(0);
  ASSERT_TRUE(before.valid && at.valid && base_rate.valid && late_rate.valid);
  EXPECT_NE(before.loss_after_rand, at.loss_after_rand);
  for (const Evaluation* e : {&at, &later}) {
    EXPECT_EQ(e->loss_after_rand, late_rate.loss_after_rand);
    EXPECT_EQ(e->loss_after_own, late_rate.loss_after_own);
  }
  EXPECT_EQ(before.loss_after_rand, base_rate.loss_after_rand);
  EXPECT_EQ(before.loss_after_own, base_rate.loss_after_own);
}

// validator.gradient_check through the real evaluate: off (the default)
// takes no gradient and records no alignment; measure records both cosines
// and changes nothing else about the evaluation; require marks them as
// counted (gauntlet_test checks what counting does).
TEST_F(ValidatorInProcess, TheGradientCheckRunsOnlyWhereItIsAskedFor) {
  auto p = parts();
  WindowContext cx = context(*p);
  const std::uint64_t w = 3;
  auto uploads = one_upload_gathered(w, cx);
  ASSERT_EQ(uploads.size(), 1u);
  ValidatorState st;
  auto judged = [&](const std::string& check) {
    o_.validator.gradient_check = check;
    return sole_evaluation(w, uploads, st, cx);
  };
  EXPECT_EQ(validator::ValidatorOptions{}.gradient_check, "off");
  const Evaluation off = judged("off"), measured = judged("measure"), required = judged("require");
  ASSERT_TRUE(off.valid && measured.valid && required.valid);
  EXPECT_TRUE(std::isnan(off.align_own) && std::isnan(off.align_rand));
  EXPECT_FALSE(off.align_required);
  for (const Evaluation* e : {&measured, &required}) {
    EXPECT_TRUE(std::isfinite(e->align_own) && std::isfinite(e->align_rand));
    EXPECT_GE(e->align_own, -1.0);
    EXPECT_LE(e->align_own, 1.0);
    EXPECT_EQ(e->loss_after_own, off.loss_after_own);
    EXPECT_EQ(e->loss_after_rand, off.loss_after_rand);
    EXPECT_EQ(e->own_z, off.own_z);
  }
  EXPECT_FALSE(measured.align_required);
  EXPECT_TRUE(required.align_required);
  EXPECT_EQ(required.align_own, measured.align_own);
}

// Scoring that a norm cannot game (issue #28): every update is evaluated at
// the window's median norm, so a miner that multiplies its update by k > 0
// is measured on exactly what the unscaled update shows; far above the
// median (k = 50) it counts only in part (norm_fit), so no k earns more. Three uids with a
// record set the median (a newcomer never does); the fourth, a newcomer,
// commits its update scaled by each k in turn, and the real evaluate judges
// it every time on the same samples.
TEST_F(ValidatorInProcess, ScalingAnUpdateChangesNothingItIsScoredOn) {
  auto p = parts();
  WindowContext cx = context(*p);
  const std::uint64_t w = 3;
  mine_through(protocol::WindowClock(o_.protocol).slot_block(w), 100);
  const double in_slot = slot_start_of(w) + 1;
  ValidatorState st;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Miner& m = add_miner();
    upload(m, w, honest_packet(m, w, 0.01f, seed), in_slot);
    st.scores[m.uid].evaluations = 1;  // a record, valid when last evaluated: admitted
  }
  Miner& scaler = add_miner();
  auto judged = [&](float k, double at) {
    upload(scaler, w, honest_packet(scaler, w, 0.01f * k, 9), at);
    auto uploads = gather_once(w, cx);
    EXPECT_TRUE(uploads.is_ok()) << uploads.status();
    if (!uploads.is_ok()) return Evaluation{};
    auto evaluated = evaluate(w, *uploads, st, cx);
    EXPECT_TRUE(evaluated.is_ok()) << evaluated.status();
    if (!evaluated.is_ok()) return Evaluation{};
    EXPECT_EQ(evaluated->input.evaluations.size(), 4u);
    for (const auto& e : evaluated->input.evaluations)
      if (e.uid == scaler.uid) return e;
    ADD_FAILURE() << "the scaled update was not evaluated";
    return Evaluation{};
  };
  const Evaluation base = judged(1.0f, in_slot);
  ASSERT_TRUE(base.valid) << base.reason;
  ASSERT_NE(base.loss_after_rand, base.loss_before_rand);  // the update moved the model
  const double gain = (base.loss_before_rand - base.loss_after_rand) / base.loss_before_rand;
  const double own_gain = (base.loss_before_own - base.loss_after_own) / base.loss_before_own;
  double at = in_slot;
  for (float k : {0.25f, 2.0f, 4.0f, 50.0f}) {
    SCOPED_TRACE(fmt::format("k = {}", k));
    const Evaluation e = judged(k, at += 0.1);
    ASSERT_TRUE(e.valid) << e.reason;
    EXPECT_EQ(e.loss_before_rand, base.loss_before_rand);
    // Equal but for float rounding in the decode (k·u, then scaled back).
    EXPECT_NEAR(gradient_score(e), gain, 1e-4 * std::abs(gain));
    EXPECT_NEAR((e.loss_before_own - e.loss_after_own) / e.loss_before_own, own_gain, 1e-4 * std::abs(own_gain));
    EXPECT_EQ(binary_indicator(e), binary_indicator(base));
    // Its norm over the admitted median: k times the unscaled one's.
    EXPECT_NEAR(e.norm_ratio, k * base.norm_ratio, 1e-4 * k * base.norm_ratio);
    const ScoringParams& sp = o_.protocol.scoring;
    EXPECT_LE(credited_score(e, sp), credited_score(base, sp) + 1e-4 * std::abs(gain));
    if (k == 50.0f) {
      EXPECT_LT(norm_fit(e, sp), 0.2);
    }
  }
}

// validator.eval_window_share (issue #26): on a machine too slow for the
// window's choice, the evaluate step starts no evaluation after its
// deadline. It evaluates the first of the choice, the most urgent first;
// the uids left wait longer, and go first in the next window.
TEST_F(ValidatorInProcess, EvaluationsStopAtTheDeadlineAndTheUidsLeftGoFirstNextWindow) {
  auto p = parts();
  WindowContext cx = context(*p);
  const std::uint64_t w = 3;
  mine_through(protocol::WindowClock(o_.protocol).slot_block(w), 100);
  const double in_slot = slot_start_of(w) + 1;
  ValidatorState st;
  std::vector<std::uint16_t> uids;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Miner& m = add_miner();
    upload(m, w, honest_packet(m, w, 0.01f, seed), in_slot);
    st.scores[m.uid].evaluations = 1;  // a record, last evaluated a window ago
    st.scores[m.uid].waiting = 1;
    uids.push_back(m.uid);
  }
  auto uploads = gather_once(w, cx);
  ASSERT_TRUE(uploads.is_ok()) << uploads.status();
  const auto chosen = choose_for_evaluation(uids, st.scores, o_.validator.eval_per_window, o_.validator.eval_newcomers,
                                            window_seed(cx.private_seed, w));
  ASSERT_EQ(chosen.size(), 5u);

  // Without a deadline: all five.
  auto unbounded = evaluate(w, *uploads, st, cx);
  ASSERT_TRUE(unbounded.is_ok()) << unbounded.status();
  EXPECT_EQ(unbounded->input.evaluations.size(), 5u);
  EXPECT_EQ(unbounded->summary.evaluated.size(), 5u);

  // The first evaluation always starts; the clock reads 1 before the
  // second, and 2, past the deadline, before the third.
  p->io.clock = std::make_shared<TickingClock>();
  auto cut = evaluate(w, *uploads, st, cx, 1.5);
  ASSERT_TRUE(cut.is_ok()) << cut.status();
  ASSERT_EQ(cut->input.evaluations.size(), 2u);
  std::vector<std::uint16_t> first_two(chosen.begin(), chosen.begin() + 2);
  EXPECT_EQ(cut->input.evaluations[0].uid, first_two[0]);
  EXPECT_EQ(cut->input.evaluations[1].uid, first_two[1]);
  std::sort(first_two.begin(), first_two.end());
  EXPECT_EQ(cut->summary.evaluated, first_two);  // what the window's record says was evaluated

  // A deadline already past still lets one evaluation start: a window
  // always moves some uid's record.
  auto late = evaluate(w, *uploads, st, cx, 0.0);
  ASSERT_TRUE(late.is_ok()) << late.status();
  EXPECT_EQ(late->input.evaluations.size(), 1u);

  // Next window, room for three: the three left, who have now waited longest.
  WindowInput in = cut->input;
  score_window(st.scores, in, o_.protocol.scoring);
  auto next =
      choose_for_evaluation(uids, st.scores, 3, o_.validator.eval_newcomers, window_seed(cx.private_seed, w + 1));
  std::sort(next.begin(), next.end());
  std::vector<std::uint16_t> left(chosen.begin() + 2, chosen.end());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(next, left);
}

}  // namespace
}  // namespace crucible::validator
