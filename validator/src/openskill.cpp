#include "crucible/validator/openskill.h"

#include <algorithm>
#include <cmath>

namespace crucible::validator {

std::vector<std::vector<Rating>> rate(const std::vector<std::vector<Rating>>& teams_in, const std::vector<int>& ranks,
                                      const OpenSkillParams& p) {
  const std::size_t n = teams_in.size();
  std::vector<std::vector<Rating>> teams = teams_in;
  if (p.tau > 0) {
    for (auto& team : teams)
      for (auto& r : team) r.sigma = std::sqrt(r.sigma * r.sigma + p.tau * p.tau);
  }
  std::vector<double> mu(n, 0), sigma_sq(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& r : teams[i]) {
      mu[i] += r.mu;
      sigma_sq[i] += r.sigma * r.sigma;
    }
  }
  double c2 = 0;
  for (std::size_t i = 0; i < n; ++i) c2 += sigma_sq[i] + p.beta * p.beta;
  const double c = std::sqrt(c2);
  // sum_q[q] = sum over teams placed at or below q of exp(mu / c); a[q] = teams tied with q.
  std::vector<double> sum_q(n, 0), a(n, 0);
  for (std::size_t q = 0; q < n; ++q) {
    for (std::size_t i = 0; i < n; ++i) {
      if (ranks[i] >= ranks[q]) sum_q[q] += std::exp(mu[i] / c);
      if (ranks[i] == ranks[q]) a[q] += 1;
    }
  }
  std::vector<std::vector<Rating>> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double e = std::exp(mu[i] / c);
    double omega = 0, delta = 0;
    for (std::size_t q = 0; q < n; ++q) {
      if (ranks[q] > ranks[i]) continue;
      const double quotient = e / sum_q[q];
      omega += (i == q ? 1 - quotient : -quotient) / a[q];
      delta += quotient * (1 - quotient) / a[q];
    }
    const double gamma = std::sqrt(sigma_sq[i]) / c;
    omega *= sigma_sq[i] / c;
    delta *= gamma * sigma_sq[i] / (c * c);
    for (const auto& r : teams[i]) {
      const double share = r.sigma * r.sigma / sigma_sq[i];
      out[i].push_back({r.mu + share * omega, r.sigma * std::sqrt(std::max(1 - share * delta, p.kappa))});
    }
  }
  return out;
}

}  // namespace crucible::validator
