#include "crucible/validator/state.h"

#include <fmt/format.h>

#include <charconv>

#include "crucible/common/json_fields.h"

namespace crucible::validator {

using nlohmann::json;

std::string rating_key(std::uint16_t uid) { return fmt::format("uid/{:05}", uid); }
std::optional<std::uint16_t> uid_of_rating_key(std::string_view key) {
  constexpr std::string_view kPrefix = "uid/";
  if (key.size() != kPrefix.size() + 5 || !key.starts_with(kPrefix)) return std::nullopt;
  std::uint16_t uid = 0;
  const char* end = key.data() + key.size();
  auto [p, ec] = std::from_chars(key.data() + kPrefix.size(), end, uid);
  if (ec != std::errc() || p != end) return std::nullopt;
  return uid;
}
std::string window_prefix(std::uint64_t window) { return fmt::format("w/{:012}/", window); }
std::string window_summary_key(std::uint64_t window) { return window_prefix(window) + "summary"; }
std::string window_uid_key(std::uint64_t window, std::uint16_t uid) {
  return fmt::format("{}uid/{:05}", window_prefix(window), uid);
}
std::string history_prefix(std::uint16_t uid) { return fmt::format("u/{:05}/", uid); }
std::string history_key(std::uint16_t uid, std::uint64_t window) {
  return fmt::format("{}{:012}", history_prefix(uid), window);
}
std::string epoch_key(std::uint64_t epoch) { return fmt::format("epoch/{:012}", epoch); }
std::string progress_key(std::uint64_t window) { return fmt::format("{}{:012}", kProgressPrefix, window); }

json to_json(const MinerScore& s) {
  return {{"mu", s.rating.mu},
          {"sigma", s.rating.sigma},
          {"ordinal", s.rating.ordinal()},
          {"bma", s.bma},
          {"sync", s.sync},
          {"penalty", s.penalty},
          {"zeroed", s.zeroed},
          {"last_evaluated", s.last_evaluated ? json(*s.last_evaluated) : json(nullptr)},
          {"waiting", s.waiting},
          {"last_gradient_score", s.last_gradient_score},
          {"evidence", s.evidence},
          {"evaluations", s.evaluations},
          {"judged", s.judged},
          {"own_z_sum", s.own_z_sum},
          {"own_z_norm2", s.own_z_norm2},
          {"hotkey", s.hotkey ? json(to_hex(*s.hotkey)) : json(nullptr)},
          {"final", s.final_score}};
}

namespace {

template <typename T>
json opt_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

Result<MinerScore> score_from_json(const json& j) {
  JsonFields r(j, "score record");
  MinerScore s;
  s.rating.mu = r.get<double>("mu");
  s.rating.sigma = r.get<double>("sigma");
  s.bma = r.get<double>("bma");
  s.sync = r.get<double>("sync");
  s.penalty = r.get<double>("penalty");
  s.zeroed = r.get<bool>("zeroed");
  s.last_evaluated = r.opt<std::uint64_t>("last_evaluated");
  s.waiting = r.get<std::uint32_t>("waiting");
  s.last_gradient_score = r.get<double>("last_gradient_score");
  s.final_score = r.get<double>("final");
  s.evidence = r.get<double>("evidence");
  s.evaluations = r.get<std::uint32_t>("evaluations");
  s.judged = r.get<std::uint32_t>("judged");
  s.own_z_sum = r.get<double>("own_z_sum");
  s.own_z_norm2 = r.get<double>("own_z_norm2");
  auto hotkey = r.opt<std::string>("hotkey");
  if (!r.ok()) return r.status();
  if (hotkey) {
    auto h = from_hex_fixed<32>(*hotkey);
    if (!h.is_ok()) return data_loss("score record: field 'hotkey' is not 32 bytes of hex");
    s.hotkey = *h;
  }
  return s;
}

namespace {

json commit_json(const chain::WeightsCommit& c) {
  return {{"netuid", c.netuid},           {"uids", c.uids},        {"values", c.values}, {"salt", c.salt},
          {"version_key", c.version_key}, {"hash", to_hex(c.hash)}};
}

Result<chain::WeightsCommit> commit_from_json(const json& j) {
  JsonFields r(j, "weights commit");
  chain::WeightsCommit c;
  c.netuid = r.get<std::uint16_t>("netuid");
  c.uids = r.get<std::vector<std::uint16_t>>("uids");
  c.values = r.get<std::vector<std::uint16_t>>("values");
  c.salt = r.get<std::vector<std::uint16_t>>("salt");
  c.version_key = r.get<std::uint64_t>("version_key");
  auto hash = r.get<std::string>("hash");
  if (!r.ok()) return r.status();
  CRUCIBLE_ASSIGN_OR_RETURN(c.hash, from_hex_fixed<32>(hash));
  return c;
}

}  // namespace

json to_json(const UidResult& r) {
  json j = {{"uid", r.uid}, {"valid", r.valid}, {"uploaded", r.uploaded}, {"final", r.final_score}};
  if (r.rejection) {
    j["reason"] = protocol::name(*r.rejection);
    j["detail"] = r.detail;
  }
  if (r.seen_ms) j["seen_ms"] = *r.seen_ms;
  if (r.eval) {
    const EvalResult& e = *r.eval;
    j["loss_before_own"] = e.loss_before_own;
    j["loss_after_own"] = e.loss_after_own;
    j["loss_before_rand"] = e.loss_before_rand;
    j["loss_after_rand"] = e.loss_after_rand;
    j["gradient_score"] = e.gradient_score;
    j["binary"] = e.binary;
    j["steps_behind"] = e.steps_behind;
    if (e.align_own) j["align_own"] = *e.align_own;
    if (e.align_rand) j["align_rand"] = *e.align_rand;
    if (e.own_z) j["own_z"] = *e.own_z;
    if (e.norm_ratio) j["norm_ratio"] = *e.norm_ratio;
  }
  return j;
}

Result<UidResult> uid_result_from_json(const json& j) {
  JsonFields rd(j, "window result");
  UidResult r;
  r.uid = rd.get<std::uint16_t>("uid");
  r.valid = rd.get<bool>("valid");
  r.uploaded = rd.get<bool>("uploaded");
  r.final_score = rd.get<double>("final");
  if (auto reason = rd.opt<std::string>("reason")) {
    r.rejection = protocol::rejection_from_name(*reason);
    if (!r.rejection) return data_loss("window result: unknown reason '{}'", *reason);
    r.detail = rd.opt<std::string>("detail").value_or("");
  }
  r.seen_ms = rd.opt<std::int64_t>("seen_ms");
  if (rd.has("gradient_score")) {
    EvalResult e;
    e.loss_before_own = rd.get<double>("loss_before_own");
    e.loss_after_own = rd.get<double>("loss_after_own");
    e.loss_before_rand = rd.get<double>("loss_before_rand");
    e.loss_after_rand = rd.get<double>("loss_after_rand");
    e.gradient_score = rd.get<double>("gradient_score");
    e.binary = rd.get<int>("binary");
    e.steps_behind = rd.get<double>("steps_behind");
    e.align_own = rd.opt<double>("align_own");
    e.align_rand = rd.opt<double>("align_rand");
    e.own_z = rd.opt<double>("own_z");
    e.norm_ratio = rd.opt<double>("norm_ratio");
    r.eval = e;
  }
  if (!rd.ok()) return rd.status();
  return r;
}

json to_json(const WindowSummary& s) {
  json j = {{"window", s.window},
            {"lead", s.lead},
            {"evaluated", s.evaluated},
            {"random_uid", s.random_uid},
            {"loss_before_rand", s.loss_before_rand},
            {"median_norm", s.median_norm},
            {"bytes_received", s.bytes_received}};
  if (s.aggregate) {
    j["aggregate"] = *s.aggregate;
    j["aggregate_prev"] = opt_json(s.aggregate_prev);
  }
  return j;
}

Result<WindowSummary> window_summary_from_json(const json& j) {
  JsonFields r(j, "window summary");
  WindowSummary s;
  s.window = r.get<std::uint64_t>("window");
  s.lead = r.get<bool>("lead");
  s.evaluated = r.get<std::vector<std::uint16_t>>("evaluated");
  s.random_uid = r.get<std::uint16_t>("random_uid");
  s.loss_before_rand = r.get<double>("loss_before_rand");
  s.median_norm = r.get<double>("median_norm");
  s.aggregate = r.opt<std::vector<std::uint16_t>>("aggregate");
  s.aggregate_prev = r.opt<std::uint64_t>("aggregate_prev");
  s.bytes_received = r.opt<std::uint64_t>("bytes_received").value_or(0);
  if (!r.ok()) return r.status();
  return s;
}

json to_json(const ProgressRecord& p) {
  return {{"window", p.window},
          {"heldout_loss", opt_json(p.heldout_loss)},
          {"heldout_samples", p.heldout_samples},
          {"tokens_aggregated", p.tokens_aggregated},
          {"bytes_received", p.bytes_received},
          {"aggregate", p.aggregate}};
}

Result<ProgressRecord> progress_from_json(const json& j) {
  JsonFields r(j, "progress record");
  ProgressRecord p;
  p.window = r.get<std::uint64_t>("window");
  p.heldout_loss = r.opt<double>("heldout_loss");
  p.heldout_samples = r.get<std::uint64_t>("heldout_samples");
  p.tokens_aggregated = r.get<std::uint64_t>("tokens_aggregated");
  p.bytes_received = r.get<std::uint64_t>("bytes_received");
  p.aggregate = r.get<std::vector<std::uint16_t>>("aggregate");
  if (!r.ok()) return r.status();
  return p;
}

std::string_view name(WeightsPhase p) noexcept {
  switch (p) {
    case WeightsPhase::kPending:
      return "pending";
    case WeightsPhase::kCommitting:
      return "committing";
    case WeightsPhase::kCommitted:
      return "committed";
    case WeightsPhase::kConfirmed:
      return "confirmed";
    case WeightsPhase::kFailed:
      return "failed";
    case WeightsPhase::kExpired:
      return "expired";
  }
  return "unknown";
}

json to_json(const WeightsLogEntry& e) {
  json j = {
      {"epoch", e.epoch}, {"window", e.window}, {"uids", e.uids}, {"values", e.values}, {"status", name(e.phase)}};
  if (e.block_before) j["block_before"] = *e.block_before;
  if (e.commit) j["commit"] = commit_json(*e.commit);
  if (e.commit_tx) j["commit_tx"] = *e.commit_tx;
  if (e.commit_epoch) j["commit_epoch"] = *e.commit_epoch;
  if (e.tx) j["tx"] = *e.tx;
  if (e.block) j["block"] = *e.block;
  if (e.error) j["error"] = *e.error;
  if (e.confirmed_after_restart) j["confirmed_after_restart"] = true;
  return j;
}

Result<WeightsLogEntry> weights_entry_from_json(const json& j) {
  JsonFields r(j, "weights log entry");
  WeightsLogEntry e;
  e.epoch = r.get<std::uint64_t>("epoch");
  e.window = r.get<std::uint64_t>("window");
  e.uids = r.get<std::vector<std::uint16_t>>("uids");
  e.values = r.get<std::vector<std::uint16_t>>("values");
  const auto status = r.get<std::string>("status");
  e.block_before = r.opt<std::uint64_t>("block_before");
  e.commit_tx = r.opt<std::string>("commit_tx");
  e.commit_epoch = r.opt<std::uint64_t>("commit_epoch");
  e.tx = r.opt<std::string>("tx");
  e.block = r.opt<std::uint64_t>("block");
  e.error = r.opt<std::string>("error");
  e.confirmed_after_restart = r.opt<bool>("confirmed_after_restart").value_or(false);
  if (!r.ok()) return r.status();
  bool known = false;
  for (auto p : {WeightsPhase::kPending, WeightsPhase::kCommitting, WeightsPhase::kCommitted, WeightsPhase::kConfirmed,
                 WeightsPhase::kFailed, WeightsPhase::kExpired}) {
    if (name(p) == status) {
      e.phase = p;
      known = true;
    }
  }
  if (!known) return data_loss("weights log entry: unknown status '{}'", status);
  if (r.has("commit")) {
    CRUCIBLE_ASSIGN_OR_RETURN(e.commit, commit_from_json(j["commit"]));
  }
  if ((e.phase == WeightsPhase::kCommitting || e.phase == WeightsPhase::kCommitted) && !e.commit) {
    return data_loss("weights log entry: status '{}' without its commit", status);
  }
  return e;
}

}  // namespace crucible::validator
