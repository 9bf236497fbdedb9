// Evaluation (protocol.md §6): for a sample of the valid uploads, the loss
// on the uid's own data and on random data before and after applying its
// update (at the median norm), on the validator's model of w.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/common/sampler.h"
#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/backend_codec.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

using protocol::Rejection;

namespace {

// Tokens of the first `count` samples of `who`'s assignment in window w.
Result<std::vector<std::int64_t>> tokens_of(std::uint16_t who, std::uint64_t w, std::uint64_t count,
                                            WindowContext& cx) {
  const auto L = static_cast<std::uint64_t>(cx.o.model.seq_len);
  CRUCIBLE_ASSIGN_OR_RETURN(auto idx, cx.dataset.assignment(who, w, cx.o.protocol.samples_per_window, L));
  idx.resize(std::min<std::size_t>(idx.size(), count));
  return cx.dataset.tokens(idx, L);
}

// A uid's own samples for its evaluation: `count` of its whole assignment,
// drawn with the validator's private seed, so that a miner cannot know
// which of its samples will be checked (protocol.md §6).
Result<std::vector<std::int64_t>> own_tokens_of(std::uint16_t who, std::uint64_t w, std::uint64_t count,
                                                WindowContext& cx) {
  const auto L = static_cast<std::uint64_t>(cx.o.model.seq_len);
  CRUCIBLE_ASSIGN_OR_RETURN(auto idx, cx.dataset.assignment(who, w, cx.o.protocol.samples_per_window, L));
  SplitMix64 rng(cx.private_seed ^ (w * kWindowSeedMixer) ^ (static_cast<std::uint64_t>(who) << 40) ^ kOwnDataSalt);
  count = std::min<std::uint64_t>(count, idx.size());
  for (std::uint64_t i = 0; i < count; ++i) std::swap(idx[i], idx[i + rng.below(idx.size() - i)]);
  idx.resize(count);
  return cx.dataset.tokens(idx, L);
}

std::int64_t samples_in(const std::vector<std::int64_t>& tokens, WindowContext& cx) {
  return static_cast<std::int64_t>(tokens.size() / static_cast<std::size_t>(cx.o.model.seq_len));
}

// An upload's update, dense: read back from its spooled packet.
Result<model::TensorValues> dense(std::uint64_t w, const Upload& u, WindowContext& cx) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto tensors, spooled_update(w, u.uid, cx));
  model::TensorValues d(tensors.size());
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    d[t].assign(static_cast<std::size_t>(cx.replica.specs()[t].numel()), 0.0f);
    CRUCIBLE_RETURN_IF_ERROR(kernels::decompress(cx.codec, tensors[t], d[t]));
  }
  return d;
}

// The cosine of two updates over all their tensors (0 when either is zero).
double cosine(const model::TensorValues& a, const model::TensorValues& b) {
  double dot = 0, na = 0, nb = 0;
  for (std::size_t t = 0; t < a.size() && t < b.size(); ++t) {
    for (std::size_t i = 0; i < a[t].size() && i < b[t].size(); ++i) {
      dot += double(a[t][i]) * b[t][i];
      na += double(a[t][i]) * a[t][i];
      nb += double(b[t][i]) * b[t][i];
    }
  }
  return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0.0;
}

// The window's evaluation norm: the median of the valid updates' norms from
// admitted uids (all valid updates while none is admitted). Zero updates
// (free riders) never set it: a swarm of them would make it zero.
struct NormBasis {
  double median = 0;
  bool any_admitted = false;
  double outer_lr = 0;  // of the step this window's set will take (protocol::OuterLr)
};

NormBasis norm_basis(const std::vector<Upload>& uploads, const ValidatorState& st, WindowContext& cx) {
  std::vector<double> all_norms, admitted_norms;
  for (const auto& u : uploads) {
    if (!u.valid()) continue;
    all_norms.push_back(u.norm);
    auto it = st.scores.find(u.uid);
    if (it != st.scores.end() && admitted(it->second, cx.o.protocol.scoring)) admitted_norms.push_back(u.norm);
  }
  std::erase(all_norms, 0.0);
  std::erase(admitted_norms, 0.0);
  const auto& basis = admitted_norms.empty() ? all_norms : admitted_norms;
  return {basis.empty() ? 0 : kernels::median_of(basis), !admitted_norms.empty(),
          cx.o.protocol.outer().at(st.model.global_step)};
}

// The window's random samples, their losses and (with the gradient check)
// the loss gradient on them at the model of w: the same for every uid.
struct RandomBatch {
  std::uint16_t uid = 0;  // the pool uid whose assignment they are
  std::vector<std::int64_t> tokens;
  std::int64_t n = 0;
  std::vector<double> before;  // per sample; empty when nobody is evaluated
  model::TensorValues gradient;
};

Result<RandomBatch> random_batch(std::uint64_t w, std::uint64_t seed, bool anyone, bool gradient_check,
                                 WindowContext& cx) {
  RandomBatch r;
  r.uid = static_cast<std::uint16_t>(kRandomPoolUidBase + SplitMix64(seed).next() % kRandomPoolUidSpan);
  CRUCIBLE_ASSIGN_OR_RETURN(r.tokens, tokens_of(r.uid, w, cx.o.validator.eval_batches, cx));
  r.n = samples_in(r.tokens, cx);
  if (!anyone) return r;
  CRUCIBLE_ASSIGN_OR_RETURN(r.before, cx.replica.sample_losses(r.tokens, r.n));
  if (gradient_check) {
    CRUCIBLE_ASSIGN_OR_RETURN(r.gradient, cx.replica.gradient(r.tokens, r.n));
  }
  return r;
}

// One uid's update as a probe for evaluation: the samples it is checked
// on and the scale that brings it to the window's norm.
struct Probe {
  const model::TensorValues& update;
  double scale = 0;
  const RandomBatch& rand;
};

// The decoy diagnostic (validator.measure_decoy, logged only): the gain and
// the alignment this update shows on another evaluated uid's own samples,
// i.e. had it been trained on data other than the uid's.
struct Decoy {
  double gain = std::nan(""), z = std::nan(""), align = std::nan("");
};

Result<Decoy> measure_decoy(std::uint64_t w, std::uint16_t other, const Probe& p, bool gradient_check,
                            WindowContext& cx) {
  Decoy d;
  CRUCIBLE_ASSIGN_OR_RETURN(auto decoy, own_tokens_of(other, w, cx.o.validator.eval_batches, cx));
  const auto n_decoy = samples_in(decoy, cx);
  CRUCIBLE_ASSIGN_OR_RETURN(auto before_decoy, cx.replica.sample_losses(decoy, n_decoy));
  auto after_decoy = cx.replica.probe_samples(p.update, p.scale, decoy, n_decoy, p.rand.tokens, p.rand.n);
  if (after_decoy.is_ok()) {
    const double before = model::mean_loss(before_decoy);
    d.gain = (before - model::mean_loss(after_decoy->first)) / before;
    d.z = own_data_z(before_decoy, after_decoy->first, p.rand.before, after_decoy->second);
  }
  if (gradient_check) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto decoy_gradient, cx.replica.gradient(decoy, n_decoy));
    d.align = cosine(p.update, decoy_gradient);
  }
  return d;
}

// The losses (and alignments) of one update on its uid's own samples and on
// the random ones, before and after applying it at the window's norm; an
// update that cannot be applied, or makes a loss non-finite, is rejected.
// Nothing (nullopt) when its packet cannot be decoded: rejected, not evaluated.
Result<std::optional<Evaluation>> evaluate_one(std::uint64_t w, Upload& u, const std::vector<std::uint16_t>& chosen,
                                               const NormBasis& nb, const RandomBatch& rand, WindowContext& cx) {
  const std::uint16_t who = u.uid;
  auto decoded = dense(w, u, cx);  // the update under evaluation, dense
  if (!decoded.is_ok()) {
    u.reject(Rejection::kEvaluationFailed, decoded.status().to_string());
    return std::optional<Evaluation>();
  }
  const model::TensorValues& update = *decoded;
  CRUCIBLE_ASSIGN_OR_RETURN(auto own, own_tokens_of(who, w, cx.o.validator.eval_batches, cx));
  const auto n_own = samples_in(own, cx);
  CRUCIBLE_ASSIGN_OR_RETURN(auto before_own, cx.replica.sample_losses(own, n_own));
  const double to_median = u.norm > 0 ? nb.median / u.norm : 0.0;  // a zero update stays zero
  const double scale = nb.outer_lr * cx.o.validator.eval_lr_factor * to_median;
  auto after = cx.replica.probe_samples(update, scale, own, n_own, rand.tokens, rand.n);
  metrics::global().add(metrics::Counter::kEvaluations);
  Evaluation e{who, true, "", model::mean_loss(before_own), 0, model::mean_loss(rand.before), 0};
  e.own_margin = cx.o.protocol.scoring.own_data_margin;
  e.align_margin = cx.o.protocol.scoring.gradient_margin;
  e.z_min = cx.o.protocol.scoring.own_data_z;
  if (nb.any_admitted && nb.median > 0) e.norm_ratio = u.norm / nb.median;
  const double after_own = after.is_ok() ? model::mean_loss(after->first) : 0;
  const double after_rand = after.is_ok() ? model::mean_loss(after->second) : 0;
  if (!after.is_ok()) {
    e.valid = false;
    e.reason = protocol::name(Rejection::kEvaluationFailed);
    u.reject(Rejection::kEvaluationFailed, after.status().to_string());
    return std::optional<Evaluation>(std::move(e));
  }
  if (!std::isfinite(after_own) || !std::isfinite(after_rand)) {
    e.valid = false;
    e.reason = protocol::name(Rejection::kNonFinite);
    u.reject(Rejection::kNonFinite, "the update makes the loss non-finite");
    return std::optional<Evaluation>(std::move(e));
  }
  e.loss_after_own = after_own;
  e.loss_after_rand = after_rand;
  e.own_z = own_data_z(before_own, after->first, rand.before, after->second);
  // The gradient check: a miner that trained on its assigned samples moved
  // the model along the loss gradient on them more than along the one on
  // random samples; an update trained on other data, or made up, does not.
  const bool gradient_check = cx.o.validator.gradient_check != "off";
  if (gradient_check) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto own_gradient, cx.replica.gradient(own, n_own));
    e.align_own = cosine(update, own_gradient);
    e.align_rand = cosine(update, rand.gradient);
    e.align_required = cx.o.validator.gradient_check == "require";
  }
  Decoy decoy;
  if (cx.o.validator.measure_decoy && chosen.size() > 1) {
    const auto at = std::find(chosen.begin(), chosen.end(), who) - chosen.begin();
    const std::uint16_t other = chosen[static_cast<std::size_t>(at + 1) % chosen.size()];
    CRUCIBLE_ASSIGN_OR_RETURN(decoy, measure_decoy(w, other, Probe{update, scale, rand}, gradient_check, cx));
  }
  log::info("evaluated", {{"window", w},
                          {"uid", who},
                          {"own_gain", (e.loss_before_own - e.loss_after_own) / e.loss_before_own},
                          {"random_gain", (e.loss_before_rand - e.loss_after_rand) / e.loss_before_rand},
                          {"decoy_gain", decoy.gain},
                          {"own_z", e.own_z},
                          {"norm_ratio", e.norm_ratio},
                          {"decoy_z", decoy.z},
                          {"align_own", e.align_own},
                          {"align_random", e.align_rand},
                          {"align_decoy", decoy.align},
                          {"binary", binary_indicator(e)}});
  return std::optional<Evaluation>(std::move(e));
}

}  // namespace

Result<Evaluated> evaluate(std::uint64_t w, std::vector<Upload>& uploads, const ValidatorState& st, WindowContext& cx,
                           double deadline) {
  Evaluated out;
  WindowInput& in = out.input;
  in.window = w;
  std::vector<std::uint16_t> valid;
  std::map<std::uint16_t, Upload*> by_uid;
  for (auto& u : uploads) {
    in.candidates.push_back(u.uid);
    if (u.valid()) {
      valid.push_back(u.uid);
      in.uploaded.push_back(u.uid);
      by_uid[u.uid] = &u;
    } else if (u.uploaded && u.rejection && protocol::ranks_last(*u.rejection)) {
      in.evaluations.push_back(Evaluation{u.uid, false, std::string(protocol::name(*u.rejection)), 0, 0, 0, 0});
    }
  }
  const std::uint64_t seed = window_seed(cx.private_seed, w);
  const auto chosen =
      choose_for_evaluation(valid, st.scores, cx.o.validator.eval_per_window, cx.o.validator.eval_newcomers, seed);
  // Every update is evaluated at one norm (norm_basis): only its direction
  // counts, so scaling an update by any k > 0 changes nothing it is scored
  // on (docs/protocol.md §6), and newcomers never decide the norm. Norms
  // come from the compressed form; only an update under evaluation is
  // decoded, one at a time (a dense update is the model's size).
  const NormBasis nb = norm_basis(uploads, st, cx);
  CRUCIBLE_ASSIGN_OR_RETURN(const RandomBatch rand,
                            random_batch(w, seed, !chosen.empty(), cx.o.validator.gradient_check != "off", cx));
  // The most urgent first (choose_for_evaluation): past the deadline, the
  // uids left are the least urgent, and they wait longer for next window.
  std::vector<std::uint16_t> evaluated;
  for (std::uint16_t who : chosen) {
    if (!evaluated.empty() && cx.io.clock->unix_seconds() >= deadline) {
      log::warn("evaluation: the window's time for evaluations is spent; the uids left go first next window",
                {{"window", w},
                 {"evaluated", evaluated.size()},
                 {"chosen", chosen.size()},
                 {"eval_window_share", cx.o.validator.eval_window_share}});
      break;
    }
    CRUCIBLE_ASSIGN_OR_RETURN(auto e, evaluate_one(w, *by_uid.at(who), chosen, nb, rand, cx));
    evaluated.push_back(who);
    if (e) in.evaluations.push_back(std::move(*e));
  }
  std::sort(evaluated.begin(), evaluated.end());
  out.summary.window = w;
  out.summary.evaluated = std::move(evaluated);
  out.summary.random_uid = rand.uid;
  out.summary.loss_before_rand = model::mean_loss(rand.before);
  out.summary.median_norm = nb.median;
  return out;
}

}  // namespace crucible::validator
