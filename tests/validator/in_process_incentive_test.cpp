// Incentive integrity (docs/reliability.md), in process: the validator and
// two honest MinerNodes on the fake chain, training on the Brown corpus,
// beside rational attackers played by this test, each a registered uid
// with its own store: a copy mutated with noise and re-compressed, a peer's
// update from two windows back, its own update from two windows back, the
// lead's last aggregate, a sign-flipped and a scaled copy of a peer's last
// update, an all-zero update, a copied fingerprint (an honest peer's model
// digest in its packet and the peer's fingerprint file in its store), a
// miner that follows the network and trains with the miner's inner loop on
// samples it was not assigned while claiming its own sample digest, one
// that follows the network and trains honestly on its own samples, then
// uploads its update multiplied by 50 (correctly committed and signed), and
// a swarm of fresh sybils, more than the honest miners, that register once
// the others have a record and upload large random updates. Each must end
// with no weight on chain (the x50 miner, whose work is honest: below every
// honest miner's weight) and a final score below every honest miner's; no
// sybil enters an aggregation set; the honest miners are never flagged.
// (Was the e2e IncentiveTest of real binaries on anvil; the attackers play
// the same moves.) The seed of the genesis model and of the validator's and
// attackers' choices comes from CRUCIBLE_E2E_SEED (default 1):
//   for s in 1 2 3; do CRUCIBLE_E2E_SEED=$s build/bin/network_tests --gtest_filter='InProcessIncentive.*'; done
#include <gmock/gmock.h>

#include <random>
#include <set>

#include "crucible/common/dataset.h"
#include "crucible/kernels/backend.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/miner/inner_loop.h"
#include "crucible/protocol/model_chain.h"
#include "crucible/protocol/peers.h"
#include "crucible/protocol/update.h"
#include "support/validator_records.h"
#include "validator/in_process_network.h"

namespace crucible {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace keys = protocol::keys;

enum class Play {
  kMutated,
  kReplayPeer,
  kReplayOwn,
  kAggregate,
  kSignFlip,
  kScaled,
  kZero,
  kCopiedPrint,
  kOtherData,
  kScaled50,
  kSybil
};
constexpr int kSybils = 4;  // twice the honest set
constexpr std::uint32_t kWindows = 8;
const char* play_name(Play p) {
  switch (p) {
    case Play::kMutated:
      return "mutated-copy";
    case Play::kReplayPeer:
      return "replay-peer";
    case Play::kReplayOwn:
      return "replay-own";
    case Play::kAggregate:
      return "aggregate";
    case Play::kSignFlip:
      return "sign-flip";
    case Play::kScaled:
      return "scaled";
    case Play::kZero:
      return "zero";
    case Play::kCopiedPrint:
      return "copied-print";
    case Play::kOtherData:
      return "other-data";
    case Play::kScaled50:
      return "scaled-x50";
    case Play::kSybil:
      return "sybil";
  }
  return "?";
}

// A miner played by the test: it follows the lead's aggregation sets as a
// miner does (so it holds the validator's model and its fingerprint is
// right) and trains with the miner's own inner loop and error feedback.
struct FollowingTrainer {
  std::unique_ptr<model::Replica> replica;
  std::unique_ptr<miner::InnerLoop> loop;
  model::TensorValues ef;
  protocol::ChainState chain;  // where its replica stands in the lead's chain of sets
};

struct Player {
  Play play;
  chain::PrivateKey key;
  std::uint16_t uid = 0;
  std::unique_ptr<storage::LocalStore> store;
  fs::path root;
};

class InProcessIncentive : public testing_network::InProcessNetwork {
 protected:
  void SetUp() override {
    InProcessNetwork::SetUp();
    seed_ = testing_network::e2e_seed();
    use_brown();
    auto ds = data::Dataset::open(data_dir_.string());
    ASSERT_TRUE(ds.is_ok()) << ds.status();
    dataset_.emplace(std::move(*ds));
    auto genesis = model::Replica::create(model_, model::ReplicaOptions{"cpu", 1}, seed_);
    ASSERT_TRUE(genesis.is_ok()) << genesis.status();
    specs_ = (*genesis)->specs();
    for (Play p : {Play::kOtherData, Play::kScaled50}) {
      FollowingTrainer& t = trainers_[p];
      auto replica = model::Replica::create(model_, model::ReplicaOptions{"cpu", 1}, seed_);
      ASSERT_TRUE(replica.is_ok()) << replica.status();
      t.replica = std::move(*replica);
      miner::MinerOptions mo;  // the honest miners' (add_learning_miner)
      mo.inner_steps = 4;
      mo.micro_batch = 4;
      mo.lr = 0.003;
      mo.warmup_steps = 0;
      mo.threads = 1;
      auto loop = miner::InnerLoop::create(*t.replica, mo);
      ASSERT_TRUE(loop.is_ok()) << loop.status();
      t.loop = std::move(*loop);
      for (const auto& spec : specs_) t.ef.emplace_back(static_cast<std::size_t>(spec.numel()), 0.0f);
    }
    std::vector<Play> plays{Play::kMutated, Play::kReplayPeer, Play::kReplayOwn,   Play::kAggregate, Play::kSignFlip,
                            Play::kScaled,  Play::kZero,       Play::kCopiedPrint, Play::kOtherData, Play::kScaled50};
    plays.insert(plays.end(), kSybils, Play::kSybil);
    for (Play p : plays) {
      Player a{p, testing::test_key(600 + static_cast<std::uint32_t>(players_.size())), 0, nullptr, {}};
      a.root = dir_.path() / fmt::format("attacker-{}-{}", play_name(p), players_.size());
      auto s = storage::LocalStore::open(a.root);
      ASSERT_TRUE(s.is_ok());
      a.store = std::move(*s);
      if (p != Play::kSybil) enrol(a);  // the sybils come later
      players_.push_back(std::move(a));
    }
  }

  void enrol(Player& a) {
    a.uid = fake_.add_neuron(a.key);
    fake_.set_commitment_of(a.uid, storage::encode_location(testing::file_store(a.root)));
  }

  chain::Hash32 digest_for(std::uint16_t uid, std::uint64_t w) {
    const auto L = static_cast<std::uint64_t>(model_.seq_len);
    auto idx = dataset_->assignment(uid, w, 16, L);
    EXPECT_TRUE(idx.is_ok()) << idx.status();
    return idx.is_ok() ? dataset_->digest(*idx, L) : chain::Hash32{};
  }

  // A miner's two puts: the commitment to `packet`, then the packet.
  static void commit_and_put(storage::ObjectStore& store, std::uint64_t w, const Bytes& packet) {
    const chain::Hash32 c = chain::keccak256(packet);
    ASSERT_TRUE(store.put(keys::commitment(w), ByteSpan(c.data(), c.size())).is_ok());
    ASSERT_TRUE(store.put(keys::gradient(w), packet).is_ok());
  }

  // The dense values of a packet's update.
  model::TensorValues values_of(const Bytes& packet) {
    auto opened = chain::open_packet(packet);
    EXPECT_TRUE(opened.is_ok()) << opened.status();
    model::TensorValues out;
    if (!opened.is_ok()) return out;
    auto tensors = protocol::decode_update(opened->packet, specs_);
    EXPECT_TRUE(tensors.is_ok()) << tensors.status();
    if (!tensors.is_ok()) return out;
    for (std::size_t t = 0; t < tensors->size(); ++t) {
      out.emplace_back(static_cast<std::size_t>(specs_[t].numel()), 0.0f);
      EXPECT_TRUE(kernels::decompress((*tensors)[t], out.back()).is_ok());
    }
    return out;
  }

  // Compressed like a miner's update.
  std::vector<packet::Tensor> compressed(const model::TensorValues& values) {
    std::vector<packet::Tensor> out;
    for (std::size_t t = 0; t < specs_.size(); ++t) {
      auto c = kernels::compress(values[t], specs_[t].shape, 1);
      EXPECT_TRUE(c.is_ok()) << c.status();
      out.push_back(*kernels::to_packet_tensor(specs_[t].name, specs_[t].shape, *c));
    }
    return out;
  }

  model::TensorValues normal(std::mt19937& rng, float sd) {
    std::normal_distribution<float> n(0.0f, sd);
    model::TensorValues v;
    for (const auto& s : specs_) {
      v.emplace_back(static_cast<std::size_t>(s.numel()));
      for (float& x : v.back()) x = n(rng);
    }
    return v;
  }

  // Commits to and puts `values`, compressed like a miner's, as a's update for w.
  void upload(const Player& a, std::uint64_t w, const model::TensorValues& values) {
    if (values.empty()) return;
    packet::Packet p;
    p.window = w;
    p.uid = a.uid;
    p.sample_digest = digest_for(a.uid, w);
    p.tensors = compressed(values);
    auto sealed = chain::seal_packet(p, a.key);
    ASSERT_TRUE(sealed.is_ok());
    commit_and_put(*a.store, w, *sealed);
  }

  std::optional<Bytes> get(storage::ObjectStore& store, const std::string& key) {
    auto g = store.get(key, 1 << 30);
    return g.is_ok() ? std::optional<Bytes>(g->data) : std::nullopt;
  }

  static double rms(const std::vector<float>& t) {
    double sq = 0;
    for (float x : t) sq += double(x) * x;
    return std::sqrt(sq / static_cast<double>(t.size()));
  }

  // What each attacker uploads at the start of w's slot, from what is public by then.
  void play(Player& a, std::uint64_t w, storage::ObjectStore& honest, storage::ObjectStore& lead, std::mt19937& rng) {
    if (a.play == Play::kSybil && !sybils_playing_) return;
    const auto last = w >= 1 ? get(honest, keys::gradient(w - 1)) : std::nullopt;
    const auto older = w >= 2 ? get(honest, keys::gradient(w - 2)) : std::nullopt;
    switch (a.play) {
      case Play::kMutated: {
        if (!last) return;
        auto v = values_of(*last);
        for (auto& t : v) {
          std::normal_distribution<float> noise(0.0f, 0.3f * static_cast<float>(rms(t)));
          for (float& x : t) x += noise(rng);
        }
        return upload(a, w, v);
      }
      case Play::kReplayPeer:
        if (older) upload(a, w, values_of(*older));
        return;
      case Play::kReplayOwn:  // its own update of two windows back, or (at first) a fresh small one
        if (auto mine = w >= 2 ? get(*a.store, keys::gradient(w - 2)) : std::nullopt) {
          return upload(a, w, values_of(*mine));
        }
        return upload(a, w, normal(rng, 0.01f));
      case Play::kAggregate: {
        if (w < 1) return;
        auto set_bytes = get(lead, keys::aggregate(w - 1));
        if (!set_bytes) return;
        auto set = protocol::decode_set(*set_bytes);
        if (!set.is_ok() || set->uids.empty()) return;
        auto merged = protocol::fetch_and_merge(*set, lead, specs_, 1 << 30, *kernels::cpu_backend(1));
        if (merged.is_ok()) upload(a, w, *merged);
        return;
      }
      case Play::kSignFlip:
      case Play::kScaled: {
        if (!last) return;
        auto v = values_of(*last);
        const float k = a.play == Play::kSignFlip ? -1.0f : 4.0f;
        for (auto& t : v)
          for (float& x : t) x *= k;
        return upload(a, w, v);
      }
      case Play::kZero: {
        model::TensorValues v;
        for (const auto& s : specs_) v.emplace_back(static_cast<std::size_t>(s.numel()), 0.0f);
        return upload(a, w, v);
      }
      case Play::kCopiedPrint:  // claims to hold the model an honest peer holds, without holding it
        return copy_print(a, w, honest, last, rng);
      case Play::kOtherData:  // the samples of a uid nobody mines, claimed as its own
        return train_following(a, w, lead, static_cast<std::uint16_t>(a.uid + 100), 1.0f);
      case Play::kScaled50:  // honest work, multiplied by 50
        return train_following(a, w, lead, a.uid, 50.0f);
      case Play::kSybil: {  // random directions three times the size of an honest update
        if (!last) return;
        auto v = values_of(*last);
        for (auto& t : v) {
          std::normal_distribution<float> n(0.0f, 3.0f * static_cast<float>(rms(t)));
          for (float& x : t) x = n(rng);
        }
        return upload(a, w, v);
      }
    }
  }

  void copy_print(Player& a, std::uint64_t w, storage::ObjectStore& honest, const std::optional<Bytes>& last,
                  std::mt19937& rng) {
    if (!last) return;
    auto opened = chain::open_packet(*last);
    ASSERT_TRUE(opened.is_ok());
    packet::Packet p;
    p.window = w;
    p.uid = a.uid;
    p.global_step = opened->packet.global_step;
    p.model_digest = opened->packet.model_digest;
    p.sample_digest = digest_for(a.uid, w);
    p.tensors = compressed(normal(rng, 0.02f));
    auto sealed = chain::seal_packet(p, a.key);
    ASSERT_TRUE(sealed.is_ok());
    commit_and_put(*a.store, w, *sealed);
    auto print = get(honest, keys::fingerprint(w));
    if (!print) print = get(honest, keys::fingerprint(w - 1));
    if (print) {
      ASSERT_TRUE(a.store->put(keys::fingerprint(w), *print).is_ok());
    }
  }

  // A following trainer's window: catch up with the lead, then train on
  // `data_uid`'s samples and upload the update times `scale` as a's own work.
  void train_following(const Player& a, std::uint64_t w, storage::ObjectStore& lead, std::uint16_t data_uid,
                       float scale) {
    FollowingTrainer& t = trainers_.at(a.play);
    const auto codec = kernels::cpu_backend(1);  // outlives the chain, which keeps a reference
    protocol::ChainModelOf<model::Replica> link(*t.replica);
    protocol::ModelChain sets(
        link, t.chain, *codec,
        {testing_network::network_protocol(blocks_per_window_).outer(), 1 << 30, model_.canonical(), "miner", false});
    auto windows = sets.published_after(lead, 4096);
    ASSERT_TRUE(windows.is_ok()) << windows.status();
    for (std::uint64_t x : *windows) {
      if (x >= w) break;
      auto desync = sets.advance(x, lead);
      ASSERT_TRUE(desync.is_ok()) << desync.status();
      ASSERT_FALSE(desync->has_value()) << "the trainer could not apply set " << x << ": " << to_string(**desync);
    }
    const auto L = static_cast<std::uint64_t>(model_.seq_len);
    auto idx = dataset_->assignment(data_uid, w, 16, L);
    ASSERT_TRUE(idx.is_ok());
    auto tokens = dataset_->tokens(*idx, L);
    ASSERT_TRUE(tokens.is_ok());
    const chain::Hash32& basis = t.chain.basis;
    protocol::Fingerprint fp{w, a.uid, basis,
                             t.replica->values_at(protocol::fingerprint_positions(basis, a.uid, specs_))};
    auto trained = t.loop->train_window(*tokens, 16, nullptr, nullptr);
    ASSERT_TRUE(trained.is_ok()) << trained.status();
    for (auto& tensor : trained->delta)
      for (float& x : tensor) x *= scale;
    packet::Packet p;
    p.window = w;
    p.uid = a.uid;
    p.global_step = t.chain.global_step;
    p.model_digest = protocol::fingerprint_digest(fp);
    p.sample_digest = digest_for(a.uid, w);  // the other-data player's lie
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      auto c = kernels::error_feedback_step(t.ef[i], trained->delta[i], specs_[i].shape, 0.8f, 1);
      ASSERT_TRUE(c.is_ok()) << c.status();
      p.tensors.push_back(*kernels::to_packet_tensor(specs_[i].name, specs_[i].shape, *c));
    }
    auto sealed = chain::seal_packet(p, a.key);
    ASSERT_TRUE(sealed.is_ok());
    commit_and_put(*a.store, w, *sealed);
    const std::string print = protocol::encode_fingerprint(fp, specs_);
    ASSERT_TRUE(
        a.store->put(keys::fingerprint(w), ByteSpan(reinterpret_cast<const std::uint8_t*>(print.data()), print.size()))
            .is_ok());
  }

  // The attackers' side of the run: each window's moves at its slot's
  // first block, the sybils registering after the first window, until `done`.
  void play_windows(const std::atomic<bool>& done) {
    std::mt19937 rng(static_cast<std::uint32_t>(seed_));
    auto honest = storage::LocalStore::open(dir_.path() / "miner0-store");
    auto lead = storage::LocalStore::open(dir_.path() / "validator-store");
    ASSERT_TRUE(honest.is_ok() && lead.is_ok());
    for (std::uint64_t w = w0_; !done.load(); ++w) {
      const std::uint64_t first = (w + 1) * blocks_per_window_;  // w's slot opens
      while (fake_.head() < first && clock_->sleep(std::chrono::milliseconds(20), done)) {
      }
      if (done.load()) return;
      if (w == w0_ + 1) {  // the others have a record: the swarm registers, and plays from the next slot
        for (auto& a : players_)
          if (a.play == Play::kSybil) enrol(a);
      }
      if (w == w0_ + 2) sybils_playing_ = true;
      for (auto& p : players_) play(p, w, **honest, **lead, rng);
    }
  }

  // The uids of every aggregation set the lead published.
  std::set<std::uint16_t> ever_aggregated(storage::ObjectStore& lead) {
    std::set<std::uint16_t> out;
    auto listed = lead.list_all(keys::aggregate_prefix(), 1000);
    EXPECT_TRUE(listed.is_ok());
    if (!listed.is_ok()) return out;
    EXPECT_FALSE(listed->empty());
    for (const auto& o : *listed) {
      auto bytes = get(lead, o.key);
      auto set = bytes ? protocol::decode_set(*bytes) : Result<protocol::AggregationSet>(not_found("gone"));
      EXPECT_TRUE(set.is_ok()) << o.key;
      if (set.is_ok()) out.insert(set->uids.begin(), set->uids.end());
    }
    return out;
  }

  // The lead's last weights on the fake chain, by uid.
  std::map<std::uint16_t, std::uint16_t> onchain() {
    std::map<std::uint16_t, std::uint16_t> out;
    const auto posts = fake_.weights();
    EXPECT_FALSE(posts.empty()) << "the validator posted no weights";
    if (posts.empty()) return out;
    for (std::size_t i = 0; i < posts.back().uids.size(); ++i) out[posts.back().uids[i]] = posts.back().values[i];
    return out;
  }

  std::uint64_t seed_ = 1;
  std::optional<data::Dataset> dataset_;
  std::vector<protocol::TensorSpec> specs_;
  std::vector<Player> players_;
  std::map<Play, FollowingTrainer> trainers_;
  bool sybils_playing_ = false;
};

TEST_F(InProcessIncentive, ReplaysMutatedCopiesAndFreeRidersEarnNothing) {
  for (std::size_t i = 0; i < miner_keys_.size(); ++i) add_learning_miner(i, kWindows + 1, seed_, 4);
  add_learning_validator(kWindows, seed_);
  std::atomic<bool> done{false};
  std::thread attackers([&, t = clock_->counted()] { play_windows(done); });
  run();
  done = true;
  attackers.join();
  ASSERT_TRUE(sybils_playing_) << "the sybils never played";

  storage::StateStore& db = validator_->state();
  auto final_of = [&](std::uint16_t uid) { return testing::final_of(db, uid); };
  auto reasons = testing::rejections(db);
  for (std::uint16_t h : miner_uids_) {
    EXPECT_GT(final_of(h), 0.0) << "honest uid " << h << "\nrating: " << testing::rating_json(db, h);
    EXPECT_EQ(reasons[h], "") << "honest uid " << h;
    for (const auto& p : players_) EXPECT_GT(final_of(h), final_of(p.uid)) << play_name(p.play);
    EXPECT_GT(testing::rating_field(db, h, "sync"), 0.0) << testing::rating_json(db, h);
  }
  for (const auto& p : players_) {
    const std::string& r = reasons[p.uid];
    SCOPED_TRACE(
        fmt::format("{} uid {}: {}\nrating: {}", play_name(p.play), p.uid, r, testing::rating_json(db, p.uid)));
    switch (p.play) {
      case Play::kMutated:
      case Play::kReplayPeer:
      case Play::kSignFlip:
      case Play::kScaled:
        EXPECT_THAT(r, HasSubstr(fmt::format("replay: like uid {}'s update", miner_uids_[0])));
        break;
      case Play::kReplayOwn:
        EXPECT_THAT(r, HasSubstr(fmt::format("replay: like uid {}'s update", p.uid)));
        break;
      case Play::kAggregate:  // the aggregate, or the honest update that dominates it: a replay either way
        EXPECT_THAT(r, AnyOf(HasSubstr("replay: like the aggregate applied after window"),
                             HasSubstr(fmt::format("replay: like uid {}'s update", miner_uids_[0])),
                             HasSubstr(fmt::format("replay: like uid {}'s update", miner_uids_[1]))));
        break;
      case Play::kZero:
      case Play::kSybil:
        break;                  // well-formed, and worthless: it loses on the merits
      case Play::kOtherData: {  // it holds the model: it loses on the own-data check (no trust), not on sync
        EXPECT_EQ(r, "");
        EXPECT_GT(testing::rating_field(db, p.uid, "sync"), 0.0);
        const double z =
            testing::rating_field(db, p.uid, "own_z_sum") / std::sqrt(testing::rating_field(db, p.uid, "own_z_norm2"));
        EXPECT_LT(z, protocol::ScoringParams{}.trust_z) << "its accumulated own-data z earns trust";
        EXPECT_EQ(final_of(p.uid), 0.0);
        break;
      }
      case Play::kCopiedPrint:  // a fingerprint not bound to its uid is no evidence of holding the model
        EXPECT_EQ(testing::rating_field(db, p.uid, "sync"), 0.0);
        break;
      case Play::kScaled50:  // valid, in sync, and credited a part of its gain: less evidence than any honest uid
        EXPECT_EQ(r, "");
        EXPECT_GT(testing::rating_field(db, p.uid, "sync"), 0.0);
        for (std::uint16_t h : miner_uids_) {
          EXPECT_LT(testing::rating_field(db, p.uid, "evidence"), testing::rating_field(db, h, "evidence"))
              << "honest: " << testing::rating_json(db, h);
        }
        break;
    }
  }
  auto lead = storage::LocalStore::open(dir_.path() / "validator-store");
  ASSERT_TRUE(lead.is_ok());
  const auto aggregated = ever_aggregated(**lead);
  for (std::uint16_t h : miner_uids_) EXPECT_EQ(aggregated.count(h), 1u) << "honest uid " << h;
  for (const auto& p : players_) {
    if (p.play != Play::kSybil) continue;
    EXPECT_GE(testing::rating_field(db, p.uid, "evaluations"), 1.0) << "sybil uid " << p.uid << " never evaluated";
    EXPECT_EQ(aggregated.count(p.uid), 0u) << "sybil uid " << p.uid;
  }
  auto weights = onchain();
  for (std::uint16_t h : miner_uids_) EXPECT_GT(weights[h], 0u) << "honest uid " << h;
  for (const auto& p : players_) {
    if (p.play == Play::kScaled50) {  // honest work scaled: below every honest miner's weight
      for (std::uint16_t h : miner_uids_) EXPECT_LT(weights[p.uid], weights[h]) << "honest uid " << h;
    } else {
      EXPECT_EQ(weights[p.uid], 0u) << play_name(p.play);
    }
  }
  for (std::uint16_t h : miner_uids_) {
    std::printf("seed %llu honest uid %u: final %.4f, weight %u\n", static_cast<unsigned long long>(seed_), h,
                final_of(h), weights[h]);
  }
  for (const auto& p : players_) {
    std::printf("seed %llu %s uid %u: final %.4f, weight %u\n", static_cast<unsigned long long>(seed_),
                play_name(p.play), p.uid, final_of(p.uid), weights[p.uid]);
  }
}

}  // namespace
}  // namespace crucible
