// OpenSkill's Plackett-Luce model (Weng & Lin 2011, as in openskill.js /
// openskill.py): Bayesian ratings from a ranking of teams. crucible rates
// one uid per team, ranked by gradient score each window (protocol.md §6).
// Pure arithmetic, checked against openskill.js in the tests.
#pragma once

#include <vector>

namespace crucible::validator {

struct Rating {
  double mu = 25.0;
  double sigma = 25.0 / 3.0;
  double ordinal(double z = 3.0) const { return mu - z * sigma; }
};

struct OpenSkillParams {
  double beta = 25.0 / 6.0;  // performance uncertainty (crucible's default: 7)
  double tau = 0.0;          // dynamics: sigma^2 += tau^2 before rating (crucible's default: 0.1)
  double kappa = 1e-4;       // floor of the variance shrink factor
};

// teams[i] are the members of the team that placed ranks[i] (lower is
// better; equal ranks are ties). Returns the new ratings, same shape.
std::vector<std::vector<Rating>> rate(const std::vector<std::vector<Rating>>& teams, const std::vector<int>& ranks,
                                      const OpenSkillParams& params);

}  // namespace crucible::validator
