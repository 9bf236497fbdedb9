// Incentive integrity end to end (docs/reliability.md): the real validator
// and two honest crucible-miner processes on anvil, beside rational
// attackers played by this test, each a registered uid with its own store:
// a copy mutated with noise and re-compressed, a peer's update from two
// windows back, its own update from two windows back, the lead's last
// aggregate, a sign-flipped and a scaled copy of a peer's last update, an
// all-zero update, a copied fingerprint (an honest peer's model digest in
// its packet and the peer's fingerprint file in its store), a miner that
// follows the network and trains with the miner's inner loop on samples it
// was not assigned while claiming its own sample digest, one that follows
// the network and trains honestly on its own samples, then uploads its
// update multiplied by 50 (correctly committed and signed), and a swarm of
// fresh sybils, more than the honest miners, that register once the others
// have a record and upload large random updates. Each must end with no
// weight on chain (the ×50 miner, whose work is honest: below every honest
// miner's weight) and a final score below every honest miner's; no sybil
// enters an aggregation set; the honest miners are never flagged.
// The seed of the validator's private choices and of the attackers comes
// from CRUCIBLE_E2E_SEED (default 1): the test command runs one seed, and
//   for s in 2 3; do CRUCIBLE_E2E_SEED=$s build/bin/e2e_tests --gtest_filter='IncentiveTest.*'; done
// runs the others.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <thread>

#include "crucible/chain/local_chain.h"
#include "crucible/chain/substrate.h"
#include "crucible/common/replica.h"
#include "crucible/common/retry.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/miner/inner_loop.h"
#include "crucible/protocol/fingerprint.h"
#include "crucible/protocol/peers.h"
#include "e2e/network_base.h"
#include "support/http_client.h"

namespace crucible {
namespace {

using e2e::NetworkBase;
namespace fs = std::filesystem;
namespace keys = protocol::keys;
using ::testing::AnyOf;
using ::testing::HasSubstr;

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

std::uint64_t e2e_seed() {
  const char* s = std::getenv("CRUCIBLE_E2E_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 1;
}

// A miner played by the test: it follows the lead's aggregation sets as a
// miner does (so it holds the validator's model and its fingerprint is
// right) and trains with the miner's own inner loop and error feedback; the
// other-data player on samples it was not assigned (claiming the digest of
// its own assignment), the ×50 player on its own, scaling the result.
struct FollowingTrainer {
  std::unique_ptr<model::Replica> replica;
  std::unique_ptr<miner::InnerLoop> loop;
  model::TensorValues ef;
  std::optional<std::uint64_t> applied;
  chain::Hash32 basis{};
  std::uint64_t global_step = 0;
};

struct Player {
  Play play;
  chain::PrivateKey key;
  std::uint16_t uid = 0;
  std::unique_ptr<storage::LocalStore> store;
  std::string url;
};

class IncentiveTest : public NetworkBase {
 protected:
  void SetUp() override {
    // Nine miners to evaluate each window: longer windows than the other
    // suites, so that the honest miners' pipeline (set, train, commit)
    // fits on a 2-core machine.
    blocks_per_window_ = 12;
    start_network();
    std::vector<Play> plays{Play::kMutated, Play::kReplayPeer, Play::kReplayOwn,   Play::kAggregate, Play::kSignFlip,
                            Play::kScaled,  Play::kZero,       Play::kCopiedPrint, Play::kOtherData, Play::kScaled50};
    for (Play p : {Play::kOtherData, Play::kScaled50}) {
      // The trainers' model and inner loop: those of the honest miners (network_base.h)
      FollowingTrainer& t = trainers_[p];
      auto config = model::load_model_config(std::string(CRUCIBLE_SOURCE_DIR) + "/configs/models/tiny.toml");
      ASSERT_TRUE(config.is_ok());
      auto replica = model::Replica::create(*config, model::ReplicaOptions{"cpu", 1}, protocol::Options{}.init_seed);
      ASSERT_TRUE(replica.is_ok()) << replica.status();
      t.replica = std::move(*replica);
      miner::MinerOptions mo;
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
    plays.insert(plays.end(), kSybils, Play::kSybil);
    for (Play p : plays) {
      Player a{p, *chain::PrivateKey::generate(), 0, nullptr, ""};
      ASSERT_TRUE(chain::local_fund(chain_->url(), a.key.address(), chain::U256(1'000'000'000'000'000'000ull)).is_ok());
      const fs::path root = dir_.path() / fmt::format("attacker-{}-{}", play_name(p), players_.size());
      a.url = "file://" + root.string();
      auto s = storage::LocalStore::open(root);
      ASSERT_TRUE(s.is_ok());
      a.store = std::move(*s);
      if (p != Play::kSybil) enrol(a);  // the sybils come later (enrol_sybils)
      players_.push_back(std::move(a));
    }
  }

  void enrol(Player& a) {
    a.uid = testing::register_key(*chain_, a.key);
    testing::commit_location(*chain_, a.key, a.url);
  }

  // The swarm registers while the others already have a record; it plays
  // from the first slot after all have registered.
  void enrol_sybils() {
    for (auto& a : players_)
      if (a.play == Play::kSybil) enrol(a);
    sybils_ready_ = true;
  }

  // The dense values of a packet's update.
  model::TensorValues values_of(const Bytes& packet) {
    auto opened = chain::open_packet(packet);
    EXPECT_TRUE(opened.is_ok()) << opened.status();
    auto tensors = protocol::decode_update(opened->packet, specs_);
    EXPECT_TRUE(tensors.is_ok()) << tensors.status();
    model::TensorValues out;
    for (std::size_t t = 0; t < tensors->size(); ++t) {
      out.emplace_back(static_cast<std::size_t>(specs_[t].numel()), 0.0f);
      EXPECT_TRUE(kernels::decompress((*tensors)[t], out.back()).is_ok());
    }
    return out;
  }

  // Commits to and puts `values`, compressed like a miner's, as a's update for w.
  void upload(const Player& a, std::uint64_t w, const model::TensorValues& values) {
    packet::Packet p;
    p.window = w;
    p.uid = a.uid;
    p.sample_digest = digest_for(a.uid, w);
    for (std::size_t t = 0; t < specs_.size(); ++t) {
      auto c = kernels::compress(values[t], specs_[t].shape, 1);
      ASSERT_TRUE(c.is_ok()) << c.status();
      p.tensors.push_back(*kernels::to_packet_tensor(specs_[t].name, specs_[t].shape, *c));
    }
    auto sealed = chain::seal_packet(p, a.key);
    ASSERT_TRUE(sealed.is_ok());
    commit_and_put(*a.store, w, *sealed);
  }

  std::optional<Bytes> get(storage::ObjectStore& store, const std::string& key) {
    auto g = store.get(key, 1 << 30);
    return g.is_ok() ? std::optional<Bytes>(g->data) : std::nullopt;
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
          double sq = 0;
          for (float x : t) sq += double(x) * x;
          std::normal_distribution<float> noise(0.0f, 0.3f * static_cast<float>(std::sqrt(sq / t.size())));
          for (float& x : t) x += noise(rng);
        }
        return upload(a, w, v);
      }
      case Play::kReplayPeer:
        if (older) upload(a, w, values_of(*older));
        return;
      case Play::kReplayOwn: {  // its own update of two windows back, or (at first) a fresh small one
        if (auto mine = w >= 2 ? get(*a.store, keys::gradient(w - 2)) : std::nullopt) {
          return upload(a, w, values_of(*mine));
        }
        std::normal_distribution<float> normal(0.0f, 0.01f);
        model::TensorValues v;
        for (const auto& s : specs_) {
          v.emplace_back(static_cast<std::size_t>(s.numel()));
          for (float& x : v.back()) x = normal(rng);
        }
        return upload(a, w, v);
      }
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
      case Play::kCopiedPrint: {  // claims to hold the model an honest peer holds, without holding it
        if (!last) return;
        auto opened = chain::open_packet(*last);
        ASSERT_TRUE(opened.is_ok());
        packet::Packet p;
        p.window = w;
        p.uid = a.uid;
        p.global_step = opened->packet.global_step;
        p.model_digest = opened->packet.model_digest;
        p.sample_digest = digest_for(a.uid, w);
        p.tensors = random_update(w * 1000 + a.uid, 0.02f);
        auto sealed = chain::seal_packet(p, a.key);
        ASSERT_TRUE(sealed.is_ok());
        commit_and_put(*a.store, w, *sealed);
        auto print = get(honest, keys::fingerprint(w));
        if (!print) print = get(honest, keys::fingerprint(w - 1));
        if (print) {
          ASSERT_TRUE(a.store->put(keys::fingerprint(w), *print).is_ok());
        }
        return;
      }
      case Play::kOtherData:  // the samples of a uid nobody mines, claimed as its own
        return train_following(a, w, lead, static_cast<std::uint16_t>(a.uid + 100), 1.0f);
      case Play::kScaled50:  // honest work, multiplied by 50
        return train_following(a, w, lead, a.uid, 50.0f);
      case Play::kSybil: {  // random directions three times the size of an honest update
        if (!last) return;
        auto v = values_of(*last);
        for (auto& t : v) {
          double sq = 0;
          for (float x : t) sq += double(x) * x;
          std::normal_distribution<float> normal(0.0f, 3.0f * static_cast<float>(std::sqrt(sq / t.size())));
          for (float& x : t) x = normal(rng);
        }
        return upload(a, w, v);
      }
    }
  }

  // A following trainer's window: catch up with the lead, then train on
  // `data_uid`'s samples and upload the update times `scale` as a's own work.
  void train_following(const Player& a, std::uint64_t w, storage::ObjectStore& lead, std::uint16_t data_uid,
                       float scale) {
    FollowingTrainer& t = trainers_.at(a.play);
    for (std::uint64_t x = t.applied ? *t.applied + 1 : 0; x < w; ++x) {
      auto bytes = get(lead, keys::aggregate(x));
      if (!bytes) continue;
      auto set = protocol::decode_set(*bytes);
      ASSERT_TRUE(set.is_ok()) << set.status();
      ASSERT_EQ(set->prev, t.applied) << "the trainer missed a set";
      if (!set->uids.empty()) {
        auto merged = protocol::fetch_and_merge(*set, lead, specs_, 1 << 30, *kernels::cpu_backend(1));
        ASSERT_TRUE(merged.is_ok()) << merged.status();
        ASSERT_TRUE(t.replica->apply_update(*merged, protocol::Options{}.outer_lr).is_ok());
      }
      t.applied = x;
      t.basis = protocol::set_basis(*bytes);
      ++t.global_step;
    }
    auto idx = dataset_->assignment(data_uid, w, e2e::kSamples, 128);
    ASSERT_TRUE(idx.is_ok());
    auto tokens = dataset_->tokens(*idx, 128);
    ASSERT_TRUE(tokens.is_ok());
    protocol::Fingerprint fp{w, a.uid, t.basis,
                             t.replica->values_at(protocol::fingerprint_positions(t.basis, a.uid, specs_))};
    auto trained = t.loop->train_window(
        *tokens, e2e::kSamples, [](const miner::StepInfo&) {}, nullptr);
    ASSERT_TRUE(trained.is_ok()) << trained.status();
    for (auto& tensor : trained->delta)
      for (float& x : tensor) x *= scale;
    packet::Packet p;
    p.window = w;
    p.uid = a.uid;
    p.global_step = t.global_step;
    p.model_digest = protocol::fingerprint_digest(fp);
    p.sample_digest = digest_for(a.uid, w);  // the other-data player's lie
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      auto c = kernels::error_feedback_step(t.ef[i], trained->delta[i], specs_[i].shape, 0.95f, 1);
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

  std::vector<Player> players_;
  std::map<Play, FollowingTrainer> trainers_;
  std::atomic<bool> sybils_ready_{false};
  bool sybils_playing_ = false;
};

double rating_field(storage::StateStore& db, std::uint16_t uid, const char* field) {
  auto v = db.get(storage::Family::kRatings, validator::rating_key(uid));
  if (!v.is_ok() || !v->has_value()) return -1e9;
  return nlohmann::json::parse(**v)[field].get<double>();
}

TEST_F(IncentiveTest, ReplaysMutatedCopiesAndFreeRidersEarnNothing) {
  const std::uint64_t seed = e2e_seed();
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  auto reader = chain::EvmChain::connect(chain::to_evm_options(testing::chain_options(*chain_)), std::nullopt);
  ASSERT_TRUE(reader.is_ok());
  const int windows = e2e::kValidatorWindows + 2;  // so that the late sybils are evaluated
  auto validator =
      start_validator("validator", fmt::format("max_windows = {}\nrandom_seed = \"seed-{}\"", windows, seed));
  auto a = start_miner(0, windows + 2);
  auto b = start_miner(1, windows + 2);
  auto honest_store = storage::LocalStore::open(dir_.path() / "honest0-store");
  auto lead_store = storage::LocalStore::open(dir_.path() / "validator-store");
  ASSERT_TRUE(honest_store.is_ok() && lead_store.is_ok());

  auto head = (*reader)->block_number();
  ASSERT_TRUE(head.is_ok());
  std::uint64_t w = *head / blocks_per_window_;
  bool done = false;
  std::string log;
  std::thread sybils;
  for (int round = 0; round < windows + 4 && !done; ++round, ++w) {
    const std::uint64_t first = (w + 1) * blocks_per_window_;  // w's slot opens
    for (;;) {
      auto h = (*reader)->block_number();
      if (h.is_ok() && *h >= first) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (sybils_ready_ && !sybils_playing_) {
      sybils.join();
      sybils_playing_ = true;
    }
    for (auto& p : players_) play(p, w, **honest_store, **lead_store, rng);
    if (round == 1) sybils = std::thread([this] { enrol_sybils(); });
    log = validator->read_until("validator stopped", 100);
    done = log.find("validator stopped") != std::string::npos;
  }
  if (sybils.joinable()) sybils.join();
  ASSERT_TRUE(sybils_playing_) << "the sybils registered too late to play";
  ASSERT_EQ(validator->wait(180'000), 0) << log;
  log = validator->read_until("validator stopped", 5'000);

  auto db = storage::StateStore::open((dir_.path() / "validator-state/db").string());
  ASSERT_TRUE(db.is_ok()) << db.status();
  auto final_of = [&](std::uint16_t uid) { return NetworkBase::final_of(**db, uid); };
  auto reasons = rejections(**db);
  for (std::uint16_t h : honest_uids_) {
    EXPECT_GT(final_of(h), 0.0) << "honest uid " << h << "\n" << log << "\nrating: " << rating_json(**db, h);
    // Never flagged; a miner still starting may miss the validator's first window.
    std::string r = reasons[h];
    if (r.starts_with("missing: no gradient for the window; ")) r.erase(0, 37);
    EXPECT_EQ(r, "") << "honest uid " << h << ": " << reasons[h];
    for (const auto& p : players_) EXPECT_GT(final_of(h), final_of(p.uid)) << play_name(p.play);
  }
  for (const auto& p : players_) {
    const std::string& r = reasons[p.uid];
    SCOPED_TRACE(fmt::format("{}: {}", play_name(p.play), r));
    switch (p.play) {
      case Play::kMutated:
      case Play::kReplayPeer:
      case Play::kSignFlip:
      case Play::kScaled:
        EXPECT_THAT(r, HasSubstr(fmt::format("replay: like uid {}'s update", honest_uids_[0])));
        break;
      case Play::kReplayOwn:
        EXPECT_THAT(r, HasSubstr(fmt::format("replay: like uid {}'s update", p.uid)));
        break;
      case Play::kAggregate:  // the aggregate, or the honest update that dominates it: a replay either way
        EXPECT_THAT(r, AnyOf(HasSubstr("replay: like the aggregate applied after window"),
                             HasSubstr(fmt::format("replay: like uid {}'s update", honest_uids_[0])),
                             HasSubstr(fmt::format("replay: like uid {}'s update", honest_uids_[1]))));
        break;
      case Play::kZero:
      case Play::kSybil:
        break;                // well-formed, and worthless: it loses on the merits
      case Play::kOtherData:  // it holds the model: it loses on the own-data check, not on sync
        EXPECT_EQ(r, "");
        EXPECT_GT(rating_field(**db, p.uid, "sync"), 0.0) << rating_json(**db, p.uid);
        EXPECT_LT(rating_field(**db, p.uid, "bma"), 0.0) << rating_json(**db, p.uid);
        break;
      case Play::kCopiedPrint:  // a fingerprint not bound to its uid is no evidence of holding the model
        EXPECT_EQ(rating_field(**db, p.uid, "sync"), 0.0) << rating_json(**db, p.uid);
        break;
      case Play::kScaled50: {  // valid, in sync, and credited a part of its gain: less evidence than any honest uid
        std::string own = r;
        if (own.starts_with("missing: no gradient for the window; ")) own.erase(0, 37);
        EXPECT_EQ(own, "");
        EXPECT_GT(rating_field(**db, p.uid, "sync"), 0.0) << rating_json(**db, p.uid);
        for (std::uint16_t h : honest_uids_) {
          EXPECT_LT(rating_field(**db, p.uid, "evidence"), rating_field(**db, h, "evidence"))
              << rating_json(**db, p.uid) << "\nhonest: " << rating_json(**db, h);
        }
        break;
      }
    }
  }
  for (std::uint16_t h : honest_uids_) EXPECT_GT(rating_field(**db, h, "sync"), 0.0) << rating_json(**db, h);
  const auto aggregated = ever_aggregated(**lead_store);
  for (std::uint16_t h : honest_uids_) EXPECT_EQ(aggregated.count(h), 1u) << "honest uid " << h;
  for (const auto& p : players_) {
    if (p.play != Play::kSybil) continue;
    EXPECT_GE(rating_field(**db, p.uid, "evaluations"), 1.0) << "sybil uid " << p.uid << " never evaluated";
    EXPECT_EQ(aggregated.count(p.uid), 0u) << "sybil uid " << p.uid;
  }
  auto onchain = onchain_weights(**reader).weights;
  for (std::uint16_t h : honest_uids_) EXPECT_GT(onchain[h], 0u) << "honest uid " << h;
  for (const auto& p : players_) {
    if (p.play == Play::kScaled50) {  // honest work scaled: below every honest miner's weight
      for (std::uint16_t h : honest_uids_) EXPECT_LT(onchain[p.uid], onchain[h]) << "honest uid " << h;
    } else {
      EXPECT_EQ(onchain.count(p.uid), 0u) << play_name(p.play);
    }
  }
  // The figures the issue (#28) asks for.
  std::string figures;
  for (std::uint16_t h : honest_uids_) {
    figures += fmt::format("honest uid {}: final {:.4f}, weight {}\n", h, final_of(h), onchain[h]);
  }
  for (const auto& p : players_) {
    if (p.play == Play::kScaled50) {
      figures += fmt::format("scaled-x50 uid {}: final {:.4f}, weight {}\n", p.uid, final_of(p.uid), onchain[p.uid]);
    }
  }
  std::printf("%s", figures.c_str());
}

}  // namespace
}  // namespace crucible
