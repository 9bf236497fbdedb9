// Weights (protocol.md §10): every weights_every windows the validator
// posts its weights. Each post is logged (WeightsLogEntry) before it is
// sent and after, so a restart never posts an epoch twice: a pending post
// found on chain is confirmed, a commit is re-sent with its own salt.
#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/common/retry.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

namespace {

// The weights to post: the scores' weights, or all of it on burn_uid when
// no uid has a positive score (posting nothing would leave older weights
// in force on chain).
std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>> weights_to_post(const ValidatorState& st,
                                                                                  WindowContext& cx) {
  auto q = quantize_weights(weights(st.scores, cx.o.protocol.scoring));
  if (q.first.empty()) {
    log::info("no positive scores: all weight to the burn uid", {{"burn_uid", cx.o.validator.burn_uid}});
    return {{cx.o.validator.burn_uid}, {65535}};
  }
  return q;
}

Status put_log(const WeightsLogEntry& e, storage::StateStore& db) {
  storage::StateStore::Batch b;
  const std::string text = to_json(e).dump();
  b.put(storage::Family::kWeightsLog, epoch_key(e.epoch), as_bytes(text));
  return db.commit(std::move(b));
}

Result<std::optional<WeightsLogEntry>> read_log(std::uint64_t epoch, storage::StateStore& db) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto bytes, db.get(storage::Family::kWeightsLog, epoch_key(epoch)));
  if (!bytes) return std::optional<WeightsLogEntry>();
  auto j = nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, false);
  CRUCIBLE_ASSIGN_OR_RETURN(WeightsLogEntry e, weights_entry_from_json(j));
  return std::optional<WeightsLogEntry>(std::move(e));
}

void count(std::string_view result) {
  metrics::global().add(metrics::Counter::kWeightPosts, 1, {{"result", std::string(result)}});
}

void record_sent(WeightsLogEntry& e, const Result<chain::SentTx>& sent, WeightsPhase on_success,
                 std::string_view what) {
  if (!sent.is_ok()) {
    e.phase = WeightsPhase::kFailed;
    e.error = sent.status().to_string();
    count("failed");
    log::error(fmt::format("{} weights failed", what), {{"epoch", e.epoch}, {"error", *e.error}});
    return;
  }
  e.phase = on_success;
  log::info(fmt::format("{} weights", what), {{"epoch", e.epoch}, {"tx", to_hex(sent->receipt.tx_hash)}});
}

// Commit-reveal subnets: each epoch reveals the earlier epochs' commits,
// then commits this one. The commit (with its salt) is logged before it is
// sent, so a restart re-sends the same commit rather than a new one.
Status commit_reveal(std::uint64_t epoch, std::uint64_t w, const chain::SubnetParams& sp, const ValidatorState& st,
                     WindowContext& cx) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto rows, cx.db.scan(storage::Family::kWeightsLog, "epoch/"));
  for (const auto& [k, v] : rows) {
    auto parsed = weights_entry_from_json(nlohmann::json::parse(v.begin(), v.end(), nullptr, false));
    if (!parsed.is_ok()) {
      log::warn("unreadable weights log entry skipped", {{"key", k}, {"error", parsed.status().to_string()}});
      continue;
    }
    WeightsLogEntry e = std::move(*parsed);
    if (e.epoch >= epoch || e.phase != WeightsPhase::kCommitted) continue;
    auto sent = cx.chain().reveal_weights(*e.commit);
    record_sent(e, sent, WeightsPhase::kConfirmed, "revealed");
    if (sent.is_ok()) {
      e.tx = to_hex(sent->receipt.tx_hash);
      e.block = sent->receipt.block_number;
      count("revealed");
    }
    CRUCIBLE_RETURN_IF_ERROR(put_log(e, cx.db));
  }
  CRUCIBLE_ASSIGN_OR_RETURN(auto logged, read_log(epoch, cx.db));
  if (logged && logged->phase != WeightsPhase::kCommitting) return Status::ok();
  WeightsLogEntry entry;
  if (logged) {
    entry = std::move(*logged);
  } else {
    auto [uids, values] = weights_to_post(st, cx);
    CRUCIBLE_ASSIGN_OR_RETURN(chain::WeightsCommit c,
                              cx.chain().make_commit(cx.o.chain.netuid, uids, values, sp.version_key));
    entry.epoch = epoch;
    entry.window = w;
    entry.uids = std::move(uids);
    entry.values = std::move(values);
    entry.phase = WeightsPhase::kCommitting;
    entry.commit = std::move(c);
    CRUCIBLE_RETURN_IF_ERROR(put_log(entry, cx.db));
  }
  auto sent = cx.chain().commit_weights(*entry.commit);
  record_sent(entry, sent, WeightsPhase::kCommitted, "committed");
  if (sent.is_ok()) {
    entry.commit_tx = to_hex(sent->receipt.tx_hash);
    count("committed");
  }
  return put_log(entry, cx.db);
}

Status set_weights(std::uint64_t epoch, std::uint64_t w, const chain::SubnetParams& sp, const ValidatorState& st,
                   WindowContext& cx) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto logged, read_log(epoch, cx.db));
  auto mg = retry_transient("metagraph", cx.stop, [&] { return cx.chain().metagraph(cx.o.chain.netuid); });
  if (!mg.is_ok()) return mg.status();
  if (logged) {
    if (logged->phase == WeightsPhase::kConfirmed) return Status::ok();
    // A post in flight at a crash: it landed if our uid's last update moved past it.
    if (logged->phase == WeightsPhase::kPending && cx.uid < mg->neurons.size() &&
        mg->neurons[cx.uid].last_update > logged->block_before.value_or(0)) {
      logged->phase = WeightsPhase::kConfirmed;
      logged->confirmed_after_restart = true;
      log::info("weights post found on chain after a restart", {{"epoch", epoch}});
      return put_log(*logged, cx.db);
    }
  }
  auto [uids, values] = weights_to_post(st, cx);
  auto head = retry_transient("block number", cx.stop, [&] { return cx.chain().block_number(); });
  if (!head.is_ok()) return head.status();
  WeightsLogEntry entry;
  entry.epoch = epoch;
  entry.window = w;
  entry.uids = uids;
  entry.values = values;
  entry.phase = WeightsPhase::kPending;
  entry.block_before = *head;
  CRUCIBLE_RETURN_IF_ERROR(put_log(entry, cx.db));
  auto sent = cx.chain().set_weights(cx.o.chain.netuid, uids, values, sp.version_key);
  record_sent(entry, sent, WeightsPhase::kConfirmed, "posted");
  // A transient failure leaves the outcome unknown (the transaction may have
  // landed): the entry stays pending, and the chain decides after a restart.
  if (!sent.is_ok() && sent.status().is_transient()) entry.phase = WeightsPhase::kPending;
  if (sent.is_ok()) {
    entry.tx = to_hex(sent->receipt.tx_hash);
    entry.block = sent->receipt.block_number;
    count("confirmed");
  }
  return put_log(entry, cx.db);
}

}  // namespace

Status maybe_post_weights(std::uint64_t w, const ValidatorState& st, WindowContext& cx) {
  const std::uint32_t every = cx.o.validator.weights_every;
  if ((w + 1) % every != 0) return Status::ok();
  const std::uint64_t epoch = w / every;
  auto sp = retry_transient("subnet params", cx.stop, [&] { return cx.chain().subnet_params(cx.o.chain.netuid); });
  if (!sp.is_ok()) return sp.status();
  return sp->commit_reveal ? commit_reveal(epoch, w, *sp, st, cx) : set_weights(epoch, w, *sp, st, cx);
}

}  // namespace crucible::validator
