#include "swarm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "crucible/chain/evm_chain.h"
#include "crucible/chain/keccak.h"
#include "crucible/chain/local_chain.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/chain/substrate.h"
#include "crucible/common/dataset.h"
#include "crucible/common/log.h"
#include "crucible/common/replica.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/protocol/fingerprint.h"
#include "crucible/protocol/model_chain.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/peers.h"
#include "crucible/protocol/window_clock.h"
#include "crucible/storage/local_store.h"
#include "crucible/storage/peer_location.h"
#include "crucible/storage/store_url.h"

namespace crucible::swarm {

namespace fs = std::filesystem;
namespace keys = protocol::keys;

struct SwarmMiner {
  explicit SwarmMiner(chain::PrivateKey k) : key(std::move(k)) {}
  chain::PrivateKey key;
  std::uint16_t uid = 0;
  std::shared_ptr<storage::ObjectStore> store;
};

struct Swarm::Prepared {
  std::optional<data::Dataset> dataset;
  std::unique_ptr<model::Replica> replica;
  protocol::ChainState chain;  // where the replica stands in the lead's chain of sets (kOwnGradient)
  std::vector<model::TensorSpec> specs;
  std::map<std::uint64_t, std::vector<kernels::CompressedTensor>> bases;                        // kCut: per window
  std::map<std::pair<std::uint64_t, std::size_t>, std::vector<kernels::CompressedTensor>> own;  // kOwnGradient
};

namespace {

// Runs f(i) for i in [0, n) on `threads` threads.
template <typename F>
void parallel_for(std::size_t n, std::size_t threads, F&& f) {
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < std::min(threads, n); ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) f(i);
    });
  }
  for (auto& t : pool) t.join();
}

// A distinct update from `base`: per block, a `shared` fraction of its kept
// coordinates (with their codes), the rest drawn at random.
std::vector<kernels::CompressedTensor> cut(const std::vector<kernels::CompressedTensor>& base, double shared,
                                           std::mt19937_64& rng) {
  std::vector<kernels::CompressedTensor> out;
  out.reserve(base.size());
  std::vector<std::uint8_t> taken;
  std::vector<std::pair<std::uint16_t, std::uint8_t>> block;
  for (const auto& b : base) {
    kernels::CompressedTensor c;
    c.layout = b.layout;
    c.quant = b.quant;
    c.indices.reserve(b.indices.size());
    c.codes.reserve(b.codes.size());
    const auto k = static_cast<std::size_t>(b.layout.k);
    const auto elems = static_cast<std::size_t>(b.layout.block_elems());
    const auto keep = static_cast<std::size_t>(std::lround(shared * static_cast<double>(k)));
    taken.assign(elems, 0);
    for (std::size_t start = 0; start + k <= b.indices.size(); start += k) {
      block.clear();
      for (std::size_t i = 0; i < k; ++i) {
        if (block.size() < keep && rng() % (k - i) < keep - block.size()) {
          block.emplace_back(b.indices[start + i], b.codes[start + i]);
          taken[b.indices[start + i]] = 1;
        }
      }
      while (block.size() < k) {
        const auto at = static_cast<std::uint16_t>(rng() % elems);
        if (taken[at]) continue;
        taken[at] = 1;
        block.emplace_back(at, static_cast<std::uint8_t>(rng() & 3));
      }
      std::sort(block.begin(), block.end());
      for (const auto& [i, code] : block) {
        c.indices.push_back(i);
        c.codes.push_back(code);
        taken[i] = 0;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

chain::PrivateKey swarm_key(int i) {
  const std::string seed = fmt::format("crucible/bench-scale/{}", i);
  const auto h = chain::keccak256(as_bytes(seed));
  auto k = chain::PrivateKey::from_bytes(ByteSpan(h.data(), h.size()));
  return std::move(*k);  // a Keccak digest is a valid secp256k1 key but with negligible probability
}

Swarm::Swarm(SwarmOptions o) : o_(std::move(o)), prepared_(std::make_unique<Prepared>()) {}
Swarm::~Swarm() = default;

Result<std::unique_ptr<Swarm>> Swarm::create(SwarmOptions options) {
  auto s = std::unique_ptr<Swarm>(new Swarm(std::move(options)));
  const SwarmOptions& o = s->o_;
  const auto evm = chain::to_evm_options(o.chain);
  for (int i = 0; i < o.miners; ++i) {
    s->miners_.push_back(std::make_unique<SwarmMiner>(swarm_key(i)));
    CRUCIBLE_RETURN_IF_ERROR(chain::local_fund(o.chain.rpc_url, s->miners_.back()->key.address(),
                                               chain::U256(10'000'000'000'000'000'000ull)));
  }
  std::vector<Status> failed(s->miners_.size(), Status::ok());
  parallel_for(s->miners_.size(), o.threads, [&](std::size_t i) {
    SwarmMiner& m = *s->miners_[i];
    storage::StorageOptions so;
    if (o.store_of) {
      auto given = o.store_of(static_cast<int>(i));
      if (!given.is_ok()) return void(failed[i] = given.status());
      so = std::move(*given);
    } else {
      const fs::path folder = o.dir / fmt::format("m{}", i);
      fs::create_directories(folder);
      so.url = "file://" + folder.string();
    }
    auto store = storage::open_store(so.url, so.read_credentials(), so.write_credentials(), so.retry_policy());
    if (!store.is_ok()) return void(failed[i] = store.status());
    m.store = std::move(*store);
    auto c = chain::EvmChain::connect(evm, m.key);
    if (!c.is_ok()) return void(failed[i] = c.status());
    auto reg = (*c)->register_neuron(o.chain.netuid, chain::substrate::mirror_account(m.key.address()));
    if (!reg.is_ok()) return void(failed[i] = reg.status().with_context("register"));
    auto com = (*c)->set_commitment(o.chain.netuid, storage::encode_location(so));
    if (!com.is_ok()) failed[i] = com.status().with_context("commitment");
  });
  for (std::size_t i = 0; i < failed.size(); ++i) {
    if (!failed[i].is_ok()) return failed[i].with_context(fmt::format("swarm miner {}", i));
  }
  CRUCIBLE_ASSIGN_OR_RETURN(auto reader, chain::EvmChain::connect(evm, std::nullopt));
  CRUCIBLE_ASSIGN_OR_RETURN(const auto mg, reader->metagraph(o.chain.netuid));
  std::map<chain::Hash32, std::uint16_t> uid_of;
  for (const auto& n : mg.neurons) uid_of[n.hotkey] = n.uid;
  for (auto& m : s->miners_) {
    auto it = uid_of.find(chain::substrate::mirror_account(m->key.address()));
    if (it == uid_of.end()) return internal_error("a swarm miner is not in the metagraph after registering");
    m->uid = it->second;
  }
  return s;
}

std::vector<std::uint16_t> Swarm::uids() const {
  std::vector<std::uint16_t> out;
  for (const auto& m : miners_) out.push_back(m->uid);
  return out;
}

Status Swarm::open_model() {
  Prepared& p = *prepared_;
  if (!p.dataset) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto ds, data::Dataset::open(o_.data, "train"));
    p.dataset.emplace(std::move(ds));
  }
  if (!p.replica) {
    model::ReplicaOptions rep;
    rep.threads = 2;
    CRUCIBLE_ASSIGN_OR_RETURN(p.replica, model::Replica::create(o_.model, rep, o_.protocol.init_seed));
    p.specs = p.replica->specs();
  }
  return Status::ok();
}

namespace {

Result<std::vector<kernels::CompressedTensor>> compressed(model::TensorValues& g, float scale,
                                                          const std::vector<model::TensorSpec>& specs) {
  std::vector<kernels::CompressedTensor> out;
  for (std::size_t t = 0; t < g.size(); ++t) {
    for (float& v : g[t]) v *= scale;
    CRUCIBLE_ASSIGN_OR_RETURN(auto c, kernels::compress(g[t], specs[t].shape, 2));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

Status Swarm::prepare(std::uint64_t first, std::uint64_t last) {
  CRUCIBLE_RETURN_IF_ERROR(open_model());
  if (o_.updates == Updates::kOwnGradient) {
    for (std::uint64_t w = first; w <= last; ++w) CRUCIBLE_RETURN_IF_ERROR(own_updates(w));
    return Status::ok();
  }
  Prepared& p = *prepared_;
  const auto L = static_cast<std::uint64_t>(o_.model.seq_len);
  for (std::uint64_t w = first; w <= last; ++w) {
    // The descent direction on a batch of the window's random samples (a
    // pseudo-gradient is theta_before - theta_after: +gradient).
    CRUCIBLE_ASSIGN_OR_RETURN(auto idx, p.dataset->assignment(static_cast<std::uint16_t>(50000 + w % 1000), w, 4, L));
    CRUCIBLE_ASSIGN_OR_RETURN(auto tokens, p.dataset->tokens(idx, L));
    CRUCIBLE_ASSIGN_OR_RETURN(auto g, p.replica->gradient(tokens, static_cast<std::int64_t>(idx.size())));
    CRUCIBLE_ASSIGN_OR_RETURN(p.bases[w], compressed(g, 1.0f, p.specs));
  }
  return Status::ok();
}

Status Swarm::follow(std::uint64_t w, const std::atomic<bool>& stop) {
  Prepared& p = *prepared_;
  CRUCIBLE_ASSIGN_OR_RETURN(auto lead, storage::LocalStore::open(o_.lead_store));
  const auto codec = kernels::cpu_backend(1);  // outlives the chain, which keeps a reference
  protocol::ChainModelOf<model::Replica> link(*p.replica);
  protocol::ModelChain sets(link, p.chain, *codec,
                            {o_.protocol.outer(), 1ull << 30, o_.model.canonical(), "swarm", false});
  // The lead's sets up to w - 1, in order, as a miner follows them; w - 1's
  // is waited for a little.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<std::int64_t>(o_.aggregate_wait_s * 1000));
  for (;;) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto windows, sets.published_after(*lead, 4096));
    for (std::uint64_t v : windows) {
      if (v >= w) break;
      CRUCIBLE_ASSIGN_OR_RETURN(auto desync, sets.advance(v, *lead));
      if (desync) return Status::ok();  // the swarm stays where it is (out of sync, scored so)
    }
    const bool have = p.chain.window && *p.chain.window + 1 >= w;
    if (have || stop.load() || std::chrono::steady_clock::now() > deadline) return Status::ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status Swarm::own_updates(std::uint64_t w) {
  Prepared& p = *prepared_;
  // Each uid's gradient on its own samples, less the swarm's mean: what is
  // its own; a descent step is +gradient.
  const auto L = static_cast<std::uint64_t>(o_.model.seq_len);
  std::vector<model::TensorValues> grads;
  for (const auto& m : miners_) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto idx, p.dataset->assignment(m->uid, w, o_.protocol.samples_per_window, L));
    if (o_.gradient_samples > 0 && o_.gradient_samples < idx.size()) idx.resize(o_.gradient_samples);
    CRUCIBLE_ASSIGN_OR_RETURN(auto tokens, p.dataset->tokens(idx, L));
    CRUCIBLE_ASSIGN_OR_RETURN(auto g, p.replica->gradient(tokens, static_cast<std::int64_t>(idx.size())));
    grads.push_back(std::move(g));
  }
  model::TensorValues mean = grads.front();
  for (std::size_t t = 0; t < mean.size(); ++t) {
    for (std::size_t e = 0; e < mean[t].size(); ++e) {
      double sum = 0;
      for (const auto& g : grads) sum += g[t][e];
      mean[t][e] = static_cast<float>(sum / static_cast<double>(grads.size()));
    }
  }
  for (std::size_t i = 0; i < grads.size(); ++i) {
    double sq = 0, n = 0;
    for (std::size_t t = 0; t < mean.size(); ++t) {
      for (std::size_t e = 0; e < mean[t].size(); ++e) {
        grads[i][t][e] -= mean[t][e];
        sq += double(grads[i][t][e]) * grads[i][t][e];
      }
      n += static_cast<double>(mean[t].size());
    }
    const double rms = std::sqrt(sq / std::max(1.0, n));
    const float scale = rms > 0 ? static_cast<float>(o_.update_rms / rms) : 0.0f;
    CRUCIBLE_ASSIGN_OR_RETURN(p.own[std::pair(w, i)], compressed(grads[i], scale, p.specs));
  }
  return Status::ok();
}

Status Swarm::run(std::uint64_t first, std::uint64_t last, const std::atomic<bool>& stop,
                  const std::function<void(std::uint64_t)>& on_window) {
  Prepared& p = *prepared_;
  if (!p.dataset) return failed_precondition("Swarm::run before prepare");
  CRUCIBLE_ASSIGN_OR_RETURN(auto reader, chain::EvmChain::connect(chain::to_evm_options(o_.chain), std::nullopt));
  const protocol::WindowClock clock(o_.protocol);
  const auto L = static_cast<std::uint64_t>(o_.model.seq_len);
  for (std::uint64_t w = first; w <= last && !stop.load(); ++w) {
    if (o_.updates == Updates::kOwnGradient) {
      CRUCIBLE_RETURN_IF_ERROR(follow(w, stop));
      if (!p.own.count(std::pair(w, std::size_t{0}))) CRUCIBLE_RETURN_IF_ERROR(own_updates(w));
      std::erase_if(p.own, [&](const auto& kv) { return kv.first.first < w; });
    }
    // Packets made while w is under way...
    std::vector<Bytes> sealed(miners_.size());
    std::vector<Status> failed(miners_.size(), Status::ok());
    for (std::size_t i = 0; i < miners_.size(); ++i) {
      const SwarmMiner& m = *miners_[i];
      std::mt19937_64 rng(w * 1'000'003 + m.uid);
      packet::Packet pk;
      pk.window = w;
      pk.uid = m.uid;
      CRUCIBLE_ASSIGN_OR_RETURN(auto idx, p.dataset->assignment(m.uid, w, o_.protocol.samples_per_window, L));
      pk.sample_digest = p.dataset->digest(idx, L);
      if (o_.updates == Updates::kOwnGradient) {  // the model it holds: the lead's, if it follows
        const chain::Hash32& basis = p.chain.basis;
        const protocol::Fingerprint fp{w, m.uid, basis,
                                       p.replica->values_at(protocol::fingerprint_positions(basis, m.uid, p.specs))};
        pk.model_digest = protocol::fingerprint_digest(fp);
      }
      std::vector<kernels::CompressedTensor> tensors;
      if (o_.updates == Updates::kCut) {
        auto base = p.bases.find(w);
        if (base == p.bases.end()) return failed_precondition("window {} was not prepared", w);
        tensors = cut(base->second, o_.shared, rng);
      } else {
        auto own = p.own.find(std::pair(w, i));
        if (own == p.own.end()) return failed_precondition("window {} was not prepared", w);
        tensors = own->second;
      }
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        CRUCIBLE_ASSIGN_OR_RETURN(auto pt, kernels::to_packet_tensor(p.specs[t].name, p.specs[t].shape, tensors[t]));
        pk.tensors.push_back(std::move(pt));
      }
      CRUCIBLE_ASSIGN_OR_RETURN(sealed[i], chain::seal_packet(std::move(pk), m.key));
    }
    // ...committed in w's slot (it opens with w + 1's first block)...
    for (;;) {
      if (stop.load()) return Status::ok();
      auto head = reader->block_number();
      if (head.is_ok() && *head >= clock.slot_block(w)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CRUCIBLE_ASSIGN_OR_RETURN(const auto header, reader->block(clock.slot_block(w)));
    const protocol::UploadSlot slot = clock.slot(header.timestamp);
    parallel_for(miners_.size(), o_.threads, [&](std::size_t i) {
      const auto c = chain::keccak256(sealed[i]);
      failed[i] = miners_[i]->store->put(keys::commitment(w), ByteSpan(c.data(), c.size()));
    });
    // ...and revealed once it has closed.
    while (!slot.closed(unix_now())) {
      if (stop.load()) return Status::ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    parallel_for(miners_.size(), o_.threads, [&](std::size_t i) {
      if (failed[i].is_ok()) failed[i] = miners_[i]->store->put(keys::gradient(w), sealed[i]);
    });
    for (const auto& f : failed) CRUCIBLE_RETURN_IF_ERROR(f);
    if (unix_now() > slot.reveal_end_s()) log::warn("swarm: revealed after the reveal time", {{"window", w}});
    if (on_window) on_window(w);
  }
  return Status::ok();
}

}  // namespace crucible::swarm
