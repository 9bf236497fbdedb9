// The pieces of a local network for the end-to-end tests that run the
// real binaries: data, anvil with the stand-ins, the network's config, node
// launchers, and bad miners played by the test (each a registered uid with
// its own store).
#pragma once

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
#include "support/scripted_http.h"
#include "support/temp_dir.h"
#include "support/validator_records.h"

namespace crucible::e2e {

namespace fs = std::filesystem;
namespace keys = protocol::keys;

constexpr std::uint32_t kBlocksPerWindow = 8;
constexpr double kUploadSlotS = 4.0;  // commitments; the packets follow once it has closed
constexpr double kClockSkewS = 0.5;
constexpr std::uint32_t kSamples = 16;
constexpr int kValidatorWindows = 4;

enum class Bad { kNoise, kNan, kShape, kCopy, kLate, kOtherData, kWrongSigner };
inline const char* bad_name(Bad b) {
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
  // `storage_extra`: more [storage] lines of the network config.
  void start_network(const std::string& storage_extra = "") {
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
upload_slot_s = {}
clock_skew_s = {}
reveal_s = 1.0
samples_per_window = {}
{}
[chain]
rpc_url = "{}"
[storage]
peer_file_urls = true
{}
)",
                                                      blocks_per_window_, kUploadSlotS, kClockSkewS, kSamples,
                                                      protocol_extra_, chain_->url(), storage_extra));
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

  static std::uint16_t free_port() { return testing::free_port(); }

  // Waits for the first block of a window and returns that window. Nodes
  // started then, the validator with `start_window` = it, all begin with
  // it: a miner takes a second or two to start, and one whose start crossed
  // a window boundary began a window after the validator, which counted it
  // "missing" in its first.
  std::uint64_t window_just_begun(chain::EvmChain& reader) const {
    for (;;) {
      auto h = reader.block_number();
      EXPECT_TRUE(h.is_ok()) << h.status();
      if (!h.is_ok()) return 0;
      if (*h % blocks_per_window_ == 0) return *h / blocks_per_window_;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::vector<std::string> node_argv(const std::string& binary, const std::string& node_toml, const std::string& key) {
    std::string cmd =
        fmt::format("exec '{}' --config '{}' --config '{}/configs/models/tiny.toml' --config '{}' --key '{}' 2>&1",
                    testing::bin(binary), network_, CRUCIBLE_SOURCE_DIR, node_toml, key);
    return {"/bin/bash", "-c", cmd};
  }

  // `extra`: more [miner] lines (e.g. ranks).
  std::unique_ptr<testing::Child> start_miner(std::size_t i, int max_windows = kValidatorWindows + 2,
                                              int inner_steps = 4, const std::string& extra = "") {
    const std::string name = fmt::format("honest{}", i);
    if (miner_metrics_ports_.size() <= i) miner_metrics_ports_.resize(i + 1);
    miner_metrics_ports_[i] = free_port();
    std::string toml = dir_.write(name + ".toml", fmt::format(R"(
[storage]
url = "file://{}"
[miner]
data_dir = "{}"
state_dir = "{}"
inner_steps = {}
micro_batch = 4
lr = 0.003
warmup_steps = 0
threads = 1
aggregate_wait_s = 10.0
progress = "off"
max_windows = {}
metrics_port = {}
{}
)",
                                                              (dir_.path() / (name + "-store")).string(), data_,
                                                              (dir_.path() / (name + "-state")).string(), inner_steps,
                                                              max_windows, miner_metrics_ports_[i], extra));
    std::string key = testing::write_keystore(honest_keys_[i], dir_.path() / (name + ".key"), "pw");
    return std::make_unique<testing::Child>(node_argv("crucible-miner", toml, key),
                                            std::map<std::string, std::string>{{"CRUCIBLE_WALLET_PASSWORD", "pw"}});
  }

  std::unique_ptr<testing::Child> start_validator(const std::string& name = "validator", const std::string& extra = "",
                                                  std::optional<chain::PrivateKey> key_in = std::nullopt) {
    api_port_ = free_port();
    std::string toml =
        dir_.write(name + ".toml",
                   fmt::format(R"(
[storage]
url = "file://{}"
[validator]
data_dir = "{}"
state_dir = "{}"
eval_per_window = 20
eval_batches = {}
eval_window_share = {}
eval_lr_factor = 1.0
weights_every = 2
checkpoint_every = 2
threads = 1
aggregate_wait_s = 5.0
observe_interval_s = 0.25
{}
[api]
port = {}
)",
                               (dir_.path() / (name + "-store")).string(), data_,
                               (dir_.path() / (name + "-state")).string(), eval_batches_, eval_window_share_,
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

  // A miner's two puts: the commitment to `packet`, then the packet.
  static void commit_and_put(storage::ObjectStore& store, std::uint64_t w, const Bytes& packet) {
    const chain::Hash32 c = chain::keccak256(packet);
    ASSERT_TRUE(store.put(keys::commitment(w), ByteSpan(c.data(), c.size())).is_ok());
    ASSERT_TRUE(store.put(keys::gradient(w), packet).is_ok());
  }

  // A well-formed packet of small random values for b's uid and window.
  packet::Packet small_random_packet(const BadMiner& b, std::uint64_t w) {
    packet::Packet p;
    p.window = w;
    p.uid = b.uid;
    p.sample_digest = digest_for(b.uid, w);
    p.tensors = random_update(w * 1000 + b.uid, 0.02f);
    return p;
  }

  // At the start of w's slot. The copier cannot see the honest packet yet:
  // it commits to a guess now and puts its copy once the original is
  // revealed (copy_after_reveal); the late one commits after the slot.
  void upload_bad(BadMiner& b, std::uint64_t w) {
    packet::Packet p = small_random_packet(b, w);
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
        chain::Hash32 guess;
        guess.fill(static_cast<std::uint8_t>(w));
        ASSERT_TRUE(b.store->put(keys::commitment(w), ByteSpan(guess.data(), guess.size())).is_ok());
        return;
      }
      case Bad::kOtherData:
        p.sample_digest = digest_for(static_cast<std::uint16_t>(b.uid + 100), w);
        break;
      case Bad::kWrongSigner:
        signer = &stranger;
        break;
      case Bad::kLate:
        return;  // late_upload, after the slot
    }
    auto sealed = chain::seal_packet(p, *signer);
    ASSERT_TRUE(sealed.is_ok()) << sealed.status();
    commit_and_put(*b.store, w, *sealed);
  }

  // Once the slot has closed: the late miner commits and uploads now.
  void late_upload(BadMiner& b, std::uint64_t w) {
    auto sealed = chain::seal_packet(small_random_packet(b, w), b.key);
    ASSERT_TRUE(sealed.is_ok()) << sealed.status();
    commit_and_put(*b.store, w, *sealed);
  }

  // Once the honest packet is revealed: the copier re-signs it as its own.
  void copy_after_reveal(BadMiner& b, std::uint64_t w, const Bytes& honest_packet) {
    auto opened = chain::open_packet(honest_packet);
    ASSERT_TRUE(opened.is_ok()) << opened.status();
    packet::Packet p = opened->packet;
    p.uid = b.uid;
    p.sample_digest = digest_for(b.uid, w);
    auto sealed = chain::seal_packet(p, b.key);
    ASSERT_TRUE(sealed.is_ok()) << sealed.status();
    ASSERT_TRUE(b.store->put(keys::gradient(w), *sealed).is_ok());  // its commitment was a guess
  }

  // The validator's records (support/validator_records.h).
  static double final_of(storage::StateStore& db, std::uint16_t uid) { return testing::final_of(db, uid); }
  static std::string rating_json(storage::StateStore& db, std::uint16_t uid) { return testing::rating_json(db, uid); }
  static std::map<std::uint16_t, std::string> rejections(storage::StateStore& db) { return testing::rejections(db); }

  // A validator's weights (default: the lead's) as the stand-in chain holds them, and its post count.
  struct OnChain {
    std::map<std::uint64_t, std::uint64_t> weights;
    std::uint64_t posts = 0;
  };
  OnChain onchain_weights(chain::EvmChain& reader, std::optional<std::uint16_t> uid = std::nullopt) const {
    OnChain out;
    auto data = chain::abi::encode_call(
        "getWeights(uint16,uint16)",
        {chain::abi::Value::uint(chain_->netuid()), chain::abi::Value::uint(uid.value_or(validator_uid_))});
    auto got = reader.eth().call(chain::Address::from_low_u64(chain::standins::kStateAddress), *data);
    EXPECT_TRUE(got.is_ok()) << got.status();
    if (!got.is_ok()) return out;
    auto v = chain::abi::decode(chain::abi::parse_types("uint16[],uint16[],uint64").value(), *got).value();
    for (std::size_t i = 0; i < v[0].items().size(); ++i) {
      out.weights[v[0].items()[i].as_u64().value()] = v[1].items()[i].as_u64().value();
    }
    out.posts = v[2].as_u64().value();
    return out;
  }

  testing::TempDir dir_;
  std::string data_, network_;
  std::unique_ptr<chain::LocalChain> chain_;
  std::vector<protocol::TensorSpec> specs_;
  std::uint32_t blocks_per_window_ = kBlocksPerWindow;  // of the network config start_network writes
  // Of the validators start_validator starts: every assigned sample. On
  // this small network (each sample seen once per window, a high inner lr)
  // an honest update's gain on its own samples is only a few percent above
  // its gain on random ones, and the own-data z test (protocol.md §6)
  // cannot see that on four samples (docs/reliability.md).
  std::uint32_t eval_batches_ = kSamples;
  // Of the validators start_validator starts: no bound on the time for
  // evaluations, so that a test that judges scores sees every upload
  // evaluated every window however slow the machine; ScaleTest runs with
  // the operators' default.
  double eval_window_share_ = 0;
  std::string protocol_extra_;  // more [protocol] lines of the network config
  std::optional<data::Dataset> dataset_;
  chain::PrivateKey validator_key_ = *chain::PrivateKey::generate();
  std::uint16_t validator_uid_ = 0;
  std::vector<chain::PrivateKey> honest_keys_;
  std::vector<std::uint16_t> honest_uids_;
  std::vector<BadMiner> bad_;
  std::uint16_t api_port_ = 0;
  std::vector<std::uint16_t> miner_metrics_ports_;  // honest miner i's /metrics and /healthz
};

}  // namespace crucible::e2e
