// Incentive integrity end to end (docs/reliability.md): the real validator
// and two honest crucible-miner processes on anvil, beside rational
// attackers played by this test, each a registered uid with its own store:
// a copy mutated with noise and re-compressed, a peer's update from two
// windows back, its own update from two windows back, the lead's last
// aggregate, a sign-flipped and a scaled copy of a peer's last update, and
// an all-zero update. Each must end with no weight on chain and a final
// score below every honest miner's; the honest miners are never flagged.
// The seed of the validator's private choices and of the attackers comes
// from CRUCIBLE_E2E_SEED (default 1): the test command runs one seed, and
//   for s in 2 3; do CRUCIBLE_E2E_SEED=$s build/bin/e2e_tests --gtest_filter='IncentiveTest.*'; done
// runs the others.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "crucible/chain/local_chain.h"
#include "crucible/common/retry.h"
#include "crucible/protocol/peers.h"
#include "e2e/network_base.h"

namespace crucible {
namespace {

using e2e::NetworkBase;
namespace fs = std::filesystem;
namespace keys = protocol::keys;
using ::testing::HasSubstr;

enum class Play { kMutated, kReplayPeer, kReplayOwn, kAggregate, kSignFlip, kScaled, kZero };
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
  }
  return "?";
}

std::uint64_t e2e_seed() {
  const char* s = std::getenv("CRUCIBLE_E2E_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 1;
}

struct Player {
  Play play;
  chain::PrivateKey key;
  std::uint16_t uid = 0;
  std::unique_ptr<storage::LocalStore> store;
};

class IncentiveTest : public NetworkBase {
 protected:
  void SetUp() override {
    // Nine miners to evaluate each window: longer windows than the other
    // suites, so that the honest miners' pipeline (set, train, commit)
    // fits on a 2-core machine.
    blocks_per_window_ = 12;
    // Every assigned sample in the own-data check: with two honest miners
    // and full outer steps, four samples leave own and random gains within
    // noise of each other in some windows.
    eval_batches_ = e2e::kSamples;
    start_network();
    for (Play p : {Play::kMutated, Play::kReplayPeer, Play::kReplayOwn, Play::kAggregate, Play::kSignFlip,
                   Play::kScaled, Play::kZero}) {
      Player a{p, *chain::PrivateKey::generate(), 0, nullptr};
      ASSERT_TRUE(chain::local_fund(chain_->url(), a.key.address(), chain::U256(1'000'000'000'000'000'000ull)).is_ok());
      a.uid = testing::register_key(*chain_, a.key);
      const fs::path root = dir_.path() / fmt::format("attacker-{}", play_name(p));
      testing::commit_location(*chain_, a.key, "file://" + root.string());
      auto s = storage::LocalStore::open(root);
      ASSERT_TRUE(s.is_ok());
      a.store = std::move(*s);
      players_.push_back(std::move(a));
    }
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
        auto merged = protocol::fetch_and_merge(*set, lead, specs_, 1 << 30);
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
    }
  }

  std::vector<Player> players_;
};

std::string rating_json(storage::StateStore& db, std::uint16_t uid) {
  auto v = db.get(storage::Family::kRatings, validator::rating_key(uid));
  return v.is_ok() && v->has_value() ? std::string((*v)->begin(), (*v)->end()) : "(none)";
}

TEST_F(IncentiveTest, ReplaysMutatedCopiesAndFreeRidersEarnNothing) {
  const std::uint64_t seed = e2e_seed();
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  auto reader = chain::EvmChain::connect(chain::to_evm_options(testing::chain_options(*chain_)), std::nullopt);
  ASSERT_TRUE(reader.is_ok());
  auto validator = start_validator(
      "validator", fmt::format("max_windows = {}\nrandom_seed = \"seed-{}\"", e2e::kValidatorWindows, seed));
  auto a = start_miner(0);
  auto b = start_miner(1);
  auto honest_store = storage::LocalStore::open(dir_.path() / "honest0-store");
  auto lead_store = storage::LocalStore::open(dir_.path() / "validator-store");
  ASSERT_TRUE(honest_store.is_ok() && lead_store.is_ok());

  auto head = (*reader)->block_number();
  ASSERT_TRUE(head.is_ok());
  std::uint64_t w = *head / blocks_per_window_;
  bool done = false;
  std::string log;
  for (int round = 0; round < e2e::kValidatorWindows + 4 && !done; ++round, ++w) {
    const std::uint64_t first = (w + 1) * blocks_per_window_;  // w's slot opens
    for (;;) {
      auto h = (*reader)->block_number();
      if (h.is_ok() && *h >= first) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    for (auto& p : players_) play(p, w, **honest_store, **lead_store, rng);
    log = validator->read_until("validator stopped", 100);
    done = log.find("validator stopped") != std::string::npos;
  }
  ASSERT_EQ(validator->wait(180'000), 0) << log;
  log = validator->read_until("validator stopped", 5'000);

  auto db = storage::StateStore::open((dir_.path() / "validator-state/db").string());
  ASSERT_TRUE(db.is_ok()) << db.status();
  auto final_of = [&](std::uint16_t uid) { return NetworkBase::final_of(**db, uid); };
  auto reasons = rejections(**db);
  for (std::uint16_t h : honest_uids_) {
    EXPECT_GT(final_of(h), 0.0) << "honest uid " << h << "\n" << log << "\nrating: " << rating_json(**db, h);
    EXPECT_EQ(reasons[h], "") << "honest uid " << h;
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
      case Play::kAggregate:
        EXPECT_THAT(r, HasSubstr("replay: like the aggregate applied after window"));
        break;
      case Play::kZero:
        break;  // well-formed, and worthless: it loses on the merits
    }
  }
  auto onchain = onchain_weights(**reader).weights;
  for (std::uint16_t h : honest_uids_) EXPECT_GT(onchain[h], 0u) << "honest uid " << h;
  for (const auto& p : players_) EXPECT_EQ(onchain.count(p.uid), 0u) << play_name(p.play);
}

}  // namespace
}  // namespace crucible
