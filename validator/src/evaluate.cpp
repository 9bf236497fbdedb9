// Evaluation (protocol.md §6): for a sample of the valid uploads, the loss
// on the uid's own data and on random data before and after applying its
// update (at the median norm), on the validator's model of w.
#include <algorithm>
#include <cmath>

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
    CRUCIBLE_RETURN_IF_ERROR(cx.codec != nullptr ? kernels::decompress(*cx.codec, tensors[t], d[t])
                                                 : kernels::decompress(tensors[t], d[t]));
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

}  // namespace

Result<Evaluated> evaluate(std::uint64_t w, std::vector<Upload>& uploads, const ValidatorState& st, WindowContext& cx) {
  Evaluated out;
  WindowInput& in = out.input;
  in.window = w;
  std::vector<std::uint16_t> valid;
  for (const auto& u : uploads) {
    in.candidates.push_back(u.uid);
    if (u.valid()) {
      valid.push_back(u.uid);
      in.uploaded.push_back(u.uid);
    } else if (u.uploaded && u.rejection && protocol::ranks_last(*u.rejection)) {
      in.evaluations.push_back(Evaluation{u.uid, false, std::string(protocol::name(*u.rejection)), 0, 0, 0, 0});
    }
  }
  const std::uint64_t seed = window_seed(cx.private_seed, w);
  const auto chosen =
      choose_for_evaluation(valid, st.scores, cx.o.validator.eval_per_window, cx.o.validator.eval_newcomers, seed);
  // Every update is evaluated at one norm, the median of the window's valid
  // updates from admitted uids (all valid updates while none is admitted):
  // only its direction counts, so scaling an update by any k > 0 changes
  // nothing it is scored on (docs/protocol.md §6), and newcomers never
  // decide the norm.
  // Norms come from the compressed form; only an update under evaluation is
  // decoded, one at a time (a dense update is the model's size).
  std::map<std::uint16_t, Upload*> by_uid;
  std::vector<double> all_norms, admitted_norms;
  for (auto& u : uploads) {
    if (!u.valid()) continue;
    by_uid[u.uid] = &u;
    all_norms.push_back(u.norm);
    auto it = st.scores.find(u.uid);
    if (it != st.scores.end() && admitted(it->second, cx.o.protocol.scoring)) admitted_norms.push_back(u.norm);
  }
  // Zero updates (free riders) never set the norm: a swarm of them would make it zero.
  std::erase(all_norms, 0.0);
  std::erase(admitted_norms, 0.0);
  const auto& basis = admitted_norms.empty() ? all_norms : admitted_norms;
  const double median = basis.empty() ? 0 : kernels::median_of(basis);
  const auto rand_uid = static_cast<std::uint16_t>(kRandomPoolUidBase + SplitMix64(seed).next() % kRandomPoolUidSpan);
  CRUCIBLE_ASSIGN_OR_RETURN(auto rand_tokens, tokens_of(rand_uid, w, cx.o.validator.eval_batches, cx));
  const auto n_rand = samples_in(rand_tokens, cx);
  std::vector<double> before_rand;  // per sample
  if (!chosen.empty()) {
    CRUCIBLE_ASSIGN_OR_RETURN(before_rand, cx.replica.sample_losses(rand_tokens, n_rand));
  }
  // The gradient check: a miner that trained on its assigned samples moved
  // the model along the loss gradient on them more than along the one on
  // random samples; an update trained on other data, or made up, does not.
  const bool gradient_check = cx.o.validator.gradient_check != "off";
  const bool require_alignment = cx.o.validator.gradient_check == "require";
  model::TensorValues rand_gradient;
  if (gradient_check && !chosen.empty()) {
    CRUCIBLE_ASSIGN_OR_RETURN(rand_gradient, cx.replica.gradient(rand_tokens, n_rand));
  }
  for (std::uint16_t who : chosen) {
    auto decoded = dense(w, *by_uid.at(who), cx);  // the update under evaluation, dense
    if (!decoded.is_ok()) {
      by_uid.at(who)->reject(Rejection::kEvaluationFailed, decoded.status().to_string());
      continue;
    }
    const model::TensorValues& update = *decoded;
    CRUCIBLE_ASSIGN_OR_RETURN(auto own, own_tokens_of(who, w, cx.o.validator.eval_batches, cx));
    const auto n_own = samples_in(own, cx);
    CRUCIBLE_ASSIGN_OR_RETURN(auto before_own, cx.replica.sample_losses(own, n_own));
    const double norm = by_uid.at(who)->norm;
    const double to_median = norm > 0 ? median / norm : 0.0;  // a zero update stays zero
    const double scale = cx.o.protocol.outer_lr * cx.o.validator.eval_lr_factor * to_median;
    auto after = cx.replica.probe_samples(update, scale, own, n_own, rand_tokens, n_rand);
    metrics::global().add(metrics::Counter::kEvaluations);
    Evaluation e{who, true, "", model::mean_loss(before_own), 0, model::mean_loss(before_rand), 0};
    e.own_margin = cx.o.protocol.scoring.own_data_margin;
    e.align_margin = cx.o.protocol.scoring.gradient_margin;
    e.z_min = cx.o.protocol.scoring.own_data_z;
    if (!admitted_norms.empty() && median > 0) e.norm_ratio = norm / median;
    const double after_own = after.is_ok() ? model::mean_loss(after->first) : 0;
    const double after_rand = after.is_ok() ? model::mean_loss(after->second) : 0;
    if (!after.is_ok()) {
      e.valid = false;
      e.reason = protocol::name(Rejection::kEvaluationFailed);
      by_uid[who]->reject(Rejection::kEvaluationFailed, after.status().to_string());
    } else if (!std::isfinite(after_own) || !std::isfinite(after_rand)) {
      e.valid = false;
      e.reason = protocol::name(Rejection::kNonFinite);
      by_uid[who]->reject(Rejection::kNonFinite, "the update makes the loss non-finite");
    } else {
      e.loss_after_own = after_own;
      e.loss_after_rand = after_rand;
      e.own_z = own_data_z(before_own, after->first, before_rand, after->second);
      double align_decoy = std::nan("");
      if (gradient_check) {
        CRUCIBLE_ASSIGN_OR_RETURN(auto own_gradient, cx.replica.gradient(own, n_own));
        e.align_own = cosine(update, own_gradient);
        e.align_rand = cosine(update, rand_gradient);
        e.align_required = require_alignment;
      }
      double decoy_gain = std::nan(""), decoy_z = std::nan("");
      if (cx.o.validator.measure_decoy && chosen.size() > 1) {
        // Another evaluated uid's own samples: what this update would show
        // had it been trained on data other than the uid's.
        const auto at = std::find(chosen.begin(), chosen.end(), who) - chosen.begin();
        const std::uint16_t other = chosen[static_cast<std::size_t>(at + 1) % chosen.size()];
        CRUCIBLE_ASSIGN_OR_RETURN(auto decoy, own_tokens_of(other, w, cx.o.validator.eval_batches, cx));
        const auto n_decoy = samples_in(decoy, cx);
        CRUCIBLE_ASSIGN_OR_RETURN(auto before_decoy, cx.replica.sample_losses(decoy, n_decoy));
        auto after_decoy = cx.replica.probe_samples(update, scale, decoy, n_decoy, rand_tokens, n_rand);
        if (after_decoy.is_ok()) {
          const double before = model::mean_loss(before_decoy);
          decoy_gain = (before - model::mean_loss(after_decoy->first)) / before;
          decoy_z = own_data_z(before_decoy, after_decoy->first, before_rand, after_decoy->second);
        }
        if (gradient_check) {
          CRUCIBLE_ASSIGN_OR_RETURN(auto decoy_gradient, cx.replica.gradient(decoy, n_decoy));
          align_decoy = cosine(update, decoy_gradient);
        }
      }
      log::info("evaluated", {{"window", w},
                              {"uid", who},
                              {"own_gain", (e.loss_before_own - e.loss_after_own) / e.loss_before_own},
                              {"random_gain", (e.loss_before_rand - e.loss_after_rand) / e.loss_before_rand},
                              {"decoy_gain", decoy_gain},
                              {"own_z", e.own_z},
                              {"norm_ratio", e.norm_ratio},
                              {"decoy_z", decoy_z},
                              {"align_own", e.align_own},
                              {"align_random", e.align_rand},
                              {"align_decoy", align_decoy},
                              {"binary", binary_indicator(e)}});
    }
    in.evaluations.push_back(e);
  }
  out.summary.window = w;
  out.summary.evaluated = chosen;
  out.summary.random_uid = rand_uid;
  out.summary.loss_before_rand = model::mean_loss(before_rand);
  out.summary.median_norm = median;
  return out;
}

}  // namespace crucible::validator
