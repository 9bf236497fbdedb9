// Gauntlet scoring (protocol.md §6): from one window's evaluations to every
// uid's rating, binary moving average, sync score, penalties, final score
// and weights. Pure: no I/O, no clock, no torch; the same inputs give the
// same scores on every validator.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crucible/kernels/error_feedback.h"
#include "crucible/protocol/options.h"
#include "crucible/validator/openskill.h"

namespace crucible::validator {

// The parameters are network-wide: [protocol] keys (protocol/options.h).
using protocol::ScoringParams;
OpenSkillParams openskill_params(const ScoringParams& p);

// One uid's evaluation in a window. An invalid one (bad packet, NaN, copy,
// wrong data ...) carries its reason; its losses are unused.
struct Evaluation {
  std::uint16_t uid = 0;
  bool valid = false;
  std::string reason;  // why not valid
  double loss_before_own = 0, loss_after_own = 0;
  double loss_before_rand = 0, loss_after_rand = 0;
  // The gradient check (protocol.md §6), when it ran: the cosine of the
  // update with the loss gradient at the window's model on the uid's own
  // samples, and on the random samples (NaN when it did not run); whether
  // binary counts it (validator.gradient_check = require).
  double align_own = std::numeric_limits<double>::quiet_NaN();
  double align_rand = std::numeric_limits<double>::quiet_NaN();
  bool align_required = false;
  // The margins the passes need (ScoringParams' own_data_margin, gradient_margin).
  double own_margin = 0, align_margin = 0;
  // The own-data gain's z over the random-data gain, from the losses of
  // each sample (own_data_z below; NaN when not measured), and the z the
  // pass needs (ScoringParams' own_data_z).
  double own_z = std::numeric_limits<double>::quiet_NaN();
  double z_min = 0;
  // The update's norm over the window's median norm of admitted uids (0
  // while no uid is admitted: nothing to compare with, nothing discounted).
  double norm_ratio = 0;
};

// The share of an evaluation's gain that counts toward evidence: 1 up to
// max_norm_ratio times the admitted median, max_norm_ratio / norm_ratio
// beyond (protocol.md §6).
double norm_fit(const Evaluation& e, const ScoringParams& p);
// The gradient score that counts toward evidence: a gain times norm_fit; a
// loss in full (discounting it would pay for scaling a harmful update up).
double credited_score(const Evaluation& e, const ScoringParams& p);

// How far an update's gain on the uid's own samples stands above its gain on
// the random samples, in units of the sampling noise of that difference
// (protocol.md §6): each sample's gain is its loss drop over its set's mean
// loss before (so the means are the gains binary compares), and
//   z = (mean_own - mean_rand) / (s * sqrt(1/n_own + 1/n_rand))
// with s the pooled standard deviation of the gains within each set. An
// update not trained on the uid's samples draws z from about N(0, 1)
// whatever its size; NaN with fewer than two samples a side, sizes that
// differ before and after, a non-positive mean loss, or no spread at all.
double own_data_z(std::span<const double> before_own, std::span<const double> after_own,
                  std::span<const double> before_rand, std::span<const double> after_rand);

// (before_rand - after_rand) / before_rand: the improvement on data the
// miner could not have chosen.
double gradient_score(const Evaluation& e);
// +1 when the relative improvement on the uid's own data beats the one on
// random data by own_margin of the latter (it trained on what it was
// assigned) and, where the gradient check ran, the update's cosine with the
// gradient on its own samples beats the one with the gradient on random
// samples by align_margin of the latter (when align_required), and, where
// own_z was measured, own_z > z_min; else -1.
int binary_indicator(const Evaluation& e);
// What one evaluation adds to a uid's accumulated own-data z (trust): its
// own_z within ±kTrustZCap (one memorised window cannot buy trust for many
// after it), at most 0 when binary's other checks fail (the own gain beats
// the random one by own_margin; the gradient check, when required); NaN
// when invalid or not measured (it adds nothing).
inline constexpr double kTrustZCap = 4.0;
double trust_z_of(const Evaluation& e);
// max(0, 1 - min(x, cap) / cap)^power for x windows behind.
double sync_score(double steps_behind, const ScoringParams& p);

struct MinerScore {
  Rating rating;
  double bma = 0;
  double sync = 1;
  double penalty = 1;   // missing_penalty ^ consecutive windows without a valid upload
  bool zeroed = false;  // invalid in its last evaluated window: final 0 until evaluated valid again
  std::optional<std::uint64_t> last_evaluated;
  std::uint32_t waiting = 1;  // windows since last evaluated (for fair sampling)
  double last_gradient_score = 0;
  double final_score = 0;
  double evidence = 0;            // moving average of gradient score / its window's best
  std::uint32_t evaluations = 0;  // valid evaluations so far
  std::uint32_t judged = 0;       // binary indicators folded into the BMA so far
  double own_z_sum = 0;           // Σ trust_decay^k z_k over its measured evaluations, newest k = 0 (trust_z_of)
  double own_z_norm2 = 0;         // Σ trust_decay^2k: the sum's variance when every z_k is N(0, 1)
  std::optional<std::array<std::uint8_t, 32>> hotkey;  // whose record this is
};

// A score belongs to a (uid, hotkey) pair: a uid now held by another hotkey
// (deregistered, then registered by someone else) starts afresh, so a new
// owner never inherits the previous one's rating. Records without a hotkey
// take the current one. Returns the uids whose score was reset.
std::vector<std::uint16_t> bind_hotkeys(std::map<std::uint16_t, MinerScore>& scores,
                                        const std::map<std::uint16_t, std::array<std::uint8_t, 32>>& hotkeys);

// Whether a uid may join an aggregation set: evaluated valid at least once,
// valid in its last evaluation, in sync (sync >= admit_sync: an update made
// on another model is not merged), and evidence >= admit_ratio, where evidence
// is the moving average of its gradient score relative to the best of each
// window it was evaluated in. Evidence, not rank: honest uids that differ by
// measurement noise all stay in; zero and useless updates stay out.
bool admitted(const MinerScore& s, const ScoringParams& p);

// The own-data z's of a uid's evaluations, accumulated (a recency-weighted
// Stouffer sum): Z = own_z_sum / sqrt(own_z_norm2). For a uid that does not
// train on its own samples each z is about N(0, 1), and so is Z, however
// many evaluations; for one that does, Z grows with every evaluation (about
// mean z × sqrt(evaluations), up to mean z × 4.4 with trust_decay 0.9). NaN
// before any measured z.
double accumulated_own_z(const MinerScore& s);

// Whether the uid trains on its own samples, in [0, 1]: clamp((Z -
// trust_z) / trust_z_span, 0, 1) with Z = accumulated_own_z. Where no z was
// ever measured (eval_batches below 2), the BMA with its start-up bias taken
// out: max(0, BMA) / (1 - (1 - bma_alpha)^judged); 0 before any indicator.
double trust(const MinerScore& s, const ScoringParams& p);

struct WindowInput {
  std::uint64_t window = 0;
  std::vector<Evaluation> evaluations;           // the uids evaluated this window
  std::vector<std::uint16_t> uploaded;           // uids with a valid upload (evaluated or not)
  std::vector<std::uint16_t> candidates;         // every uid that could have uploaded (miners)
  std::map<std::uint16_t, double> steps_behind;  // from fingerprints, where known
};

// Updates `scores` in place: rank the evaluated uids by gradient score,
// scores within rank_tie of their group's best sharing its rank (invalid
// ones tie for last), and rate them; evidence for set admission; BMA from the binary indicator;
// sync; penalties for candidates without a valid upload; the final score
//   final = ordinal * max(0, BMA) * sync * penalty  (0 when zeroed, and
// before min_evaluations evaluated windows),
// and waiting counters.
void score_window(std::map<std::uint16_t, MinerScore>& scores, const WindowInput& input, const ScoringParams& p);

// Normalised weights ∝ max(0, final)^power (all zero when no score is positive).
std::map<std::uint16_t, double> weights(const std::map<std::uint16_t, MinerScore>& scores, const ScoringParams& p);
// For the chain: the largest weight becomes 65535, others in proportion
// (rounded); zero weights are left out.
std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>> quantize_weights(
    const std::map<std::uint16_t, double>& w);

// Which uids to evaluate: up to `count` of the candidates, waiting time
// deciding (MinerScore::waiting: windows since its last evaluation, or since
// it first uploaded). First every uid that has waited a whole round
// (ceil(candidates / count) windows), the longest first; then newcomers
// (never evaluated valid), at most `newcomers` of them, so that a new uid
// gets a first evaluation soon; then everyone else by waiting. Ties go in
// a random order (SplitMix64, seeded by `seed`: the validator's private
// seed mixed with the window). Every candidate so is evaluated within about
// a round and two windows, and a swarm of fresh uids takes at most
// `newcomers` slots ahead of uids that have waited longer. The uids come in
// that order, the most urgent first: when the window's time for evaluations
// runs out (validator.eval_window_share), the ones left are the least
// urgent, and they wait longer for next time.
std::vector<std::uint16_t> choose_for_evaluation(const std::vector<std::uint16_t>& candidates,
                                                 const std::map<std::uint16_t, MinerScore>& scores, std::size_t count,
                                                 std::size_t newcomers, std::uint64_t seed);

// Mean over tensors of |I_a ∩ I_b| / |I_a| of the kept indices, block by
// block (same layouts): how much of b's choice a repeats. 0 for other layouts.
double index_overlap(const std::vector<kernels::CompressedTensor>& a, const std::vector<kernels::CompressedTensor>& b);
// A bottom-k summary of an update's kept positions (tensor, block, index),
// hashed with `seed` (the validator's for the window, so a copier cannot
// know which positions count): the kIndexSignature smallest hashes. Two
// summaries estimate the overlap of the full index sets (error about
// 1/sqrt(kIndexSignature)) at a cost per pair that does not grow with the
// model; building one reads each kept position once.
inline constexpr std::size_t kIndexSignature = 512;
struct IndexSignature {
  std::vector<std::uint64_t> hashes;  // ascending, at most kIndexSignature
  std::uint64_t kept = 0;             // positions summarised
};
IndexSignature index_signature(const std::vector<kernels::CompressedTensor>& update, std::uint64_t seed);
// Estimated |I_a ∩ I_b| / |I_a| over all tensors (the sets being of equal
// size for one model): 2J / (1 + J), J the Jaccard estimate. 0 when either is empty.
double index_overlap(const IndexSignature& a, const IndexSignature& b);

}  // namespace crucible::validator
