// The miner node: creation (data, model, state, subnet) and the window loop.
// The steps themselves are in catch_up.cpp, train.cpp and upload.cpp.
#include "crucible/miner/node.h"

#include <unistd.h>

#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/kernels/backend_codec.h"
#include "crucible/miner/rank_worker.h"
#include "crucible/protocol/instance.h"
#include "crucible/protocol/network_data.h"
#include "node_impl.h"

namespace crucible::miner {

namespace fs = std::filesystem;

Status MinerNode::Impl::commit() {
  return state_dir->commit(state, specs(), [&](const fs::path& g) { return loop->save(g); });
}

Result<std::uint64_t> MinerNode::Impl::block_number(const std::atomic<bool>& stop) {
  return retry_transient("block number", *io.clock, stop, [&] { return chain().block_number(); });
}

namespace {

Status open_dataset(MinerNode::Impl& m) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto ds,
                            protocol::open_network_data(m.o.miner.data_dir, "miner.data_dir", m.o.model, m.o.protocol));
  m.dataset.emplace(std::move(ds));
  // Validators check a random few of the assigned samples (protocol.md §6):
  // samples never trained on make an honest miner fail its own-data checks.
  const std::uint64_t trained = std::uint64_t{m.o.miner.inner_steps} * m.o.miner.micro_batch;
  if (trained < m.o.protocol.samples_per_window) {
    log::warn(
        "training covers only part of the assigned samples: validators check random ones, so the own-data "
        "checks will fail often; raise miner.inner_steps or miner.micro_batch",
        {{"trained_per_window", trained}, {"samples_per_window", m.o.protocol.samples_per_window}});
  }
  return Status::ok();
}

Status open_model_and_state(MinerNode::Impl& m) {
  model::ReplicaOptions ro{m.o.miner.device, m.o.miner.threads, m.o.miner.autocast};
  CRUCIBLE_ASSIGN_OR_RETURN(m.replica, model::Replica::create(m.o.model, ro, m.o.protocol.init_seed));
  CRUCIBLE_RETURN_IF_ERROR(protocol::check_genesis(m.o.protocol, [&] { return m.replica->parameters_sha256(); }));
  CRUCIBLE_RETURN_IF_ERROR(check_ranks(m.o.miner));
  if (m.o.miner.rank != 0) return invalid_argument("miner.rank {} is a worker: it runs no node", m.o.miner.rank);
  if (m.o.miner.world() > 1) {
    const RankLayout layout{0, m.o.miner.world(), m.o.miner.rank_store, m.o.miner.rank_timeout_s};
    log::info("waiting for the other ranks", {{"world_size", layout.world_size}, {"store", layout.store}});
    CRUCIBLE_ASSIGN_OR_RETURN(m.ranks, RankGroup::join(layout));
  }
  CRUCIBLE_ASSIGN_OR_RETURN(m.loop, InnerLoop::create(*m.replica, m.o.miner, m.ranks.get()));
  CRUCIBLE_ASSIGN_OR_RETURN(m.codec, kernels::backend_for(m.o.miner.device, m.o.miner.threads));
  CRUCIBLE_ASSIGN_OR_RETURN(StateDir sd, StateDir::open(m.o.miner.state_dir));
  m.state_dir.emplace(std::move(sd));
  CRUCIBLE_ASSIGN_OR_RETURN(auto loaded, m.state_dir->load(m.specs()));
  if (!loaded) {
    for (const auto& spec : m.specs()) m.state.ef.emplace_back(static_cast<std::size_t>(spec.numel()), 0.0f);
    return m.loop->share_state();
  }
  m.state = std::move(loaded->second);
  CRUCIBLE_RETURN_IF_ERROR(m.loop->load(loaded->first, m.state.inner_steps).with_context("miner state"));
  log::info("resumed miner state",
            {{"folder", m.o.miner.state_dir},
             {"global_step", m.state.chain.global_step},
             {"trained_window", m.state.trained_window ? std::to_string(*m.state.trained_window) : "none"}});
  return m.loop->share_state();
}

}  // namespace

MinerNode::MinerNode() = default;
MinerNode::~MinerNode() = default;

Result<std::unique_ptr<MinerNode>> MinerNode::create(const MinerNodeOptions& options, const chain::PrivateKey& key,
                                                     protocol::NodeIo io) {
  CRUCIBLE_RETURN_IF_ERROR(protocol::check(io));
  CRUCIBLE_RETURN_IF_ERROR(model::validate(options.model));
  std::unique_ptr<MinerNode> node(new MinerNode());
  node->impl_ = std::make_unique<Impl>(options, key, std::move(io));
  Impl& m = *node->impl_;
  m.show_progress = options.miner.progress == "on" || (options.miner.progress == "auto" && isatty(STDERR_FILENO) == 1);
  CRUCIBLE_RETURN_IF_ERROR(open_dataset(m));
  CRUCIBLE_RETURN_IF_ERROR(open_model_and_state(m));
  m.peers = std::make_unique<protocol::PeerDirectory>(m.chain(), options.chain.netuid, m.io.open_peer_store);
  CRUCIBLE_ASSIGN_OR_RETURN(m.uid, protocol::join_subnet(m.chain(), options.chain.netuid, key, options.storage));
  CRUCIBLE_ASSIGN_OR_RETURN(
      auto claim, protocol::claim_at_start(m.io, *m.peers, options.chain.netuid, m.uid, key, options.model.canonical(),
                                           m.clock, options.miner.state_dir));
  m.claim.emplace(std::move(claim));
  log::info("miner ready", {{"uid", m.uid},
                            {"address", key.address().checksum()},
                            {"parameters", m.replica->num_parameters()},
                            {"store", m.io.store->describe()}});
  return node;
}

std::uint16_t MinerNode::uid() const { return impl_->uid; }

Status MinerNode::run(const std::atomic<bool>& stop) {
  Impl& m = *impl_;
  // However run ends, the other ranks stop with it (a broken group: they
  // learn it from their own collective).
  struct StopRanks {
    RankGroup* ranks;
    ~StopRanks() {
      if (ranks != nullptr) (void)send_stop(*ranks);
    }
  } stop_ranks{m.ranks.get()};
  std::uint32_t done = 0;
  while (!stop.load()) {
    auto head = protocol::chain_head(m.io, stop);
    if (!head) continue;
    const std::uint64_t w = m.clock.window_of(*head);
    metrics::global().set(metrics::Gauge::kWindow, static_cast<double>(w), {{"role", "miner"}});
    if (m.state.trained_window && *m.state.trained_window >= w) {
      m.io.clock->sleep(2 * kPoll, stop);
      continue;
    }
    std::optional<std::uint64_t> wait_for;
    if (w > 0 && m.state.uploaded_window && *m.state.uploaded_window == w - 1) wait_for = w - 1;
    CRUCIBLE_RETURN_IF_ERROR(m.claim->renew(w));
    m.window_end_s = m.estimate_window_end(w, stop);
    // The wait for the last set ends in time to train w before its slot.
    CRUCIBLE_RETURN_IF_ERROR(m.catch_up(wait_for, stop, wait_for ? m.latest_wait() : 0));
    if (stop.load()) break;
    auto trained = m.train(w, stop);
    if (trained.status().code() == StatusCode::kAborted) break;
    CRUCIBLE_RETURN_IF_ERROR(trained.status());
    Status up = m.upload(*trained, stop);
    if (up.code() == StatusCode::kAborted) break;
    CRUCIBLE_RETURN_IF_ERROR(up);
    if (m.o.miner.max_windows != 0 && ++done >= m.o.miner.max_windows) {
      log::info("done: max_windows reached", {{"windows", done}});
      break;
    }
  }
  log::info("miner stopped",
            {{"trained_window", m.state.trained_window ? std::to_string(*m.state.trained_window) : "none"}});
  return Status::ok();
}

}  // namespace crucible::miner
