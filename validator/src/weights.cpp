// Weights (protocol.md §6): every weights_every windows the validator
// posts its weights. Each post is logged (WeightsLogEntry) before it is
// sent and after, so a restart never posts an epoch twice: a pending post
// found on chain is confirmed, a commit is re-sent with its own salt.
//
// The chain's rules (opentensor/subtensor 14bc6f9,
// pallets/subtensor/src/subnets/weights.rs and guards/check_weights.rs) are
// applied before anything is sent, so no fee is spent on a refusal:
//   - stake below StakeThreshold: NotEnoughStakeToSetWeights; said, not sent;
//   - fewer than WeightsSetRateLimit blocks since LastUpdate (set at
//     registration, each post and each commit): SettingWeightsTooFast /
//     CommittingWeightsTooFast; this epoch's post waits for the next;
//   - min allowed weights and max weight limit: fit_weights_to_subnet;
//   - commit-reveal: a commit made in subnet epoch e is revealed only in
//     epoch e + RevealPeriodEpochs (RevealTooEarly before; after it the
//     commit is lost), so reveals are checked every window, by epoch.
#include <algorithm>
#include <cmath>
#include <numeric>

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

bool says(const Status& st, std::string_view error) { return st.message().find(error) != std::string::npos; }

// Reveals every logged commit whose reveal epoch is the current one; a
// commit whose epoch passed is marked expired (the chain would refuse it).
// The logged commits not revealed yet (read from RocksDB: no chain call).
Result<std::vector<WeightsLogEntry>> unrevealed(storage::StateStore& db) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto rows, db.scan(storage::Family::kWeightsLog, "epoch/"));
  std::vector<WeightsLogEntry> out;
  for (const auto& [k, v] : rows) {
    auto parsed = weights_entry_from_json(nlohmann::json::parse(v.begin(), v.end(), nullptr, false));
    if (!parsed.is_ok()) {
      log::warn("unreadable weights log entry skipped", {{"key", k}, {"error", parsed.status().to_string()}});
      continue;
    }
    if (parsed->phase == WeightsPhase::kCommitted) out.push_back(std::move(*parsed));
  }
  return out;
}

Status reveal_due(std::vector<WeightsLogEntry> commits, const chain::SubnetParams& sp, WindowContext& cx) {
  auto current =
      retry_transient("subnet epoch", *cx.io.clock, cx.stop, [&] { return cx.chain().subnet_epoch(cx.o.netuid, {}); });
  if (!current.is_ok()) return current.status();
  for (WeightsLogEntry& e : commits) {
    // The reveal period as the chain reads it now (weights.rs
    // is_reveal_block_range); a commit logged without its epoch is tried once.
    const std::uint64_t due = e.commit_epoch ? *e.commit_epoch + sp.reveal_period : *current;
    if (*current < due) continue;
    if (*current > due) {
      e.phase = WeightsPhase::kExpired;
      e.error = fmt::format("the reveal epoch {} passed (now {}) before the reveal", due, *current);
      count("expired");
      log::error("weights commit expired unrevealed", {{"epoch", e.epoch}, {"reveal_epoch", due}});
      CRUCIBLE_RETURN_IF_ERROR(put_log(e, cx.db));
      continue;
    }
    auto sent = cx.chain().reveal_weights(*e.commit);
    if (!sent.is_ok() && (says(sent.status(), "RevealTooEarly") || sent.status().is_transient())) {
      // Refused by gas estimation (no fee spent) or not known to have
      // landed: the next window tries again while the epoch lasts.
      count("reveal_retry");
      log::info("reveal not taken yet; retried next window",
                {{"epoch", e.epoch}, {"reveal_epoch", due}, {"error", sent.status().to_string()}});
      continue;
    }
    record_sent(e, sent, WeightsPhase::kConfirmed, "revealed");
    if (sent.is_ok()) {
      e.tx = to_hex(sent->receipt.tx_hash);
      e.block = sent->receipt.block_number;
      count("revealed");
    }
    CRUCIBLE_RETURN_IF_ERROR(put_log(e, cx.db));
  }
  return Status::ok();
}

// Commits this epoch's weights. The commit (with its salt) is logged before
// it is sent, so a restart re-sends the same commit rather than a new one.
Status commit(std::uint64_t epoch, std::uint64_t w, const chain::SubnetParams& sp,
              std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>> weights,
              std::optional<WeightsLogEntry> logged, WindowContext& cx) {
  WeightsLogEntry entry;
  if (logged) {
    entry = std::move(*logged);
  } else {
    auto [uids, values] = std::move(weights);
    CRUCIBLE_ASSIGN_OR_RETURN(chain::WeightsCommit c,
                              cx.chain().make_commit(cx.o.netuid, uids, values, sp.version_key));
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
    // The commit belongs to the epoch the chain was in at its block.
    auto at = cx.chain().subnet_epoch(cx.o.netuid, sent->receipt.block_number);
    if (!at.is_ok()) at = cx.chain().subnet_epoch(cx.o.netuid, {});
    if (at.is_ok()) entry.commit_epoch = *at;
    log::info("weights reveal scheduled",
              {{"epoch", epoch},
               {"reveal_epoch", entry.commit_epoch ? *entry.commit_epoch + sp.reveal_period : 0},
               {"tempo", sp.tempo}});
    const std::uint64_t window_blocks = cx.o.protocol.blocks_per_window;
    if (sp.tempo > 0 && window_blocks > sp.tempo) {
      log::warn("windows are longer than the subnet's epochs: a reveal may miss its epoch",
                {{"blocks_per_window", window_blocks}, {"tempo", sp.tempo}});
    }
  }
  return put_log(entry, cx.db);
}

Status set_weights(std::uint64_t epoch, std::uint64_t w, const chain::SubnetParams& sp,
                   std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>> weights, std::uint64_t head,
                   WindowContext& cx) {
  auto [uids, values] = std::move(weights);
  WeightsLogEntry entry;
  entry.epoch = epoch;
  entry.window = w;
  entry.uids = uids;
  entry.values = values;
  entry.phase = WeightsPhase::kPending;
  entry.block_before = head;
  CRUCIBLE_RETURN_IF_ERROR(put_log(entry, cx.db));
  auto sent = cx.chain().set_weights(cx.o.netuid, uids, values, sp.version_key);
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

// Whether the chain would take a post from this validator now: said when not.
bool may_post(const chain::Neuron& me, std::uint64_t head, const chain::SubnetParams& sp) {
  if (me.stake < sp.stake_threshold) {
    count("below_stake_threshold");
    log::warn("stake below the subnet's threshold: the chain refuses weights (NotEnoughStakeToSetWeights); add stake",
              {{"stake_rao", me.stake}, {"threshold_rao", sp.stake_threshold}});
    return false;
  }
  // The post lands in a later block than the head.
  const std::uint64_t since = head + 1 - std::min(head + 1, me.last_update);
  if (me.last_update != 0 && since < sp.rate_limit) {
    count("rate_limited");
    log::warn("weights rate limit: this epoch's post waits for the next",
              {{"blocks_since_last_update", since}, {"rate_limit", sp.rate_limit}});
    return false;
  }
  return true;
}

}  // namespace

Result<std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>>> fit_weights_to_subnet(
    std::vector<std::uint16_t> uids, std::vector<std::uint16_t> values, std::size_t n_uids,
    const chain::SubnetParams& sp) {
  if (uids.size() != values.size()) return invalid_argument("{} uids but {} weights", uids.size(), values.size());
  std::map<std::uint16_t, std::uint64_t> w;
  for (std::size_t i = 0; i < uids.size(); ++i) w[uids[i]] += values[i];
  // The chain's own check (check_vec_max_limited), in integers.
  auto within_limit = [&](const auto& m) {
    std::uint64_t sum = 0, top = 0;
    for (const auto& [u, v] : m) {
      sum += v;
      top = std::max<std::uint64_t>(top, v);
    }
    return sum == 0 || top * 65535 <= static_cast<std::uint64_t>(sp.max_weight_limit) * sum;
  };
  if (!within_limit(w)) {
    // Shares above the cap are capped and the excess spread over the
    // uncapped in proportion (water filling), then back to u16 with the
    // largest at 65535, nudged down until the integer check holds.
    const double cap = static_cast<double>(sp.max_weight_limit) / 65535.0;
    std::size_t positive = 0;
    double total = 0;
    for (const auto& [u, v] : w) {
      positive += v > 0;
      total += static_cast<double>(v);
    }
    if (static_cast<double>(positive) * cap < 1.0) {
      return failed_precondition(
          "the subnet's max weight limit ({}/65535 per uid) needs at least {} uids with weight; this post has {}",
          sp.max_weight_limit, static_cast<std::size_t>(std::ceil(1.0 / cap)), positive);
    }
    std::map<std::uint16_t, double> share;
    for (const auto& [u, v] : w) share[u] = static_cast<double>(v) / total;
    for (int round = 0; round < 64; ++round) {
      double excess = 0, free = 0;
      for (auto& [u, x] : share) {
        if (x > cap) {
          excess += x - cap;
          x = cap;
        } else if (x < cap) {
          free += x;
        }
      }
      if (excess <= 0 || free <= 0) break;
      for (auto& [u, x] : share)
        if (x < cap) x += excess * x / free;
    }
    double max = 0;
    for (const auto& [u, x] : share) max = std::max(max, x);
    for (auto& [u, v] : w) v = static_cast<std::uint64_t>(std::lround(share[u] / max * 65535.0));
    for (int round = 0; round < 1 << 16 && !within_limit(w); ++round) {
      std::uint64_t top = 0;
      for (const auto& [u, v] : w) top = std::max(top, v);
      for (auto& [u, v] : w)
        if (v == top) --v;
    }
  }
  // Min allowed weights: zero weights on the lowest other uids.
  const std::size_t need = std::min<std::size_t>(n_uids, sp.min_allowed_weights);
  for (std::uint16_t u = 0; w.size() < need && u < n_uids; ++u) w.emplace(u, 0);
  std::vector<std::uint16_t> out_uids, out_values;
  for (const auto& [u, v] : w) {
    out_uids.push_back(u);
    out_values.push_back(static_cast<std::uint16_t>(std::min<std::uint64_t>(v, 65535)));
  }
  return std::make_pair(std::move(out_uids), std::move(out_values));
}

Status post_missed_weights(std::uint64_t last, const ValidatorState& st, WindowContext& cx) {
  const std::uint32_t every = cx.o.validator.weights_every;
  if ((last + 1) % every != 0) return Status::ok();
  CRUCIBLE_ASSIGN_OR_RETURN(auto logged, read_log(last / every, cx.db));
  if (logged) return Status::ok();
  log::info("posting the weights a stop cut off", {{"window", last}, {"epoch", last / every}});
  return maybe_post_weights(last, st, cx);
}

Status maybe_post_weights(std::uint64_t w, const ValidatorState& st, WindowContext& cx) {
  const std::uint32_t every = cx.o.validator.weights_every;
  const bool posting = (w + 1) % every == 0;
  CRUCIBLE_ASSIGN_OR_RETURN(auto commits, unrevealed(cx.db));
  // A window that neither posts nor has a commit to reveal asks the chain nothing.
  if (!posting && commits.empty()) return Status::ok();
  auto sp =
      retry_transient("subnet params", *cx.io.clock, cx.stop, [&] { return cx.chain().subnet_params(cx.o.netuid); });
  if (!sp.is_ok()) return sp.status();
  if (sp->commit_reveal && !commits.empty()) CRUCIBLE_RETURN_IF_ERROR(reveal_due(std::move(commits), *sp, cx));
  if (!posting) return Status::ok();
  const std::uint64_t epoch = w / every;

  CRUCIBLE_ASSIGN_OR_RETURN(auto logged, read_log(epoch, cx.db));
  if (logged && logged->phase != WeightsPhase::kPending && logged->phase != WeightsPhase::kCommitting) {
    return Status::ok();  // done (or failed) already
  }
  auto mg = retry_transient("metagraph", *cx.io.clock, cx.stop, [&] { return cx.chain().metagraph(cx.o.netuid); });
  if (!mg.is_ok()) return mg.status();
  if (cx.uid >= mg->neurons.size()) return failed_precondition("uid {} is no longer in the metagraph", cx.uid);
  const chain::Neuron& me = mg->neurons[cx.uid];
  if (logged && logged->phase == WeightsPhase::kCommitting) return commit(epoch, w, *sp, {}, std::move(logged), cx);
  if (logged && logged->phase == WeightsPhase::kPending) {
    // A post in flight at a crash: it landed if our uid's last update moved past it.
    if (me.last_update > logged->block_before.value_or(0)) {
      logged->phase = WeightsPhase::kConfirmed;
      logged->confirmed_after_restart = true;
      log::info("weights post found on chain after a restart", {{"epoch", epoch}});
      return put_log(*logged, cx.db);
    }
  }
  auto head = retry_transient("block number", *cx.io.clock, cx.stop, [&] { return cx.chain().block_number(); });
  if (!head.is_ok()) return head.status();
  if (!may_post(me, *head, *sp)) return Status::ok();
  auto [uids, values] = weights_to_post(st, cx);
  auto fitted = fit_weights_to_subnet(std::move(uids), std::move(values), mg->neurons.size(), *sp);
  if (!fitted.is_ok()) {
    count("refused_by_subnet_rules");
    log::error("weights not posted", {{"epoch", epoch}, {"error", fitted.status().to_string()}});
    return Status::ok();
  }
  return sp->commit_reveal ? commit(epoch, w, *sp, std::move(*fitted), std::nullopt, cx)
                           : set_weights(epoch, w, *sp, std::move(*fitted), *head, cx);
}

}  // namespace crucible::validator
