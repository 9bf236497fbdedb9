// The miner's upload (protocol.md §1, §6, §9), commit then reveal: once
// window w+1 has begun, put commitment/{w}.bin (the Keccak-256 of the sealed
// packet) inside w's upload slot; once the slot has closed, put
// gradient/{w}.crg and fingerprint/{w}.json. Until the slot closes nobody
// can see the update, so nobody can copy it in time. A missed slot leaves
// the update in error feedback.
#include "crucible/chain/keccak.h"
#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/protocol/object_keys.h"
#include "node_impl.h"

namespace crucible::miner {

namespace keys = protocol::keys;

Status MinerNode::Impl::upload(const Trained& t, const std::atomic<bool>& stop) {
  const std::uint64_t w = t.window;
  const std::uint64_t slot_block = clock.slot_block(w);
  for (;;) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t head, block_number(stop));
    if (head >= slot_block) break;
    if (!io.clock->sleep(kPoll, stop)) return aborted("stopped before the upload slot of window {}", w);
  }
  auto header = retry_transient("block header", *io.clock, stop, [&] { return chain().block(slot_block); });
  if (!header.is_ok()) return header.status();
  const protocol::UploadSlot slot = clock.slot(header->timestamp);
  if (!slot.open_for_upload(io.clock->unix_seconds())) {
    metrics::global().add(metrics::Counter::kUploads, 1, {{"result", "late"}});
    const double now = io.clock->unix_seconds();
    const double trained_s = now - t.started_s;
    log::warn(
        "missed the upload slot; the update stays in error feedback. Training must end within the window: "
        "fewer miner.inner_steps, a smaller micro_batch, or a GPU",
        {{"window", w}, {"train_seconds", trained_s}, {"seconds_past_slot", now - slot.end_s()}});
    return Status::ok();
  }
  const chain::Hash32 commitment = chain::keccak256(t.sealed);
  if (Status put = io.store->put(keys::commitment(w), ByteSpan(commitment.data(), commitment.size())); !put.is_ok()) {
    metrics::global().add(metrics::Counter::kUploads, 1, {{"result", "failed"}});
    log::error("commitment upload failed", {{"window", w}, {"error", put.to_string()}});
    return Status::ok();
  }
  log::info("committed gradient", {{"window", w}, {"key", keys::commitment(w)}});
  // The reveal: after the slot has closed for every clock, before reveal_s more.
  while (!slot.closed(io.clock->unix_seconds())) {
    if (!io.clock->sleep(kPoll, stop)) return aborted("stopped before revealing window {}'s packet", w);
  }
  if (Status put = io.store->put(keys::gradient(w), t.sealed); !put.is_ok()) {
    metrics::global().add(metrics::Counter::kUploads, 1, {{"result", "failed"}});
    log::error("gradient upload failed", {{"window", w}, {"error", put.to_string()}});
    return Status::ok();
  }
  if (Status f = io.store->put(keys::fingerprint(w), as_bytes(t.fingerprint_json)); !f.is_ok()) {
    log::warn("fingerprint upload failed", {{"window", w}, {"error", f.to_string()}});
  }
  if (slot.revealed(io.clock->unix_seconds())) {
    log::warn("revealed the packet after reveal_s: validators may have gathered without it", {{"window", w}});
  }
  metrics::global().add(metrics::Counter::kUploads, 1, {{"result", "ok"}});
  metrics::global().set(metrics::Gauge::kLastUploadWindow, static_cast<double>(w));
  state.uploaded_window = w;
  CRUCIBLE_RETURN_IF_ERROR(commit());
  const double seconds = io.clock->unix_seconds() - t.started_s;
  log::info("uploaded gradient",
            {{"window", w}, {"key", keys::gradient(w)}, {"bytes", t.sealed.size()}, {"seconds", seconds}});
  metrics::global().observe(metrics::Histogram::kWindowDurationSeconds, seconds, {{"role", "miner"}});
  return Status::ok();
}

}  // namespace crucible::miner
