#include "crucible/validator/gauntlet.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "crucible/common/sampler.h"

namespace crucible::validator {

double gradient_score(const Evaluation& e) {
  if (!e.valid || !(e.loss_before_rand > 0)) return 0;
  return (e.loss_before_rand - e.loss_after_rand) / e.loss_before_rand;
}

int binary_indicator(const Evaluation& e) {
  if (!e.valid || !(e.loss_before_own > 0) || !(e.loss_before_rand > 0)) return -1;
  double own = (e.loss_before_own - e.loss_after_own) / e.loss_before_own;
  double rand = (e.loss_before_rand - e.loss_after_rand) / e.loss_before_rand;
  return own > rand ? 1 : -1;
}

OpenSkillParams openskill_params(const ScoringParams& p) {
  return {p.openskill_beta, p.openskill_tau, p.openskill_kappa};
}

double sync_score(double x, const ScoringParams& p) {
  if (!std::isfinite(x) || x < 0) x = p.sync_max_steps;
  return std::pow(std::max(0.0, 1.0 - std::min(x, p.sync_max_steps) / p.sync_max_steps), p.sync_power);
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
    std::vector<int> ranks;
    int last_rank = static_cast<int>(ranked.size());
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      teams.push_back({scores[ranked[i]->uid].rating});
      ranks.push_back(ranked[i]->valid ? static_cast<int>(i) + 1 : last_rank);
    }
    auto rated = rate(teams, ranks, openskill_params(p));
    for (std::size_t i = 0; i < ranked.size(); ++i) scores[ranked[i]->uid].rating = rated[i][0];
  }
  for (const auto& e : in.evaluations) {
    MinerScore& s = scores[e.uid];
    s.bma = (1 - p.bma_alpha) * s.bma + p.bma_alpha * binary_indicator(e);
    s.last_gradient_score = gradient_score(e);
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
  for (auto& [uid, s] : scores) {
    // max(0, BMA): a negative BMA never turns a negative ordinal into a positive score.
    s.final_score = s.zeroed ? 0.0 : s.rating.ordinal() * std::max(0.0, s.bma) * s.sync * s.penalty;
  }
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

std::vector<std::uint16_t> choose_for_evaluation(const std::vector<std::uint16_t>& candidates,
                                                 const std::map<std::uint16_t, MinerScore>& scores, std::size_t count,
                                                 std::uint64_t seed) {
  std::vector<std::uint16_t> pool(candidates);
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  std::vector<std::uint16_t> out;
  SplitMix64 rng(seed);
  while (!pool.empty() && out.size() < count) {
    std::vector<std::uint64_t> w;
    std::uint64_t total = 0;
    for (auto uid : pool) {
      auto it = scores.find(uid);
      std::uint64_t v = it == scores.end() ? 1 : std::max<std::uint32_t>(1, it->second.waiting);
      w.push_back(v);
      total += v;
    }
    std::uint64_t r = rng.below(total);
    std::size_t i = 0;
    while (r >= w[i]) r -= w[i++];
    out.push_back(pool[i]);
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
  }
  std::sort(out.begin(), out.end());
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

}  // namespace crucible::validator
