// A swarm of miner uids played by one process, for scale measurements
// (bench/scale) and the network test at scale (tests/e2e/scale_test.cpp):
// N keys, each funded, registered and with its own folder store published
// on chain through the commitment proxy, as a node does. Every window,
// for every uid, a correctly signed packet on the uid's assigned data,
// committed in the upload slot and revealed once it has closed, exactly as
// crucible-miner does. No uid trains a model of its own; the updates are
//   cut:           a window's real update (the genesis model's gradient on a
//                  batch of random samples, compressed) of which each uid
//                  keeps a random `shared` fraction of the kept coordinates,
//                  the rest drawn at random: valid, distinct, cheap (N=256);
//   own_gradient:  each uid's gradient on its own assigned samples, less
//                  the mean of the swarm's (what is the uid's own), scaled to
//                  a miner's update and compressed: updates that lower the
//                  loss on the uid's data more than on random data, as an
//                  honest miner's do. prepare() computes them at the genesis
//                  model before anything runs (one gradient per uid and
//                  window is too much for two cores beside a network); the
//                  swarm follows the lead validator's sets (`lead_store`) as
//                  a miner does, and each packet names the model it holds.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "crucible/chain/chain_options.h"
#include "crucible/chain/keys.h"
#include "crucible/common/model_config.h"
#include "crucible/common/status.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/protocol/options.h"
#include "crucible/storage/storage_options.h"

namespace crucible::swarm {

enum class Updates { kCut, kOwnGradient };

struct SwarmOptions {
  std::filesystem::path dir;  // stores under dir/m<i> (unless store_of is given)
  // Miner i's store (its URL and keys, published as its location); unset:
  // a folder store under dir.
  std::function<Result<storage::StorageOptions>(int i)> store_of;
  chain::ChainOptions chain;  // rpc_url and netuid of a local chain (keys are funded with anvil_setBalance)
  protocol::Options protocol;
  model::ModelConfig model;
  std::filesystem::path data;  // prepared data with the model's vocabulary
  int miners = 16;
  Updates updates = Updates::kCut;
  double shared = 0.1;       // kCut
  float update_rms = 5e-3f;  // kOwnGradient: RMS of a dense update, about an honest miner's
  // kOwnGradient: the gradient on the first this many of a uid's window
  // samples (0: all of them, as a miner trains).
  std::uint32_t gradient_samples = 0;
  std::size_t threads = 8;           // registration and uploads in parallel
  std::filesystem::path lead_store;  // kOwnGradient: the lead validator's folder store
  double aggregate_wait_s = 3.0;     // kOwnGradient: how long to wait for the last window's set
};

// One of the swarm's uids.
struct SwarmMiner;

// The key of the swarm's i-th miner: keccak256("crucible/bench-scale/<i>").
chain::PrivateKey swarm_key(int i);

class Swarm {
 public:
  // Funds, registers and publishes each miner's location (in parallel).
  static Result<std::unique_ptr<Swarm>> create(SwarmOptions options);
  ~Swarm();
  Swarm(const Swarm&) = delete;
  Swarm& operator=(const Swarm&) = delete;

  std::vector<std::uint16_t> uids() const;
  // The updates of windows [first, last], computed before anything is
  // timed (kOwnGradient: a window not prepared is computed when it comes).
  Status prepare(std::uint64_t first, std::uint64_t last);
  // Uploads windows [first, last] (prepared) as crucible-miner does; returns
  // after the last reveal, or early once `stop` is set. `on_window` is
  // called after each window's reveal.
  Status run(std::uint64_t first, std::uint64_t last, const std::atomic<bool>& stop,
             const std::function<void(std::uint64_t)>& on_window = {});

 private:
  explicit Swarm(SwarmOptions o);
  Status open_model();
  // kOwnGradient: the lead's sets up to w - 1 applied (waiting a little for
  // w - 1's), the model each packet's digest names.
  Status follow(std::uint64_t w, const std::atomic<bool>& stop);
  // kOwnGradient: every uid's update for w at the model held now.
  Status own_updates(std::uint64_t w);
  SwarmOptions o_;
  std::vector<std::unique_ptr<SwarmMiner>> miners_;
  struct Prepared;
  std::unique_ptr<Prepared> prepared_;
};

}  // namespace crucible::swarm
