#include "demo_adversary.h"

#include <random>

#include "crucible/chain/evm_chain.h"
#include "crucible/chain/keccak.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/common/dataset.h"
#include "crucible/common/log.h"
#include "crucible/common/replica.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/window_clock.h"
#include "crucible/storage/local_store.h"
#include "crucible/storage/peer_location.h"

namespace crucible::cli {

namespace keys = protocol::keys;

struct Adversary::State {
  std::unique_ptr<chain::EvmChain> chain;
  std::unique_ptr<storage::LocalStore> store;
  std::unique_ptr<storage::LocalStore> honest;
  std::optional<data::Dataset> dataset;
  std::vector<model::TensorSpec> specs;
};

Adversary::Adversary(AdversaryOptions o) : o_(std::move(o)) {}

bool valid_adversary_kind(const std::string& kind) { return kind == "noise" || kind == "zero" || kind == "copy"; }

Result<std::unique_ptr<Adversary>> Adversary::start(AdversaryOptions options) {
  if (!valid_adversary_kind(options.kind)) return invalid_argument("--bad-miner {}: noise, zero or copy", options.kind);
  auto a = std::unique_ptr<Adversary>(new Adversary(std::move(options)));
  auto st = std::make_unique<State>();
  CRUCIBLE_ASSIGN_OR_RETURN(st->chain, chain::EvmChain::connect(chain::to_evm_options(a->o_.chain), a->o_.key));
  CRUCIBLE_ASSIGN_OR_RETURN(st->store, storage::LocalStore::open(a->o_.store));
  std::filesystem::create_directories(a->o_.honest_store);
  CRUCIBLE_ASSIGN_OR_RETURN(st->honest, storage::LocalStore::open(a->o_.honest_store));
  CRUCIBLE_ASSIGN_OR_RETURN(auto ds, data::Dataset::open(a->o_.data, "train"));
  st->dataset.emplace(std::move(ds));
  CRUCIBLE_ASSIGN_OR_RETURN(auto replica, model::Replica::create(a->o_.model, {"cpu", 1}, 1));
  st->specs = replica->specs();
  storage::StorageOptions so;
  so.url = "file://" + a->o_.store.string();
  CRUCIBLE_RETURN_IF_ERROR(
      st->chain->set_commitment(a->o_.chain.netuid, storage::encode_location(so)).status().with_context("commitment"));
  a->state_ = std::move(st);
  a->thread_ = std::thread([p = a.get()] { p->run(); });
  return a;
}

Adversary::~Adversary() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Adversary::run() {
  const protocol::WindowClock clock(o_.protocol);
  std::optional<std::uint64_t> done;
  while (!stop_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    auto head = state_->chain->block_number();
    if (!head.is_ok()) continue;
    const std::uint64_t current = clock.window_of(*head);
    if (current == 0 || (done && *done >= current - 1)) continue;
    const std::uint64_t w = current - 1;  // w's upload slot is open at the start of w + 1
    if (Status s = upload(w); !s.is_ok()) {
      log::warn("bad miner: no upload", {{"kind", o_.kind}, {"window", w}, {"error", s.to_string()}});
    } else {
      ++uploads_;
    }
    done = w;
  }
}

Status Adversary::upload(std::uint64_t w) {
  State& st = *state_;
  packet::Packet p;
  p.window = w;
  p.uid = o_.uid;
  const auto L = static_cast<std::uint64_t>(o_.model.seq_len);
  CRUCIBLE_ASSIGN_OR_RETURN(auto idx, st.dataset->assignment(o_.uid, w, o_.protocol.samples_per_window, L));
  p.sample_digest = st.dataset->digest(idx, L);
  if (o_.kind == "copy") {
    // Packets are revealed only after the slot: commit to a guess now, and
    // re-sign the honest miner's packet as soon as it appears.
    chain::Hash32 guess;
    guess.fill(static_cast<std::uint8_t>(w));
    CRUCIBLE_RETURN_IF_ERROR(st.store->put(keys::commitment(w), ByteSpan(guess.data(), guess.size())));
    for (int i = 0; i < 100 && !stop_.load(); ++i) {
      auto g = st.honest->get(keys::gradient(w), 1ull << 30);
      if (g.is_ok()) {
        CRUCIBLE_ASSIGN_OR_RETURN(auto opened, chain::open_packet(g->data));
        p.tensors = opened.packet.tensors;
        p.model_digest = opened.packet.model_digest;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (p.tensors.empty()) return not_found("honest miner 1 uploaded nothing for window {}", w);
  } else {
    std::mt19937 rng(static_cast<std::uint32_t>(w * 7919 + o_.uid));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const auto& s : st.specs) {
      std::vector<float> x(static_cast<std::size_t>(s.numel()), 0.0f);
      if (o_.kind == "noise")
        for (float& v : x) v = normal(rng);
      CRUCIBLE_ASSIGN_OR_RETURN(auto c, kernels::compress(x, s.shape, 1));
      CRUCIBLE_ASSIGN_OR_RETURN(auto t, kernels::to_packet_tensor(s.name, s.shape, c));
      p.tensors.push_back(std::move(t));
    }
  }
  const bool copy = o_.kind == "copy";
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes sealed, chain::seal_packet(std::move(p), o_.key));
  if (!copy) {
    const chain::Hash32 c = chain::keccak256(sealed);
    CRUCIBLE_RETURN_IF_ERROR(st.store->put(keys::commitment(w), ByteSpan(c.data(), c.size())));
  }
  return st.store->put(keys::gradient(w), sealed);
}

}  // namespace crucible::cli
