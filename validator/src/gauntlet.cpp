#include "crucible/validator/gauntlet.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "crucible/common/sampler.h"

namespace crucible::validator {

double gradient_score(const Evaluation& e) {
  if (!e.valid || !(e.loss_before_rand > 0)) return 0;
  return (e.loss_before_rand - e.loss_after_rand) / e.loss_before_rand;
}

namespace {

// binary's checks but the z test: the own-data gain beats the random one by
// its margin and, when required, the gradient check passes.
bool gain_and_alignment_pass(const Evaluation& e) {
  if (!e.valid || !(e.loss_before_own > 0) || !(e.loss_before_rand > 0)) return false;
  double own = (e.loss_before_own - e.loss_after_own) / e.loss_before_own;
  double rand = (e.loss_before_rand - e.loss_after_rand) / e.loss_before_rand;
  if (!(own > rand + e.own_margin * std::abs(rand))) return false;
  if (!e.align_required) return true;
  return e.align_own > e.align_rand + e.align_margin * std::abs(e.align_rand);  // a NaN either side fails
}

}  // namespace

int binary_indicator(const Evaluation& e) {
  if (!gain_and_alignment_pass(e)) return -1;
  return std::isnan(e.own_z) || e.own_z > e.z_min ? 1 : -1;
}

double trust_z_of(const Evaluation& e) {
  if (!e.valid || !std::isfinite(e.own_z)) return std::numeric_limits<double>::quiet_NaN();
  const double z = std::clamp(e.own_z, -kTrustZCap, kTrustZCap);
  return gain_and_alignment_pass(e) ? z : std::min(z, 0.0);
}

double own_data_z(std::span<const double> before_own, std::span<const double> after_own,
                  std::span<const double> before_rand, std::span<const double> after_rand) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Side {
    double mean = 0, ss = 0;  // of the gains; sum of squared deviations
    std::size_t n = 0;
  };
  auto side = [&](std::span<const double> before, std::span<const double> after) -> std::optional<Side> {
    if (before.size() != after.size() || before.size() < 2) return std::nullopt;
    double base = 0;
    for (double b : before) base += b;
    base /= static_cast<double>(before.size());
    if (!(base > 0)) return std::nullopt;
    Side s;
    s.n = before.size();
    std::vector<double> g(s.n);
    for (std::size_t i = 0; i < s.n; ++i) s.mean += g[i] = (before[i] - after[i]) / base;
    s.mean /= static_cast<double>(s.n);
    for (double x : g) s.ss += (x - s.mean) * (x - s.mean);
    return s;
  };
  auto own = side(before_own, after_own), rand = side(before_rand, after_rand);
  if (!own || !rand) return nan;
  const double pooled = std::sqrt((own->ss + rand->ss) / static_cast<double>(own->n + rand->n - 2));
  const double se = pooled * std::sqrt(1.0 / static_cast<double>(own->n) + 1.0 / static_cast<double>(rand->n));
  if (!(se > 0) || !std::isfinite(se)) return nan;
  return (own->mean - rand->mean) / se;
}

OpenSkillParams openskill_params(const ScoringParams& p) {
  return {p.openskill_beta, p.openskill_tau, p.openskill_kappa};
}

double sync_score(double x, const ScoringParams& p) {
  if (!std::isfinite(x) || x < 0) x = p.sync_max_steps;
  return std::pow(std::max(0.0, 1.0 - std::min(x, p.sync_max_steps) / p.sync_max_steps), p.sync_power);
}

bool admitted(const MinerScore& s, const ScoringParams& p) {
  return s.evaluations > 0 && !s.zeroed && s.evidence >= p.admit_ratio && s.sync >= p.admit_sync;
}

double accumulated_own_z(const MinerScore& s) {
  return s.own_z_norm2 > 0 ? s.own_z_sum / std::sqrt(s.own_z_norm2) : std::numeric_limits<double>::quiet_NaN();
}

double trust(const MinerScore& s, const ScoringParams& p) {
  if (const double z = accumulated_own_z(s); !std::isnan(z)) {
    return std::clamp((z - p.trust_z) / p.trust_z_span, 0.0, 1.0);
  }
  if (s.judged == 0 || !(s.bma > 0)) return 0.0;
  const double weight = 1.0 - std::pow(1.0 - p.bma_alpha, static_cast<double>(s.judged));
  return weight > 0 ? std::min(1.0, s.bma / weight) : 0.0;
}

namespace {

// 1-based ranks of `ranked` (valid first, by gradient score, higher first):
// a valid score within rank_tie of its group's best shares that rank;
// invalid ones all share the last rank.
std::vector<int> tied_ranks(const std::vector<const Evaluation*>& ranked, const ScoringParams& p) {
  std::vector<int> ranks;
  const int last_rank = static_cast<int>(ranked.size());
  double group_best = 0;
  int group_rank = 0;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (!ranked[i]->valid) {
      ranks.push_back(last_rank);
      continue;
    }
    const double g = gradient_score(*ranked[i]);
    if (i == 0 || group_best - g > p.rank_tie) {
      group_best = g;
      group_rank = static_cast<int>(i) + 1;
    }
    ranks.push_back(group_rank);
  }
  return ranks;
}

}  // namespace

double norm_fit(const Evaluation& e, const ScoringParams& p) {
  return e.norm_ratio > p.max_norm_ratio ? p.max_norm_ratio / e.norm_ratio : 1.0;
}

double credited_score(const Evaluation& e, const ScoringParams& p) {
  const double g = gradient_score(e);
  return g > 0 ? g * norm_fit(e, p) : g;
}

void score_window(std::map<std::uint16_t, MinerScore>& scores, const WindowInput& in, const ScoringParams& p) {
  // Ratings: valid evaluations by gradient score (higher first; ties by uid), invalid ones tied last.
  std::vector<const Evaluation*> ranked;
  for (const auto& e : in.evaluations) ranked.push_back(&e);
  std::stable_sort(ranked.begin(), ranked.end(), [](const Evaluation* a, const Evaluation* b) {
    if (a->valid != b->valid) return a->valid;
    if (!a->valid) return a->uid < b->uid;
    double ga = gradient_score(*a), gb = gradient_score(*b);
    return ga != gb ? ga > gb : a->uid < b->uid;
  });
  if (ranked.size() >= 2) {
    std::vector<std::vector<Rating>> teams;
    for (const Evaluation* e : ranked) teams.push_back({scores[e->uid].rating});
    auto rated = rate(teams, tied_ranks(ranked, p), openskill_params(p));
    for (std::size_t i = 0; i < ranked.size(); ++i) scores[ranked[i]->uid].rating = rated[i][0];
  }
  // Evidence: each valid gradient score relative to the best of the window
  // (0 when nothing helped), so a free rider (a zero update) or a harmless
  // but useless one (noise) stays out, honest peers that
  // differ by noise stay in, and a swarm cannot lower the bar.
  double best = 0;
  for (const auto& e : in.evaluations)
    if (e.valid) best = std::max(best, gradient_score(e));
  for (const auto& e : in.evaluations) {
    MinerScore& s = scores[e.uid];
    s.bma = (1 - p.bma_alpha) * s.bma + p.bma_alpha * binary_indicator(e);
    ++s.judged;
    if (const double z = trust_z_of(e); !std::isnan(z)) {
      s.own_z_sum = p.trust_decay * s.own_z_sum + z;
      s.own_z_norm2 = p.trust_decay * p.trust_decay * s.own_z_norm2 + 1;
    }
    s.last_gradient_score = gradient_score(e);
    if (e.valid) {
      // An update far above the median norm is measured at the median like
      // every other, and counts only in part: scaling up earns less.
      const double relative = best > 0 ? credited_score(e, p) / best : 0.0;
      s.evidence = s.evaluations == 0 ? relative : (1 - p.evidence_alpha) * s.evidence + p.evidence_alpha * relative;
      ++s.evaluations;
    }
    s.zeroed = !e.valid;
    s.last_evaluated = in.window;
    s.waiting = 1;
  }
  std::set<std::uint16_t> evaluated;
  for (const auto& e : in.evaluations) evaluated.insert(e.uid);
  std::set<std::uint16_t> uploaded(in.uploaded.begin(), in.uploaded.end());
  for (std::uint16_t uid : in.candidates) {
    MinerScore& s = scores[uid];
    if (!evaluated.count(uid)) ++s.waiting;
    s.penalty = uploaded.count(uid) ? 1.0 : s.penalty * p.missing_penalty;
  }
  for (const auto& [uid, x] : in.steps_behind) scores[uid].sync = sync_score(x, p);
  // What an update is worth (its gain at the common norm relative to the
  // window's best, averaged), times whether the uid trains on its own data,
  // keeps in sync and uploads: every factor in [0, 1], none a rank, so
  // updates equal but for measurement noise earn alike (docs/protocol.md §6).
  for (auto& [uid, s] : scores) {
    s.final_score = s.zeroed || s.evaluations < p.min_evaluations
                        ? 0.0
                        : std::max(0.0, s.evidence) * trust(s, p) * s.sync * s.penalty;
  }
}

std::vector<std::uint16_t> bind_hotkeys(std::map<std::uint16_t, MinerScore>& scores,
                                        const std::map<std::uint16_t, std::array<std::uint8_t, 32>>& hotkeys) {
  std::vector<std::uint16_t> reset;
  for (auto& [uid, s] : scores) {
    auto it = hotkeys.find(uid);
    if (it == hotkeys.end()) continue;  // not in the metagraph now: kept until it is
    if (s.hotkey && *s.hotkey != it->second) {
      s = MinerScore{};
      reset.push_back(uid);
    }
    s.hotkey = it->second;
  }
  return reset;
}

std::map<std::uint16_t, double> weights(const std::map<std::uint16_t, MinerScore>& scores, const ScoringParams& p) {
  std::map<std::uint16_t, double> w;
  double total = 0;
  for (const auto& [uid, s] : scores) {
    double v = std::pow(std::max(0.0, s.final_score), p.weight_power);
    w[uid] = v;
    total += v;
  }
  for (auto& [uid, v] : w) v = total > 0 ? v / total : 0;
  return w;
}

std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>> quantize_weights(
    const std::map<std::uint16_t, double>& w) {
  double top = 0;
  for (const auto& [uid, v] : w) top = std::max(top, v);
  std::vector<std::uint16_t> uids, values;
  if (!(top > 0)) return {uids, values};
  for (const auto& [uid, v] : w) {
    auto q = static_cast<std::uint16_t>(std::lround(v / top * 65535.0));
    if (q == 0) continue;
    uids.push_back(uid);
    values.push_back(q);
  }
  return {uids, values};
}

namespace {

bool is_newcomer(std::uint16_t uid, const std::map<std::uint16_t, MinerScore>& scores) {
  auto it = scores.find(uid);
  return it == scores.end() || it->second.evaluations == 0;
}

std::uint32_t waiting_of(std::uint16_t uid, const std::map<std::uint16_t, MinerScore>& scores) {
  auto it = scores.find(uid);
  return it == scores.end() ? 0 : it->second.waiting;
}

// Moves up to `n` uids of `pool` to `out`: the longest waiting first, ties
// in a random order.
void take_longest_waiting(std::vector<std::uint16_t>& pool, std::size_t n,
                          const std::map<std::uint16_t, MinerScore>& scores, SplitMix64& rng,
                          std::vector<std::uint16_t>& out) {
  for (std::size_t i = pool.size(); i > 1; --i) std::swap(pool[i - 1], pool[rng.below(i)]);
  std::stable_sort(pool.begin(), pool.end(),
                   [&](std::uint16_t a, std::uint16_t b) { return waiting_of(a, scores) > waiting_of(b, scores); });
  const std::size_t take = std::min(n, pool.size());
  out.insert(out.end(), pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(take));
  pool.erase(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(take));
}

}  // namespace

std::vector<std::uint16_t> choose_for_evaluation(const std::vector<std::uint16_t>& candidates,
                                                 const std::map<std::uint16_t, MinerScore>& scores, std::size_t count,
                                                 std::size_t newcomers, std::uint64_t seed) {
  std::vector<std::uint16_t> pool(candidates);
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  std::vector<std::uint16_t> out;
  if (count == 0 || pool.empty()) return out;
  SplitMix64 rng(seed);
  // 1. Overdue: every uid that has waited a whole round (the windows it
  //    takes to evaluate every candidate once), newcomers or not.
  const std::uint32_t round = static_cast<std::uint32_t>((pool.size() + count - 1) / count);
  std::vector<std::uint16_t> overdue, fresh, known;
  for (auto uid : pool) {
    if (waiting_of(uid, scores) >= round) {
      overdue.push_back(uid);
    } else {
      (is_newcomer(uid, scores) ? fresh : known).push_back(uid);
    }
  }
  take_longest_waiting(overdue, count, scores, rng, out);
  // 2. Newcomers, at most `newcomers` (a first evaluation soon); 3. every
  //    other uid, newcomer or not, by how long it has waited.
  take_longest_waiting(fresh, std::min(newcomers, count - out.size()), scores, rng, out);
  known.insert(known.end(), fresh.begin(), fresh.end());
  take_longest_waiting(known, count - out.size(), scores, rng, out);
  return out;
}

double index_overlap(const std::vector<kernels::CompressedTensor>& a, const std::vector<kernels::CompressedTensor>& b) {
  if (a.empty() || a.size() != b.size()) return 0;
  double sum = 0;
  for (std::size_t t = 0; t < a.size(); ++t) {
    const auto& x = a[t].indices;
    const auto& y = b[t].indices;
    const auto k = static_cast<std::size_t>(a[t].layout.k);
    if (x.size() != y.size() || x.empty() || k == 0 || a[t].layout.k != b[t].layout.k) return 0;
    // Per block of k ascending indices: the size of the intersection (a merge).
    std::size_t common = 0;
    for (std::size_t blk = 0; blk + k <= x.size(); blk += k) {
      std::size_t i = blk, j = blk;
      while (i < blk + k && j < blk + k) {
        if (x[i] == y[j]) {
          ++common, ++i, ++j;
        } else if (x[i] < y[j]) {
          ++i;
        } else {
          ++j;
        }
      }
    }
    sum += static_cast<double>(common) / static_cast<double>(x.size());
  }
  return sum / static_cast<double>(a.size());
}

IndexSignature index_signature(const std::vector<kernels::CompressedTensor>& update, std::uint64_t seed) {
  IndexSignature sig;
  std::vector<std::uint64_t>& h = sig.hashes;
  // A bound kept above the kIndexSignature-th smallest hash so far: most
  // positions are dropped without touching the vector.
  std::uint64_t bound = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t t = 0; t < update.size(); ++t) {
    const auto& c = update[t];
    const auto k = static_cast<std::uint64_t>(std::max(1, c.layout.k));
    const auto block_elems = static_cast<std::uint64_t>(c.layout.block_elems());
    const std::uint64_t tensor_key = seed ^ ((t + 1) * 0x9E3779B97F4A7C15ull);
    for (std::size_t i = 0; i < c.indices.size(); ++i) {
      const std::uint64_t position = (i / k) * block_elems + c.indices[i];
      const std::uint64_t x = SplitMix64(tensor_key ^ (position * 0xBF58476D1CE4E5B9ull)).next();
      ++sig.kept;
      if (x >= bound) continue;
      h.push_back(x);
      if (h.size() >= 2 * kIndexSignature) {
        std::nth_element(h.begin(), h.begin() + kIndexSignature - 1, h.end());
        h.resize(kIndexSignature);
        bound = *std::max_element(h.begin(), h.end());
      }
    }
  }
  std::sort(h.begin(), h.end());
  h.erase(std::unique(h.begin(), h.end()), h.end());
  if (h.size() > kIndexSignature) h.resize(kIndexSignature);
  return sig;
}

double index_overlap(const IndexSignature& a, const IndexSignature& b) {
  if (a.hashes.empty() || b.hashes.empty()) return 0;
  // The smallest kIndexSignature hashes of the union, and how many of them
  // are in both: the Jaccard estimate.
  const std::size_t want = std::min({kIndexSignature, a.hashes.size(), b.hashes.size()});
  std::size_t i = 0, j = 0, taken = 0, both = 0;
  while (taken < want && i < a.hashes.size() && j < b.hashes.size()) {
    if (a.hashes[i] == b.hashes[j]) {
      ++both, ++i, ++j;
    } else if (a.hashes[i] < b.hashes[j]) {
      ++i;
    } else {
      ++j;
    }
    ++taken;
  }
  const double jaccard = static_cast<double>(both) / static_cast<double>(want);
  return 2 * jaccard / (1 + jaccard);
}

}  // namespace crucible::validator
