// The network end to end: a local chain, two honest crucible-miner processes,
// seven bad miners played by this test (each a registered uid with its own
// store), and crucible-validator as the lead. Every honest miner must
// outrank every bad one, and the weights read back from the chain must give
// the bad ones nothing.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "crucible/chain/abi.h"
#include "crucible/chain/evm_chain.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/chain/standins.h"
#include "crucible/common/dataset.h"
#include "crucible/common/model.h"
#include "crucible/common/sampler.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/checkpoint_pointer.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/update.h"
#include "crucible/storage/local_store.h"
#include "crucible/storage/state_store.h"
#include "crucible/validator/state.h"
#include "support/local_network.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

namespace fs = std::filesystem;
namespace keys = protocol::keys;
using ::testing::HasSubstr;

constexpr std::uint32_t kBlocksPerWindow = 8;
constexpr std::uint32_t kSamples = 16;
constexpr int kValidatorWindows = 4;

enum class Bad { kNoise, kNan, kShape, kCopy, kLate, kOtherData, kWrongSigner };
const char* bad_name(Bad b) {
  switch (b) {
    case Bad::kNoise:
      return "noise";
    case Bad::kNan:
      return "nan";
    case Bad::kShape:
      return "shape";
    case Bad::kCopy:
      return "copy";
    case Bad::kLate:
      return "late";
    case Bad::kOtherData:
      return "other-data";
    case Bad::kWrongSigner:
      return "wrong-signer";
  }
  return "?";
}

struct BadMiner {
  Bad kind;
  chain::PrivateKey key;
  std::uint16_t uid = 0;
  std::unique_ptr<storage::LocalStore> store;
  fs::path root;
};

// A local network: data, chain, the network's config, and node launchers.
class NetworkBase : public ::testing::Test {
 protected:
  void start_network() {
    data_ = testing::prepare_brown(dir_.path());
    chain_ = testing::start_chain(dir_.path());
    ASSERT_TRUE(chain_);
    auto config = model::load_model_config(std::string(CRUCIBLE_SOURCE_DIR) + "/configs/models/tiny.toml");
    ASSERT_TRUE(config.is_ok());
    auto m = model::Llama::create(*config, 1);
    for (const auto& p : m->parameters()) specs_.push_back({p.name, p.tensor.sizes().vec()});
    auto ds = data::Dataset::open(data_);
    ASSERT_TRUE(ds.is_ok());
    dataset_.emplace(std::move(*ds));

    const auto& keys = chain_->dev_keys();
    validator_key_ = keys[1];
    validator_uid_ = testing::register_key(*chain_, validator_key_);
    ASSERT_TRUE(chain_->set_stake(validator_uid_, 1'000'000'000'000, true).is_ok());
    for (int i : {2, 3}) {
      honest_keys_.push_back(keys[static_cast<std::size_t>(i)]);
      honest_uids_.push_back(testing::register_key(*chain_, keys[static_cast<std::size_t>(i)]));
    }
    network_ = dir_.write("network.toml", fmt::format(R"(
[log]
format = "text"
[protocol]
blocks_per_window = {}
upload_slot_s = 5.0
clock_skew_s = 0.5
samples_per_window = {}
[chain]
rpc_url = "{}"
[storage]
peer_file_urls = true
)",
                                                      kBlocksPerWindow, kSamples, chain_->url()));
  }

  void add_bad_miners() {
    const auto& keys = chain_->dev_keys();
    const std::vector<std::pair<Bad, std::size_t>> bad{{Bad::kNoise, 4},      {Bad::kNan, 5},  {Bad::kShape, 6},
                                                       {Bad::kCopy, 7},       {Bad::kLate, 8}, {Bad::kOtherData, 9},
                                                       {Bad::kWrongSigner, 0}};
    for (auto [kind, k] : bad) {
      BadMiner b{kind, keys[k], 0, nullptr, dir_.path() / fmt::format("bad-{}", bad_name(kind))};
      b.uid = testing::register_key(*chain_, b.key);
      testing::commit_location(*chain_, b.key, "file://" + b.root.string());
      auto s = storage::LocalStore::open(b.root);
      ASSERT_TRUE(s.is_ok());
      b.store = std::move(*s);
      bad_.push_back(std::move(b));
    }
  }

  static std::uint16_t free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
  }

  std::vector<std::string> node_argv(const std::string& binary, const std::string& node_toml, const std::string& key) {
    std::string cmd =
        fmt::format("exec '{}' --config '{}' --config '{}/configs/models/tiny.toml' --config '{}' --key '{}' 2>&1",
                    testing::bin(binary), network_, CRUCIBLE_SOURCE_DIR, node_toml, key);
    return {"/bin/bash", "-c", cmd};
  }

  std::unique_ptr<testing::Child> start_miner(std::size_t i) {
    const std::string name = fmt::format("honest{}", i);
    std::string toml =
        dir_.write(name + ".toml", fmt::format(R"(
[storage]
url = "file://{}"
[miner]
data_dir = "{}"
state_dir = "{}"
inner_steps = 3
micro_batch = 4
lr = 0.003
warmup_steps = 0
threads = 1
aggregate_wait_s = 10.0
progress = "off"
max_windows = {}
)",
                                               (dir_.path() / (name + "-store")).string(), data_,
                                               (dir_.path() / (name + "-state")).string(), kValidatorWindows + 2));
    std::string key = testing::write_keystore(honest_keys_[i], dir_.path() / (name + ".key"), "pw");
    return std::make_unique<testing::Child>(node_argv("crucible-miner", toml, key),
                                            std::map<std::string, std::string>{{"CRUCIBLE_WALLET_PASSWORD", "pw"}});
  }

  std::unique_ptr<testing::Child> start_validator(const std::string& name = "validator", const std::string& extra = "",
                                                  std::optional<chain::PrivateKey> key_in = std::nullopt) {
    api_port_ = free_port();
    std::string toml = dir_.write(
        name + ".toml",
        fmt::format(R"(
[storage]
url = "file://{}"
[validator]
data_dir = "{}"
state_dir = "{}"
eval_per_window = 20
eval_batches = 4
eval_lr_factor = 1.0
weights_every = 2
checkpoint_every = 2
threads = 1
aggregate_wait_s = 5.0
{}
[api]
port = {}
)",
                    (dir_.path() / (name + "-store")).string(), data_, (dir_.path() / (name + "-state")).string(),
                    extra.empty() ? fmt::format("max_windows = {}", kValidatorWindows) : extra, api_port_));
    const fs::path key_path = dir_.path() / (name + ".key");
    std::string key = fs::exists(key_path) ? key_path.string()
                                           : testing::write_keystore(key_in.value_or(validator_key_), key_path, "pw");
    return std::make_unique<testing::Child>(node_argv("crucible-validator", toml, key),
                                            std::map<std::string, std::string>{{"CRUCIBLE_WALLET_PASSWORD", "pw"}});
  }

  // A well-formed update of random values, compressed like a miner's.
  std::vector<packet::Tensor> random_update(std::uint64_t seed, float scale) {
    std::mt19937 rng(static_cast<std::uint32_t>(seed));
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<packet::Tensor> out;
    for (const auto& s : specs_) {
      std::vector<float> x(static_cast<std::size_t>(s.numel()));
      for (float& v : x) v = normal(rng);
      auto c = kernels::compress(x, s.shape, 1);
      out.push_back(*kernels::to_packet_tensor(s.name, s.shape, *c));
    }
    return out;
  }

  chain::Hash32 digest_for(std::uint16_t uid, std::uint64_t w) {
    auto idx = assign_samples(uid, w, dataset_->num_samples(128), kSamples);
    std::vector<std::uint64_t> ids;
    for (auto i : *idx) ids.push_back(dataset_->sample_id(i, 128));
    return data::sample_digest(ids);
  }

  void upload_bad(BadMiner& b, std::uint64_t w, const Bytes* honest_packet, double slot_start) {
    packet::Packet p;
    p.window = w;
    p.uid = b.uid;
    p.sample_digest = digest_for(b.uid, w);
    p.tensors = random_update(w * 1000 + b.uid, 0.02f);
    const chain::PrivateKey* signer = &b.key;
    chain::PrivateKey stranger = *chain::PrivateKey::generate();
    switch (b.kind) {
      case Bad::kNoise:
        p.tensors = random_update(w * 1000 + b.uid, 1.0f);
        break;
      case Bad::kNan:
        p.tensors[3].lookup[1] = std::numeric_limits<float>::quiet_NaN();
        break;
      case Bad::kShape: {
        // The tensors of another model shape: [dim, dim] claimed as [dim/2, 2*dim].
        std::vector<std::int64_t> bent{specs_[2].shape[0] / 2, specs_[2].shape[1] * 2};
        std::vector<float> x(static_cast<std::size_t>(specs_[2].numel()), 0.01f);
        auto c = kernels::compress(x, bent, 1);
        p.tensors[2] = *kernels::to_packet_tensor(specs_[2].name, bent, *c);
        break;
      }
      case Bad::kCopy: {
        if (honest_packet == nullptr) return;
        auto opened = chain::open_packet(*honest_packet);
        if (!opened.is_ok()) return;
        p.tensors = opened->packet.tensors;  // someone else's work, re-signed
        break;
      }
      case Bad::kOtherData:
        p.sample_digest = digest_for(static_cast<std::uint16_t>(b.uid + 100), w);
        break;
      case Bad::kWrongSigner:
        signer = &stranger;
        break;
      case Bad::kLate:
        break;
    }
    auto sealed = chain::seal_packet(p, *signer);
    ASSERT_TRUE(sealed.is_ok()) << sealed.status();
    ASSERT_TRUE(b.store->put(keys::gradient(w), *sealed).is_ok());
    if (b.kind == Bad::kLate) {
      // The store's clock says it came 30 s after the slot closed.
      auto t = std::chrono::file_clock::from_sys(
          std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::duration<double>(slot_start + 33))));
      fs::last_write_time(b.root / keys::gradient(w), t);
    }
  }

  testing::TempDir dir_;
  std::string data_, network_;
  std::unique_ptr<chain::LocalChain> chain_;
  std::vector<protocol::TensorSpec> specs_;
  std::optional<data::Dataset> dataset_;
  chain::PrivateKey validator_key_ = *chain::PrivateKey::generate();
  std::uint16_t validator_uid_ = 0;
  std::vector<chain::PrivateKey> honest_keys_;
  std::vector<std::uint16_t> honest_uids_;
  std::vector<BadMiner> bad_;
  std::uint16_t api_port_ = 0;
};

class NetworkTest : public NetworkBase {
 protected:
  void SetUp() override {
    start_network();
    add_bad_miners();
  }
};

TEST_F(NetworkTest, HonestMinersOutrankBadOnesAndBadOnesGetNoWeight) {
  auto reader = chain::EvmChain::connect(chain::to_evm_options(testing::chain_options(*chain_)), std::nullopt);
  ASSERT_TRUE(reader.is_ok());
  auto validator = start_validator();
  auto a = start_miner(0);
  auto b = start_miner(1);
  auto honest_store = storage::LocalStore::open(dir_.path() / "honest0-store");
  ASSERT_TRUE(honest_store.is_ok());

  // Play the bad miners each window until the validator is done.
  auto head = (*reader)->block_number();
  ASSERT_TRUE(head.is_ok());
  std::uint64_t w = *head / kBlocksPerWindow;
  bool validator_done = false;
  std::string validator_log;
  for (int round = 0; round < kValidatorWindows + 4 && !validator_done; ++round, ++w) {
    const std::uint64_t first = (w + 1) * kBlocksPerWindow;
    for (;;) {
      auto h = (*reader)->block_number();
      if (h.is_ok() && *h >= first) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    auto header = (*reader)->block(first);
    ASSERT_TRUE(header.is_ok());
    // Wait (within the slot) for honest miner 0's packet, for the copier.
    std::optional<Bytes> honest;
    for (int i = 0; i < 20 && !honest; ++i) {
      auto g = (*honest_store)->get(keys::gradient(w), 1 << 30);
      if (g.is_ok())
        honest = g->data;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (auto& bm : bad_) upload_bad(bm, w, honest ? &*honest : nullptr, static_cast<double>(header->timestamp));
    validator_log = validator->read_until("validator stopped", 100);
    validator_done = validator_log.find("validator stopped") != std::string::npos;
  }
  EXPECT_EQ(validator->wait(180'000), 0);
  validator_log = validator->read_until("validator stopped", 5'000);
  ASSERT_THAT(validator_log, HasSubstr("posted weights")) << validator_log;

  // Scores and reasons, from the validator's RocksDB.
  auto db = storage::StateStore::open((dir_.path() / "validator-state/db").string());
  ASSERT_TRUE(db.is_ok()) << db.status();
  auto final_of = [&](std::uint16_t uid) {
    auto v = (*db)->get(storage::Family::kRatings, validator::rating_key(uid));
    EXPECT_TRUE(v.is_ok() && v->has_value()) << "uid " << uid;
    if (!v.is_ok() || !v->has_value()) return -1e9;
    return nlohmann::json::parse(**v)["final"].get<double>();
  };
  for (std::uint16_t h : honest_uids_) {
    EXPECT_GT(final_of(h), 0.0) << "honest uid " << h << "\n" << validator_log;
    for (const auto& bm : bad_) EXPECT_GT(final_of(h), final_of(bm.uid)) << bad_name(bm.kind);
  }
  auto rows = (*db)->scan(storage::Family::kWindowScores, "w/");
  ASSERT_TRUE(rows.is_ok());
  std::map<std::uint16_t, std::string> reasons;
  for (const auto& [k, v] : *rows) {
    auto j = nlohmann::json::parse(v);
    if (j.contains("reason") && j.contains("uid"))
      reasons[j["uid"].get<std::uint16_t>()] += j["reason"].get<std::string>() + ": " + j.value("detail", "") + "; ";
  }
  for (const auto& bm : bad_) {
    const std::string& r = reasons[bm.uid];
    switch (bm.kind) {
      case Bad::kNan:
        EXPECT_THAT(r, HasSubstr("non-finite"));
        break;  // the codec refuses it (detail)
      case Bad::kShape:
        EXPECT_THAT(r, HasSubstr("wrong_shape"));
        break;
      case Bad::kCopy:
        EXPECT_THAT(r, HasSubstr("copy"));
        break;
      case Bad::kLate:
        EXPECT_THAT(r, HasSubstr("too_late"));
        break;
      case Bad::kOtherData:
        EXPECT_THAT(r, HasSubstr("not_assigned_data"));
        break;
      case Bad::kWrongSigner:
        EXPECT_THAT(r, HasSubstr("wrong_signer"));
        break;
      case Bad::kNoise:
        break;  // well-formed: it loses on the merits
    }
  }
  for (std::uint16_t h : honest_uids_) EXPECT_EQ(reasons[h], "") << "honest uid " << h;

  // The weights on chain.
  auto data = chain::abi::encode_call("getWeights(uint16,uint16)", {chain::abi::Value::uint(chain_->netuid()),
                                                                    chain::abi::Value::uint(validator_uid_)});
  auto out = (*reader)->eth().call(chain::Address::from_low_u64(chain::standins::kStateAddress), *data);
  ASSERT_TRUE(out.is_ok()) << out.status();
  auto v = chain::abi::decode(chain::abi::parse_types("uint16[],uint16[],uint64").value(), *out).value();
  std::map<std::uint64_t, std::uint64_t> onchain;
  for (std::size_t i = 0; i < v[0].items().size(); ++i) {
    onchain[v[0].items()[i].as_u64().value()] = v[1].items()[i].as_u64().value();
  }
  EXPECT_GE(v[2].as_u64().value(), 1u);  // posts
  for (std::uint16_t h : honest_uids_) EXPECT_GT(onchain[h], 0u) << "honest uid " << h;
  for (const auto& bm : bad_) EXPECT_EQ(onchain.count(bm.uid), 0u) << bad_name(bm.kind);
}

}  // namespace
}  // namespace crucible

namespace crucible {
namespace {

// The posts a validator uid has made, as the stand-in chain counts them.
std::uint64_t posts_of(chain::EvmChain& reader, const chain::LocalChain& local, std::uint16_t uid) {
  auto data = chain::abi::encode_call("getWeights(uint16,uint16)",
                                      {chain::abi::Value::uint(local.netuid()), chain::abi::Value::uint(uid)});
  auto out = reader.eth().call(chain::Address::from_low_u64(chain::standins::kStateAddress), *data);
  EXPECT_TRUE(out.is_ok());
  auto v = chain::abi::decode(chain::abi::parse_types("uint16[],uint16[],uint64").value(), *out).value();
  return v[2].as_u64().value();
}

std::map<std::string, std::string> dump(const std::string& db_path, storage::Family f) {
  auto db = storage::StateStore::open(db_path);
  EXPECT_TRUE(db.is_ok()) << db.status();
  auto rows = (*db)->scan(f, "");
  EXPECT_TRUE(rows.is_ok());
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : *rows) out[k] = std::string(v.begin(), v.end());
  return out;
}

class CrashTest : public NetworkBase {
 protected:
  void SetUp() override { start_network(); }
};

// Two validators that are not the lead replay the same recorded windows: one
// uninterrupted, one SIGKILLed at random points and restarted. Their scores
// must be equal, and the killed one must not have posted weights twice.
TEST_F(CrashTest, KilledAndRestartedValidatorScoresLikeAnUninterruptedOne) {
  auto reader = chain::EvmChain::connect(chain::to_evm_options(testing::chain_options(*chain_)), std::nullopt);
  ASSERT_TRUE(reader.is_ok());
  const auto& keys = chain_->dev_keys();
  const chain::PrivateKey ref_key = keys[4], crash_key = keys[5];
  const std::uint16_t ref_uid = testing::register_key(*chain_, ref_key);
  const std::uint16_t crash_uid = testing::register_key(*chain_, crash_key);
  ASSERT_TRUE(chain_->set_stake(ref_uid, 1'000'000, true).is_ok());
  ASSERT_TRUE(chain_->set_stake(crash_uid, 1'000'000, true).is_ok());

  // Record: the lead and two honest miners, live.
  {
    auto lead = start_validator();
    auto a = start_miner(0);
    auto b = start_miner(1);
    ASSERT_EQ(lead->wait(240'000), 0);
  }
  auto progress = dump((dir_.path() / "validator-state/db").string(), storage::Family::kWindowProgress);
  std::vector<std::uint64_t> windows;
  for (const auto& [k, v] : progress)
    if (k.starts_with("window/")) windows.push_back(std::stoull(k.substr(7)));
  ASSERT_GE(windows.size(), 3u);
  const std::string range =
      fmt::format("start_window = {}\nend_window = {}\nrandom_seed = \"shared\"", windows.front(), windows.back() + 1);

  // Replay, uninterrupted.
  {
    auto ref = start_validator("ref", range, ref_key);
    ASSERT_EQ(ref->wait(240'000), 0) << ref->read_until("never", 100);
  }
  // Replay, killed at random points until it finishes.
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> delay_ms(300, 2500);
  int kills = 0;
  for (int attempt = 0; attempt < 40; ++attempt) {
    auto v = start_validator("crash", range, crash_key);
    int rc = v->wait(delay_ms(rng));
    if (rc == 0) break;
    v->signal(SIGKILL);
    v->wait(10'000);
    ++kills;
  }
  {
    auto v = start_validator("crash", range, crash_key);  // once more: already done, it stops at once
    ASSERT_EQ(v->wait(240'000), 0);
  }
  EXPECT_GE(kills, 1);

  auto ref_scores = dump((dir_.path() / "ref-state/db").string(), storage::Family::kRatings);
  auto crash_scores = dump((dir_.path() / "crash-state/db").string(), storage::Family::kRatings);
  ASSERT_FALSE(ref_scores.empty());
  EXPECT_EQ(ref_scores, crash_scores) << kills << " kills";
  EXPECT_EQ(dump((dir_.path() / "ref-state/db").string(), storage::Family::kWindowScores),
            dump((dir_.path() / "crash-state/db").string(), storage::Family::kWindowScores));
  // No duplicate weight post: as many posts as the uninterrupted run made.
  const std::uint64_t ref_posts = posts_of(**reader, *chain_, ref_uid);
  EXPECT_GE(ref_posts, 1u);
  EXPECT_EQ(posts_of(**reader, *chain_, crash_uid), ref_posts);
}

}  // namespace
}  // namespace crucible

namespace crucible {
namespace {

class CommitRevealTest : public NetworkBase {
 protected:
  void SetUp() override {
    start_network();
    ASSERT_TRUE(chain_->set_subnet_params(true, 0, 0).is_ok());
  }
};

// On a commit-reveal subnet the validator commits each epoch's weights and
// reveals them the next epoch; the chain then holds them.
TEST_F(CommitRevealTest, WeightsAreCommittedThenRevealed) {
  auto reader = chain::EvmChain::connect(chain::to_evm_options(testing::chain_options(*chain_)), std::nullopt);
  ASSERT_TRUE(reader.is_ok());
  auto lead = start_validator("validator", "max_windows = 4");
  auto a = start_miner(0);
  auto b = start_miner(1);
  ASSERT_EQ(lead->wait(240'000), 0);
  std::string log = lead->read_until("validator stopped", 5'000);
  EXPECT_THAT(log, HasSubstr("committed weights"));
  EXPECT_THAT(log, HasSubstr("revealed weights"));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("posted weights")));
  EXPECT_GE(posts_of(**reader, *chain_, validator_uid_), 1u);
}

}  // namespace
}  // namespace crucible
