// The miner's training step (protocol.md §2-5, §7): the fingerprint of the
// model it starts from, H inner steps on the uid's assigned samples, the
// pseudo-gradient through error feedback and compression, a signed packet.
#include <functional>

#include <fmt/format.h>

#include "crucible/chain/packet_signing.h"
#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/kernels/backend_codec.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/miner/rank_worker.h"
#include "node_impl.h"

namespace crucible::miner {

Result<Trained> MinerNode::Impl::train(std::uint64_t w, const std::atomic<bool>& stop) {
  Trained out;
  out.window = w;
  out.started_s = io.clock->unix_seconds();
  protocol::Fingerprint fp{w, uid, state.chain.basis,
                           replica->values_at(protocol::fingerprint_positions(state.chain.basis, uid, specs()))};
  const auto L = static_cast<std::uint64_t>(o.model.seq_len);
  CRUCIBLE_ASSIGN_OR_RETURN(auto idx, dataset->assignment(uid, w, o.protocol.samples_per_window, L));
  CRUCIBLE_ASSIGN_OR_RETURN(auto tokens, dataset->tokens(idx, L));
  const auto n = static_cast<std::int64_t>(o.protocol.samples_per_window);
  if (ranks) CRUCIBLE_RETURN_IF_ERROR(send_window(*ranks, tokens, n).with_context("the other ranks"));
  // A slow step (a busy machine) ends the window's training early rather
  // than miss the slot; a miner already past that moment trains the whole
  // window (its update stays in error feedback).
  const double train_end = train_deadline();
  std::function<bool()> out_of_time;
  if (train_end > io.clock->unix_seconds()) out_of_time = [&] { return io.clock->unix_seconds() >= train_end; };
  CRUCIBLE_ASSIGN_OR_RETURN(WindowResult r,
                            loop->train_window(
                                tokens, n, [&](const StepInfo& s) { progress(w, s); }, &stop, out_of_time));
  if (show_progress) fmt::print(stderr, "\n");
  const double packing_started = io.clock->unix_seconds();
  if (r.steps < o.miner.inner_steps) {
    log::warn("training cut short to commit inside the upload slot: this machine is slower than the window needs",
              {{"window", w}, {"steps", r.steps}, {"inner_steps", o.miner.inner_steps}});
  }
  state.inner_steps = loop->steps_done();
  metrics::global().add(metrics::Counter::kInnerSteps, r.steps);
  metrics::global().add(metrics::Counter::kTokensTrained, static_cast<double>(r.tokens));
  metrics::global().set(metrics::Gauge::kMinerLoss, r.mean_loss);
  metrics::global().set(metrics::Gauge::kTokensPerSecond, static_cast<double>(r.tokens) / std::max(r.seconds, 1e-9));

  CRUCIBLE_ASSIGN_OR_RETURN(packet::Packet p, compress(w, r, fp, dataset->digest(idx, L)));
  CRUCIBLE_ASSIGN_OR_RETURN(out.sealed, chain::seal_packet(std::move(p), key));
  out.fingerprint_json = protocol::encode_fingerprint(fp, specs());
  last_train_s = io.clock->unix_seconds() - out.started_s;
  state.trained_window = w;
  CRUCIBLE_RETURN_IF_ERROR(commit());
  last_pack_s = io.clock->unix_seconds() - packing_started;
  log::info("trained window",
            {{"window", w},
             {"loss", r.mean_loss},
             {"tokens", r.tokens},
             {"steps", r.steps},
             {"seconds", r.seconds},
             {"packet_bytes", out.sealed.size()},
             {"bytes_per_param", static_cast<double>(out.sealed.size()) / replica->num_parameters()}});
  return out;
}

// Error feedback and compression, tensor by tensor.
Result<packet::Packet> MinerNode::Impl::compress(std::uint64_t w, const WindowResult& r,
                                                 const protocol::Fingerprint& fp, const chain::Hash32& sample_digest) {
  packet::Packet p;
  p.protocol_version = protocol::kVersion;
  p.window = w;
  p.uid = uid;
  p.global_step = state.chain.global_step;
  p.model_digest = protocol::fingerprint_digest(fp);
  p.sample_digest = sample_digest;
  for (std::size_t i = 0; i < specs().size(); ++i) {
    const auto& spec = specs()[i];
    CRUCIBLE_ASSIGN_OR_RETURN(
        kernels::CompressedTensor c,
        kernels::error_feedback_step(*codec, state.ef[i], r.delta[i], spec.shape, static_cast<float>(o.miner.ef_beta)));
    CRUCIBLE_ASSIGN_OR_RETURN(packet::Tensor t, kernels::to_packet_tensor(spec.name, spec.shape, c));
    p.tensors.push_back(std::move(t));
  }
  return p;
}

// When window w ends, from the chain: the head's timestamp plus the blocks
// still to come at the recent block interval. 0 when it cannot be read.
double MinerNode::Impl::estimate_window_end(std::uint64_t w, const std::atomic<bool>& stop) {
  auto head = block_number(stop);
  if (!head.is_ok()) return 0;
  const std::uint64_t span = std::min<std::uint64_t>(*head, kRateBlocks);
  auto now = chain().block(*head);
  auto before = chain().block(*head - span);
  if (!now.is_ok() || !before.is_ok() || span == 0) return 0;
  const double spb =
      (static_cast<double>(now->timestamp) - static_cast<double>(before->timestamp)) / static_cast<double>(span);
  if (!(spb > 0)) return 0;  // blocks of one timestamp (a chain mined in bursts): no rate to go by
  // Timestamps are whole seconds: a head read just now came at most a block
  // ago, which is the closer bound where blocks come faster than seconds.
  const double head_s = std::max(static_cast<double>(now->timestamp), io.clock->unix_seconds() - spb);
  return head_s + spb * static_cast<double>(clock.blocks_left(w, *head));
}

double MinerNode::Impl::commit_by(double work_s) const {
  if (window_end_s <= 0) return 0;
  // The slot's end, less the work still to do, a second to spare for the
  // slot's opening (block timestamps are whole seconds) and a poll for the
  // commit.
  return window_end_s + o.protocol.upload_slot_s - work_s - 1.0 - std::chrono::duration<double>(kPoll).count();
}

// Training as long as last time, and a tenth more.
double MinerNode::Impl::latest_wait() const { return commit_by(1.1 * last_train_s); }

// Packing as long as last time, and half more.
double MinerNode::Impl::train_deadline() const { return commit_by(1.5 * last_pack_s); }

void MinerNode::Impl::progress(std::uint64_t w, const StepInfo& s) {
  const double left = window_end_s > 0 ? std::max(0.0, window_end_s - io.clock->unix_seconds()) : 0;
  if (show_progress) {
    fmt::print(stderr, "\r\033[Kwindow {} step {}/{} loss {:.4f} {:.0f} tokens/s {:.0f} s left in window", w, s.step,
               s.steps, s.loss, s.tokens_per_second, left);
  } else {
    log::debug("inner step",
               {{"window", w}, {"step", s.step}, {"loss", s.loss}, {"tokens_per_s", s.tokens_per_second}});
  }
}

}  // namespace crucible::miner
