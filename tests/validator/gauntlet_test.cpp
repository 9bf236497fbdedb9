#include "crucible/validator/gauntlet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "support/process.h"

namespace crucible::validator {
namespace {

Evaluation eval(std::uint16_t uid, double before_own, double after_own, double before_rand, double after_rand) {
  return {uid, true, "", before_own, after_own, before_rand, after_rand};
}

TEST(OpenSkill, OneOnOneMatchesTheHandComputation) {
  // Two default ratings, beta 25/6, no tau: c = sqrt(2 (sigma^2 + beta^2)); the
  // winner's omega is sigma^2/c * 1/2, delta gamma * sigma^2/c^2 * 1/4.
  auto r = rate({{Rating{}}, {Rating{}}}, {1, 2}, OpenSkillParams{});
  const double s2 = (25.0 / 3) * (25.0 / 3), c = std::sqrt(2 * (s2 + (25.0 / 6) * (25.0 / 6)));
  EXPECT_NEAR(r[0][0].mu, 25 + s2 / c * 0.5, 1e-12);
  EXPECT_NEAR(r[1][0].mu, 25 - s2 / c * 0.5, 1e-12);
  const double delta = (25.0 / 3) / c * s2 / (c * c) * 0.25;
  EXPECT_NEAR(r[0][0].sigma, (25.0 / 3) * std::sqrt(1 - delta), 1e-12);
  // openskill's published 1-v-1 values
  EXPECT_NEAR(r[0][0].mu, 27.63523138347365, 1e-9);
  EXPECT_NEAR(r[0][0].sigma, 8.065506316323548, 1e-9);
}

TEST(OpenSkill, MatchesThePublishedTeamExample) {
  // openskill.js / openskill.py README: a1, a2 beat b1, b2.
  auto r = rate({{Rating{}, Rating{32.444, 5.123}}, {Rating{43.381, 2.421}, Rating{25.188, 6.211}}}, {1, 2},
                OpenSkillParams{});
  EXPECT_NEAR(r[0][0].mu, 28.669648436582808, 1e-9);
  EXPECT_NEAR(r[0][0].sigma, 8.071520788025197, 1e-9);
  EXPECT_NEAR(r[0][1].mu, 33.83086971107981, 1e-9);
  EXPECT_NEAR(r[0][1].sigma, 5.062772998705765, 1e-9);
  EXPECT_NEAR(r[1][0].mu, 43.071274808241974, 1e-9);
  EXPECT_NEAR(r[1][0].sigma, 2.4166900452721256, 1e-9);
  EXPECT_NEAR(r[1][1].mu, 23.149503312339064, 1e-9);
  EXPECT_NEAR(r[1][1].sigma, 6.1378606973362135, 1e-9);
}

TEST(OpenSkill, AgreesWithOpenskillJsOnCruciblesSettings) {
  const std::string script = std::string(CRUCIBLE_SOURCE_DIR) + "/tools/interop/openskill.mjs";
  if (!std::filesystem::exists(std::string(CRUCIBLE_SOURCE_DIR) + "/tools/node_modules/openskill")) {
    GTEST_SKIP() << "tools/node_modules not installed (scripts/setup.sh)";
  }
  // Five uids, one tie, crucible's beta 7 and tau 0.1, ranks given out of order.
  std::vector<Rating> in{{25, 25.0 / 3}, {30, 4}, {18, 6}, {22, 7.5}, {27, 2}};
  std::vector<int> ranks{3, 1, 5, 3, 2};
  nlohmann::json teams = nlohmann::json::array();
  std::vector<std::vector<Rating>> ours_in;
  for (const auto& r : in) {
    teams.push_back({{{"mu", r.mu}, {"sigma", r.sigma}}});
    ours_in.push_back({r});
  }
  nlohmann::json game = {{"teams", teams}, {"rank", ranks}, {"beta", 7.0}, {"tau", 0.1}};
  auto out = testing::run_process({"/usr/bin/node", script, game.dump()});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  auto js = nlohmann::json::parse(out.out);
  auto ours = rate(ours_in, ranks, OpenSkillParams{7.0, 0.1, 1e-4});
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_NEAR(ours[i][0].mu, js[i][0]["mu"].get<double>(), 1e-9) << i;
    EXPECT_NEAR(ours[i][0].sigma, js[i][0]["sigma"].get<double>(), 1e-9) << i;
  }
}

TEST(Gauntlet, GradientScoreAndBinaryIndicatorByHand) {
  auto e = eval(1, 4.0, 3.0, 5.0, 4.5);  // own improves 25%, random 10%
  EXPECT_DOUBLE_EQ(gradient_score(e), 0.1);
  EXPECT_EQ(binary_indicator(e), 1);
  auto lazy = eval(2, 4.0, 3.9, 5.0, 4.5);  // own 2.5% < random 10%: not its data
  EXPECT_EQ(binary_indicator(lazy), -1);
  Evaluation bad{3, false, "nan", 0, 0, 0, 0};
  EXPECT_EQ(gradient_score(bad), 0);
  EXPECT_EQ(binary_indicator(bad), -1);
}

// With the gradient check required, +1 also needs the update better aligned
// with the gradient on its own samples than with the one on random samples.
TEST(Gauntlet, TheGradientCheckMustAgreeWhereItRan) {
  auto e = eval(1, 4.0, 3.0, 5.0, 4.5);  // the loss check passes
  e.align_own = 0.005;
  e.align_rand = 0.01;
  EXPECT_EQ(binary_indicator(e), 1);  // measured, not required: it does not count
  e.align_required = true;
  EXPECT_EQ(binary_indicator(e), -1);
  e.align_own = 0.02;
  EXPECT_EQ(binary_indicator(e), 1);
  e.align_own = 0.005;  // trained on something else: the loss check alone would pass it
  EXPECT_EQ(binary_indicator(e), -1);
  e.align_own = std::nan("");  // one side missing is not a pass
  EXPECT_EQ(binary_indicator(e), -1);
  auto lazy = eval(2, 4.0, 3.9, 5.0, 4.5);  // the loss check fails: alignment does not rescue it
  lazy.align_own = 0.5;
  lazy.align_rand = 0.0;
  lazy.align_required = true;
  EXPECT_EQ(binary_indicator(lazy), -1);
}

// The margins: own gain must beat random gain by own_margin of it, and
// align_own beat align_rand by align_margin of it (of its size when negative).
TEST(Gauntlet, MarginsAreFractionsOfTheRandomSide) {
  auto e = eval(1, 4.0, 3.56, 5.0, 4.5);  // own 11%, random 10%
  EXPECT_EQ(binary_indicator(e), 1);
  e.own_margin = 0.1;  // needs 11% > 10% * 1.1 = 11%: not strictly
  EXPECT_EQ(binary_indicator(e), -1);
  e.own_margin = 0.05;
  EXPECT_EQ(binary_indicator(e), 1);
  e.align_required = true;
  e.align_margin = 0.1;
  e.align_rand = 0.02;
  e.align_own = 0.0219;  // under 0.022
  EXPECT_EQ(binary_indicator(e), -1);
  e.align_own = 0.0221;
  EXPECT_EQ(binary_indicator(e), 1);
  e.align_rand = -0.02;  // negative: the margin is of its size, so -0.018 is the bar
  e.align_own = -0.019;
  EXPECT_EQ(binary_indicator(e), -1);
  e.align_own = -0.017;
  EXPECT_EQ(binary_indicator(e), 1);
}

// own_data_z by hand: per-sample gains over each set's mean loss before,
// pooled spread, and the pass it decides.
TEST(Gauntlet, OwnDataZIsTheGainDifferenceInUnitsOfItsNoise) {
  // Own: before 2 2 2 2 (mean 2), after 1.8 1.9 1.8 1.9 -> gains .1 .05 .1 .05.
  // Random: before 4 4 (mean 4), after 3.8 3.9 -> gains .05 .025.
  const std::vector<double> bo{2, 2, 2, 2}, ao{1.8, 1.9, 1.8, 1.9}, br{4, 4}, ar{3.8, 3.9};
  // means .075 and .0375; ss .0025 and .0003125; pooled sd sqrt(.0028125 / 4);
  // se = sd * sqrt(1/4 + 1/2).
  const double sd = std::sqrt(0.0028125 / 4), se = sd * std::sqrt(0.75);
  EXPECT_NEAR(own_data_z(bo, ao, br, ar), (0.075 - 0.0375) / se, 1e-9);
  EXPECT_NEAR(own_data_z(br, ar, bo, ao), -(0.075 - 0.0375) / se, 1e-9);  // the other way round
  // The same update, ten times smaller: the same z (the noise scales too).
  std::vector<double> ao10, ar10;
  for (double a : ao) ao10.push_back(2 - (2 - a) / 10);
  for (double a : ar) ar10.push_back(4 - (4 - a) / 10);
  EXPECT_NEAR(own_data_z(bo, ao10, br, ar10), own_data_z(bo, ao, br, ar), 1e-6);
  // Not measurable: one sample a side, mismatched sizes, no spread, no loss.
  const std::vector<double> one{2.0}, after_one{1.0}, two{1.8, 1.9}, zeros{0.0, 0.0};
  EXPECT_TRUE(std::isnan(own_data_z(one, after_one, br, ar)));
  EXPECT_TRUE(std::isnan(own_data_z(bo, two, br, ar)));
  EXPECT_TRUE(std::isnan(own_data_z(bo, bo, br, br)));  // a zero update
  EXPECT_TRUE(std::isnan(own_data_z(zeros, zeros, br, ar)));

  auto e = eval(1, 4.0, 3.56, 5.0, 4.5);  // own 11%, random 10%: the gain check passes
  e.own_z = 0.8;
  EXPECT_EQ(binary_indicator(e), 1);  // z_min 0
  e.z_min = 1.0;
  EXPECT_EQ(binary_indicator(e), -1);  // within the noise
  e.own_z = 1.2;
  EXPECT_EQ(binary_indicator(e), 1);
  e.own_z = std::nan("");  // not measured: the gain check alone
  EXPECT_EQ(binary_indicator(e), 1);
}

TEST(Gauntlet, SyncScoreByHand) {
  ScoringParams p;
  EXPECT_DOUBLE_EQ(sync_score(0, p), 1.0);
  EXPECT_NEAR(sync_score(1.5, p), std::pow(0.5, 2.5), 1e-15);
  EXPECT_DOUBLE_EQ(sync_score(3, p), 0.0);
  EXPECT_DOUBLE_EQ(sync_score(10, p), 0.0);
  EXPECT_DOUBLE_EQ(sync_score(std::nan(""), p), 0.0);
}

TEST(Gauntlet, FinalScoreCombinesTheFactors) {
  ScoringParams p;
  p.min_evaluations = 1;  // the formula from the first window
  std::map<std::uint16_t, MinerScore> s;
  WindowInput in;
  in.window = 10;
  in.evaluations = {eval(1, 4, 3, 5, 4),        // own 25% > random 20%: the window's best
                    eval(2, 4, 3.5, 5, 4.6),    // own 12.5% > random 8%: 0.4 of the best
                    eval(4, 4, 3.95, 5, 4.9)};  // own 1.25% < random 2%: binary -1
  in.uploaded = {1, 2, 4};
  in.candidates = {1, 2, 3, 4};
  in.steps_behind = {{1, 0.0}, {2, 1.5}, {4, 0.0}};
  score_window(s, in, p);
  // uid 1: evidence 1, binary +1 -> BMA 0.05, which is all it could be after
  // one indicator: trust 1; sync 1.
  EXPECT_DOUBLE_EQ(s[1].bma, 0.05);
  EXPECT_EQ(s[1].judged, 1u);
  EXPECT_NEAR(trust(s[1], p), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(s[1].evidence, 1.0);
  EXPECT_NEAR(s[1].final_score, 1.0, 1e-12);
  // uid 2: evidence 0.4, trust 1, sync (1 - 1.5/3)^2.5.
  EXPECT_NEAR(s[2].evidence, 0.4, 1e-12);
  EXPECT_NEAR(s[2].sync, std::pow(0.5, 2.5), 1e-15);
  EXPECT_NEAR(s[2].final_score, 0.4 * std::pow(0.5, 2.5), 1e-12);
  // uid 4: it helped (evidence 0.1) but not on its own data: BMA -0.05 -> trust 0.
  EXPECT_DOUBLE_EQ(s[4].bma, -0.05);
  EXPECT_DOUBLE_EQ(trust(s[4], p), 0.0);
  EXPECT_DOUBLE_EQ(s[4].final_score, 0.0);
  // uid 3 uploaded nothing: penalty 0.75, and it waits longer.
  EXPECT_DOUBLE_EQ(s[3].penalty, 0.75);
  EXPECT_EQ(s[3].waiting, 2u);
  EXPECT_EQ(s[1].waiting, 1u);
  in.window = 11;
  in.evaluations.clear();
  in.uploaded = {1, 2};
  score_window(s, in, p);
  EXPECT_DOUBLE_EQ(s[3].penalty, 0.75 * 0.75);
  EXPECT_DOUBLE_EQ(s[1].penalty, 1.0);
  EXPECT_DOUBLE_EQ(s[4].penalty, 0.75);
  EXPECT_NEAR(s[1].final_score, 1.0, 1e-12);  // not evaluated: what its record says
}

// Trust accumulates the own-data z of every evaluation (a recency-weighted
// Stouffer sum), by hand: what one window adds is its z within ±4, at most
// 0 when the gain check fails, nothing when not measured.
TEST(Gauntlet, TrustAccumulatesTheOwnDataZ) {
  ScoringParams p;
  ASSERT_EQ(p.trust_decay, 0.9);
  ASSERT_EQ(p.trust_z, 2.0);
  ASSERT_EQ(p.trust_z_span, 1.0);
  std::map<std::uint16_t, MinerScore> s;
  WindowInput in;
  in.uploaded = in.candidates = {1};
  auto window = [&](std::uint64_t w, double own_z, double after_own = 3.9) {
    in.window = w;
    Evaluation e = eval(1, 4, after_own, 5, 4.95);  // own 2.5% > random 1% unless after_own says otherwise
    e.own_z = own_z;
    in.evaluations = {e};
    score_window(s, in, p);
  };
  EXPECT_TRUE(std::isnan(accumulated_own_z(s[1])));
  window(1, 1.5);
  EXPECT_DOUBLE_EQ(accumulated_own_z(s[1]), 1.5);
  EXPECT_DOUBLE_EQ(trust(s[1], p), 0.0);  // one window of z 1.5 is no evidence: N(0, 1) passes it 7% of the time
  window(2, 2.0);
  const double z2 = (2.0 + 0.9 * 1.5) / std::sqrt(1 + 0.81);
  EXPECT_NEAR(accumulated_own_z(s[1]), z2, 1e-12);
  EXPECT_NEAR(trust(s[1], p), z2 - 2.0, 1e-12);  // 2.49: half trusted
  window(3, std::nan(""));                       // not measured: nothing added
  EXPECT_NEAR(accumulated_own_z(s[1]), z2, 1e-12);
  window(4, 50.0);  // one memorised window counts as z 4 at most
  const double z4 = (4.0 + 0.9 * 2.0 + 0.81 * 1.5) / std::sqrt(1 + 0.81 + 0.6561);
  EXPECT_NEAR(accumulated_own_z(s[1]), z4, 1e-12);
  EXPECT_DOUBLE_EQ(trust(s[1], p), 1.0);
  window(5, 3.0, 3.99);  // own gain 0.25% below the random 1%: a z of 3 counts as 0
  const double z5 = (0.9 * 4.0 + 0.81 * 2.0 + 0.729 * 1.5) / std::sqrt(1 + 0.81 + 0.6561 + 0.531441);
  EXPECT_NEAR(accumulated_own_z(s[1]), z5, 1e-12);
  EXPECT_EQ(s[1].judged, 5u);
  // Kept and served as the record says.
  EXPECT_NEAR(s[1].own_z_sum / std::sqrt(s[1].own_z_norm2), z5, 1e-12);
}

// The bar is where a miner that does not train on its own samples stands
// after any number of evaluations: Z is N(0, 1), so trust is positive in
// about 2.3% of its windows (Φ(-2)), while an honest miner whose own-data z
// averages 1.5 per window (below the 1.9 that honest miners averaged over
// the first six windows of the e2e incentive and effort tests) is trusted within
// a few evaluations and stays so.
TEST(Gauntlet, TrustSeparatesOwnDataFromOtherDataWhateverTheCount) {
  ScoringParams p;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0.0, 1.0);
  int other_trusted = 0, other_total = 0;
  double honest_trust = 0;
  int honest_total = 0, honest_untrusted = 0;
  for (int run = 0; run < 4000; ++run) {
    MinerScore other, honest;
    for (int n = 1; n <= 20; ++n) {
      for (auto [s, mean] : {std::pair{&other, 0.0}, std::pair{&honest, 1.5}}) {
        s->own_z_sum = p.trust_decay * s->own_z_sum + std::clamp(mean + z(rng), -kTrustZCap, kTrustZCap);
        s->own_z_norm2 = p.trust_decay * p.trust_decay * s->own_z_norm2 + 1;
      }
      if (n < 3) continue;  // min_evaluations
      ++other_total;
      other_trusted += trust(other, p) > 0;
      if (n < 8) continue;
      ++honest_total;
      honest_trust += trust(honest, p);
      honest_untrusted += trust(honest, p) == 0;
    }
  }
  const double other_rate = static_cast<double>(other_trusted) / other_total;
  EXPECT_GT(other_rate, 0.015);  // the normal tail, not a bias
  EXPECT_LT(other_rate, 0.035);
  EXPECT_GT(honest_trust / honest_total, 0.9);
  EXPECT_LT(static_cast<double>(honest_untrusted) / honest_total, 0.02);
}

// Where no own-data z is measured (eval_batches below 2), trust is the BMA
// without its start-up bias: the share of checks passed over failed, recent
// ones weighing more, whatever the uid's age.
TEST(Gauntlet, WithoutAMeasuredZTrustIsTheBmaWithoutItsStartUpBias) {
  ScoringParams p;
  MinerScore s;
  EXPECT_EQ(trust(s, p), 0.0);  // nothing judged yet
  auto judge = [&](int binary) {
    s.bma = (1 - p.bma_alpha) * s.bma + p.bma_alpha * binary;
    ++s.judged;
  };
  for (int i = 0; i < 3; ++i) judge(+1);
  EXPECT_NEAR(trust(s, p), 1.0, 1e-12);  // a newcomer that always passed: as trusted as a veteran
  for (int i = 0; i < 100; ++i) judge(+1);
  EXPECT_NEAR(trust(s, p), 1.0, 1e-12);
  judge(-1);  // one failure among many passes costs a share, not everything
  EXPECT_GT(trust(s, p), 0.85);
  EXPECT_LT(trust(s, p), 1.0);
  for (int i = 0; i < 30; ++i) judge(-1);  // failing from now on: trust goes
  EXPECT_EQ(trust(s, p), 0.0);
  // Three of four passed: 0.5 or so, more when the failure is older.
  MinerScore a, b;
  for (int x : {-1, 1, 1, 1}) a.bma = (1 - p.bma_alpha) * a.bma + p.bma_alpha * x, ++a.judged;
  for (int x : {1, 1, 1, -1}) b.bma = (1 - p.bma_alpha) * b.bma + p.bma_alpha * x, ++b.judged;
  EXPECT_GT(trust(a, p), trust(b, p));
  EXPECT_NEAR(trust(a, p) + trust(b, p), 1.0, 0.1);
}

// Equal work earns alike (issue #28): honest uids whose gains differ by
// measurement noise get shares that differ by that noise, not by rank: over
// ten windows of four equal uids whose gains are 2% ± 10% noise and whose
// own-data z's are 2 ± 1 (the e2e networks' first windows), none ends below
// half the mean weight (under ranking, one took nearly all; with trust from
// counted ±1 checks, one failed check among six cost a third).
TEST(Gauntlet, EqualWorkEarnsAlike) {
  ScoringParams p;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    std::map<std::uint16_t, MinerScore> s;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.1), z(2.0, 1.0);
    WindowInput in;
    in.uploaded = in.candidates = {1, 2, 3, 4};
    for (std::uint64_t w = 1; w <= 10; ++w) {
      in.window = w;
      in.evaluations.clear();
      for (std::uint16_t u : in.uploaded) {
        const double g = 0.02 * (1 + noise(rng));
        Evaluation e = eval(u, 4, 4 * (1 - 1.5 * g), 5, 5 * (1 - g));
        e.own_z = z(rng);
        in.evaluations.push_back(e);
      }
      score_window(s, in, p);
    }
    auto w = weights(s, p);
    for (std::uint16_t u : in.uploaded) EXPECT_GT(w[u], 0.5 * 0.25) << "seed " << seed << " uid " << u;
  }
}

// Scaling up earns less, never more (issue #28): an update evaluated at the
// median norm shows the gain of its direction, but one far above the
// admitted median counts only max_norm_ratio / norm_ratio of it toward
// evidence; within the ratio nothing changes, and nothing is discounted while
// no uid is admitted (norm_ratio 0).
TEST(Gauntlet, AnUpdateFarAboveTheMedianNormCountsOnlyInPart) {
  ScoringParams p;
  ASSERT_EQ(p.max_norm_ratio, 4.0);
  std::map<std::uint16_t, MinerScore> s;
  WindowInput in;
  in.uploaded = in.candidates = {1, 2, 3, 4};
  for (std::uint64_t w = 1; w <= 10; ++w) {
    in.window = w;
    in.evaluations.clear();
    for (std::uint16_t u : in.uploaded) {
      Evaluation e = eval(u, 4, 3.9, 5, 4.9);  // the same direction, the same gain at the median
      e.norm_ratio = u == 1 ? 1.0 : u == 2 ? 4.0 : u == 3 ? 50.0 : 0.0;
      in.evaluations.push_back(e);
    }
    score_window(s, in, p);
  }
  EXPECT_DOUBLE_EQ(s[1].evidence, 1.0);
  EXPECT_DOUBLE_EQ(s[2].evidence, 1.0);  // at the ratio: whole
  EXPECT_DOUBLE_EQ(s[4].evidence, 1.0);  // nothing to compare with: whole
  EXPECT_NEAR(s[3].evidence, 4.0 / 50.0, 1e-12);
  EXPECT_LT(s[3].evidence, p.admit_ratio);  // never in a set
  EXPECT_FALSE(admitted(s[3], p));
  auto w = weights(s, p);
  EXPECT_LT(w[3], 0.1 * w[1]);
}

// No final score before min_evaluations evaluated windows: one lucky
// window of an other-data miner pays nothing.
TEST(Gauntlet, NoScoreBeforeSeveralEvaluatedWindows) {
  ScoringParams p;
  ASSERT_EQ(p.min_evaluations, 3u);
  std::map<std::uint16_t, MinerScore> s;
  WindowInput in;
  in.uploaded = in.candidates = {1, 2};
  for (std::uint64_t w = 1; w <= 3; ++w) {
    in.window = w;
    in.evaluations = {eval(1, 4, 3, 5, 4), eval(2, 4, 3.9, 5, 4.9)};
    score_window(s, in, p);
    EXPECT_EQ(s[1].evaluations, w);
    if (w < 3) {
      EXPECT_EQ(s[1].final_score, 0.0) << "window " << w;
    } else {
      EXPECT_GT(s[1].final_score, 0.0);
    }
  }
  // An invalid evaluation is no evidence: it does not count towards them.
  std::map<std::uint16_t, MinerScore> t;
  in.evaluations = {Evaluation{1, false, "copy", 0, 0, 0, 0}, eval(2, 4, 3.9, 5, 4.9)};
  score_window(t, in, p);
  EXPECT_EQ(t[1].evaluations, 0u);
}

TEST(Gauntlet, NoFactorMakesTheFinalScoreNegative) {
  ScoringParams p;
  std::map<std::uint16_t, MinerScore> s;
  s[7].evidence = -0.5;  // its updates raised the loss
  s[7].bma = -0.5;
  s[7].judged = 20;
  s[7].evaluations = 5;  // a record, not evaluated in this window
  WindowInput in;
  in.window = 1;
  in.candidates = {7};
  in.uploaded = {7};
  score_window(s, in, p);
  EXPECT_EQ(s[7].final_score, 0.0);  // max(0, -0.5) * max(0, -0.5): 0, not +0.25
  EXPECT_DOUBLE_EQ(weights(s, p)[7], 0.0);
  // A harmful update with a positive BMA: still 0, never negative.
  s[7].bma = 0.5;
  score_window(s, in, p);
  EXPECT_EQ(s[7].final_score, 0.0);
  // Helpful, but failing its own-data checks: 0.
  s[7].evidence = 0.5;
  s[7].bma = -0.5;
  score_window(s, in, p);
  EXPECT_EQ(s[7].final_score, 0.0);
  s[7].bma = 0.5;
  score_window(s, in, p);
  EXPECT_GT(s[7].final_score, 0.0);
  EXPECT_DOUBLE_EQ(weights(s, p)[7], 1.0);
}

TEST(Gauntlet, InvalidUpdatesRankLastAndScoreZero) {
  ScoringParams p;
  p.min_evaluations = 1;  // the formula from the first window
  std::map<std::uint16_t, MinerScore> s;
  for (std::uint16_t u : {1, 2, 3}) s[u].bma = 0.5;
  WindowInput in;
  in.window = 3;
  in.evaluations = {eval(1, 4, 3, 5, 4), Evaluation{2, false, "non-finite values", 0, 0, 0, 0},
                    eval(3, 4, 3.5, 5, 4.6)};
  in.uploaded = {1, 2, 3};
  in.candidates = {1, 2, 3};
  score_window(s, in, p);
  EXPECT_GT(s[1].rating.mu, s[3].rating.mu);
  EXPECT_GT(s[3].rating.mu, s[2].rating.mu);  // the invalid one is last
  EXPECT_DOUBLE_EQ(s[2].final_score, 0.0);
  EXPECT_TRUE(s[2].zeroed);
  EXPECT_GT(s[1].final_score, 0.0);
}

TEST(Gauntlet, WeightsArePowerNormalisedAndQuantised) {
  ScoringParams p;
  std::map<std::uint16_t, MinerScore> s;
  s[1].final_score = 2;
  s[2].final_score = 1;
  s[3].final_score = -4;
  auto w = weights(s, p);
  EXPECT_DOUBLE_EQ(w[1], 0.8);  // 4 / (4 + 1)
  EXPECT_DOUBLE_EQ(w[2], 0.2);
  EXPECT_DOUBLE_EQ(w[3], 0.0);
  auto [uids, values] = quantize_weights(w);
  EXPECT_EQ(uids, (std::vector<std::uint16_t>{1, 2}));
  EXPECT_EQ(values, (std::vector<std::uint16_t>{65535, 16384}));  // round(0.25 * 65535)
  std::map<std::uint16_t, MinerScore> none;
  none[1].final_score = 0;
  EXPECT_TRUE(quantize_weights(weights(none, p)).first.empty());
}

TEST(Gauntlet, EvaluationChoiceIsSeededAndFavoursTheWaiting) {
  std::map<std::uint16_t, MinerScore> s;
  std::vector<std::uint16_t> c{1, 2, 3, 4, 5, 6};
  for (auto u : c) s[u].evaluations = 1;  // each has a record
  EXPECT_EQ(choose_for_evaluation(c, s, 3, 4, 42), choose_for_evaluation(c, s, 3, 4, 42));
  EXPECT_EQ(choose_for_evaluation(c, s, 10, 4, 1).size(), 6u);
  s[6].waiting = 1000;
  int picked = 0;
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    auto chosen = choose_for_evaluation(c, s, 1, 0, seed);
    picked += chosen[0] == 6;
  }
  EXPECT_GT(picked, 45);
}

TEST(Gauntlet, ASwarmOfNewcomersTakesAtMostItsShareOfEvaluations) {
  std::map<std::uint16_t, MinerScore> s;
  std::vector<std::uint16_t> c;
  for (std::uint16_t u = 1; u <= 4; ++u) {  // four uids with a record
    s[u].evaluations = 3;
    c.push_back(u);
  }
  for (std::uint16_t u = 100; u < 150; ++u) c.push_back(u);  // fifty fresh ones
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    auto chosen = choose_for_evaluation(c, s, 6, 2, seed);
    ASSERT_EQ(chosen.size(), 6u);
    int fresh = 0;
    for (auto u : chosen) fresh += u >= 100;
    EXPECT_EQ(fresh, 2) << "seed " << seed;  // two newcomer slots, the four with a record all chosen
  }
  // With slots to spare, newcomers fill them.
  EXPECT_EQ(choose_for_evaluation({1, 100, 101, 102}, s, 10, 1, 7).size(), 4u);
  // Every newcomer gets evaluated first when there is room: a fresh network.
  auto fresh_network = choose_for_evaluation({100, 101}, {}, 20, 4, 7);
  std::sort(fresh_network.begin(), fresh_network.end());
  EXPECT_EQ(fresh_network, (std::vector<std::uint16_t>{100, 101}));
}

// A validator whose windows leave time for fewer evaluations than it chose
// (validator.eval_window_share: the evaluate step stops at its deadline)
// evaluates the first of the choice, which comes the most urgent first.
// 32 uids, 20 chosen a window, only 8 evaluated: every uid is still
// evaluated in turn, at most ceil(32 / 8) + 2 windows apart, and the count
// of any two uids' evaluations never differs by more than two.
TEST(Gauntlet, CutShortEveryUidIsStillEvaluatedInTurn) {
  constexpr std::uint16_t kUids = 32;
  constexpr std::size_t kChosen = 20, kDone = 8;
  constexpr std::uint64_t kBound = (kUids + kDone - 1) / kDone + 2;
  ScoringParams p;
  std::map<std::uint16_t, MinerScore> scores;
  std::vector<std::uint16_t> all(kUids);
  std::map<std::uint16_t, std::uint64_t> since, count;
  for (std::uint16_t u = 0; u < kUids; ++u) all[u] = u, since[u] = 0;
  std::uint64_t longest = 0;
  for (std::uint64_t w = 1; w <= 60; ++w) {
    auto chosen = choose_for_evaluation(all, scores, kChosen, 4, 0xc0ffee ^ w);
    ASSERT_EQ(chosen.size(), kChosen);
    chosen.resize(kDone);  // the deadline
    WindowInput in;
    in.window = w;
    in.candidates = in.uploaded = all;
    for (std::uint16_t u : chosen) {
      in.evaluations.push_back(Evaluation{u, true, "", 5.0, 4.99, 5.0, 4.995});
      longest = std::max(longest, w - since[u]);
      EXPECT_LE(w - since[u], kBound) << "uid " << u << " waited to window " << w;
      since[u] = w;
      ++count[u];
    }
    score_window(scores, in, p);
    if (w >= kBound) {
      std::uint64_t least = UINT64_MAX, most = 0;
      for (std::uint16_t u = 0; u < kUids; ++u) least = std::min(least, count[u]), most = std::max(most, count[u]);
      EXPECT_GE(least, 1u) << "window " << w;
      EXPECT_LE(most - least, 2u) << "window " << w;
    }
  }
  EXPECT_GE(longest, kUids / kDone);  // not vacuous: 32 uids at 8 a window take 4 windows
}

// A full subnet (256 miners, every upload valid) and 20 evaluations per
// window, through the real choice and the real scoring: every uid is
// evaluated at least once every ceil(256/20) + 2 = 15 windows; a swarm of
// 100 newcomers replacing uids mid-run (subtensor prunes and re-registers)
// does not push any uid with a record past that; each newcomer is evaluated
// within 15 windows of appearing; and between its evaluations a uid's final
// score is what its record says (it does not decay for not being chosen).
TEST(Gauntlet, AtScaleEveryUidIsEvaluatedWithinARoundAndKeepsItsScoreBetween) {
  constexpr std::uint16_t kUids = 256;
  constexpr std::size_t kPerWindow = 20, kNewcomers = 4;
  constexpr std::uint64_t kBound = (kUids + kPerWindow - 1) / kPerWindow + 2;
  ScoringParams p;
  std::map<std::uint16_t, MinerScore> scores;
  std::map<std::uint16_t, std::uint64_t> since;  // uid -> window it was last evaluated (or appeared)
  std::vector<std::uint16_t> all(kUids);
  for (std::uint16_t u = 0; u < kUids; ++u) all[u] = u, since[u] = 0;
  std::uint64_t longest = 0;
  for (std::uint64_t w = 1; w <= 80; ++w) {
    if (w == 40) {  // uids 156..255 change hands: newcomers, nothing of the old record
      for (std::uint16_t u = 156; u < kUids; ++u) scores[u] = MinerScore{}, since[u] = w;
    }
    const auto chosen = choose_for_evaluation(all, scores, kPerWindow, kNewcomers, 0x5eed ^ w);
    ASSERT_EQ(chosen.size(), kPerWindow);
    WindowInput in;
    in.window = w;
    in.candidates = all;
    in.uploaded = all;
    for (std::uint16_t u : chosen) {
      Evaluation e{u, true, "", 5.0, 5.0 - 0.01 * (1 + u % 7), 5.0, 4.995};
      e.own_margin = p.own_data_margin;
      e.z_min = p.own_data_z;
      in.evaluations.push_back(e);
    }
    const auto before = scores;
    score_window(scores, in, p);
    for (std::uint16_t u = 0; u < kUids; ++u) {
      const bool evaluated = std::find(chosen.begin(), chosen.end(), u) != chosen.end();
      if (evaluated) {
        longest = std::max(longest, w - since[u]);
        EXPECT_LE(w - since[u], kBound) << "uid " << u << " waited " << w - since[u] << " windows to window " << w;
        since[u] = w;
      } else if (before.count(u)) {
        EXPECT_DOUBLE_EQ(scores[u].final_score, before.at(u).final_score) << "uid " << u << " window " << w;
      }
    }
  }
  for (std::uint16_t u = 0; u < kUids; ++u) EXPECT_LE(81 - since[u], kBound) << "uid " << u << " never again";
  EXPECT_GE(longest, 10u);  // the bound is not vacuous: 256 uids at 20 a window take 13 windows
  std::size_t with_score = 0;
  for (const auto& [u, s] : scores) with_score += s.final_score > 0;
  EXPECT_GT(with_score, 200u);
}

TEST(Gauntlet, ScoresWithinRankTieShareARank) {
  ScoringParams p;
  p.rank_tie = 1e-3;
  std::map<std::uint16_t, MinerScore> s;
  WindowInput in;
  in.window = 1;
  // Gradient scores 0.2000, 0.1998 (a tie, within 1e-3) and 0.1 (worse).
  in.evaluations = {eval(1, 4, 3, 5, 4.0), eval(2, 4, 3, 5, 4.001), eval(3, 4, 3, 5, 4.5)};
  in.uploaded = in.candidates = {1, 2, 3};
  score_window(s, in, p);
  EXPECT_DOUBLE_EQ(s[1].rating.mu, s[2].rating.mu);
  EXPECT_DOUBLE_EQ(s[1].rating.sigma, s[2].rating.sigma);
  EXPECT_GT(s[2].rating.mu, s[3].rating.mu);
  // Without the tie, the order of two equally good updates decides.
  p.rank_tie = 0;
  std::map<std::uint16_t, MinerScore> strict;
  score_window(strict, in, p);
  EXPECT_GT(strict[1].rating.mu, strict[2].rating.mu);
}

TEST(Gauntlet, AdmissionNeedsEvidenceOfHelpRelativeToTheWindowsBest) {
  ScoringParams p;
  p.admit_ratio = 0.25;
  p.evidence_alpha = 0.5;
  std::map<std::uint16_t, MinerScore> s;
  EXPECT_FALSE(admitted(s[1], p));  // no evaluation yet: no evidence
  WindowInput in;
  in.window = 1;
  in.uploaded = in.candidates = {1, 2, 3, 4, 5};
  // Gradient scores 0.02 (best), 0.018 (honest, within noise), 0 (a zero
  // update), 0.0004 (noise: no help), -0.2 (harm).
  in.evaluations = {eval(1, 4, 3, 5, 4.9), eval(2, 4, 3, 5, 4.91), eval(3, 4, 4, 5, 5), eval(4, 4, 4, 5, 4.998),
                    eval(5, 4, 3, 5, 6)};
  score_window(s, in, p);
  EXPECT_TRUE(admitted(s[1], p));
  EXPECT_TRUE(admitted(s[2], p));
  EXPECT_NEAR(s[2].evidence, 0.9, 1e-9);
  EXPECT_FALSE(admitted(s[3], p));  // a free rider
  EXPECT_FALSE(admitted(s[4], p));  // harmless, useless
  EXPECT_FALSE(admitted(s[5], p));
  // Out of sync: an update made on another model is not merged, whatever it shows.
  MinerScore behind = s[1];
  behind.sync = sync_score(1.0, p);  // one window behind: still in
  EXPECT_TRUE(admitted(behind, p));
  behind.sync = sync_score(3.0, p);  // never applied the aggregates
  EXPECT_FALSE(admitted(behind, p));
  // One unlucky evaluation (no help at all) keeps an honest uid in: (0.9 + 0) / 2 >= 0.25.
  in.window = 2;
  in.evaluations = {eval(1, 4, 3, 5, 4.9), eval(2, 4, 3, 5, 5)};
  score_window(s, in, p);
  EXPECT_TRUE(admitted(s[2], p));
  EXPECT_NEAR(s[2].evidence, 0.45, 1e-9);
  // A second one takes it out (0.225) until it helps again (0.6125); an invalid update too.
  in.window = 3;
  score_window(s, in, p);
  EXPECT_FALSE(admitted(s[2], p));
  in.window = 4;
  in.evaluations = {eval(1, 4, 3, 5, 4.9), eval(2, 4, 3, 5, 4.9)};
  score_window(s, in, p);
  EXPECT_TRUE(admitted(s[2], p));
  in.window = 5;
  in.evaluations = {Evaluation{1, false, "copy", 0, 0, 0, 0}, eval(2, 4, 3, 5, 4.9)};
  score_window(s, in, p);
  EXPECT_FALSE(admitted(s[1], p));  // zeroed
}

TEST(Gauntlet, AUidWithANewHotkeyStartsAfresh) {
  std::map<std::uint16_t, MinerScore> s;
  std::array<std::uint8_t, 32> alice{}, bob{};
  alice.fill(1);
  bob.fill(2);
  s[3].rating = Rating{40, 2};
  s[3].evaluations = 9;
  s[3].final_score = 5;
  s[4].evaluations = 2;  // a record from before hotkeys were kept
  EXPECT_TRUE(bind_hotkeys(s, {{3, alice}, {4, bob}}).empty());
  EXPECT_EQ(s[3].hotkey, alice);
  EXPECT_EQ(s[4].hotkey, bob);
  EXPECT_EQ(s[3].evaluations, 9u);  // the same owner keeps its record
  // uid 3 recycled: bob's now. Nothing of alice's record carries over.
  EXPECT_EQ(bind_hotkeys(s, {{3, bob}, {4, bob}}), (std::vector<std::uint16_t>{3}));
  EXPECT_EQ(s[3].hotkey, bob);
  EXPECT_EQ(s[3].evaluations, 0u);
  EXPECT_DOUBLE_EQ(s[3].rating.mu, Rating{}.mu);
  EXPECT_DOUBLE_EQ(s[3].final_score, 0.0);
  EXPECT_EQ(s[4].evaluations, 2u);
}

TEST(Gauntlet, IndexOverlapCountsSharedChoices) {
  std::vector<std::int64_t> shape{64, 64};
  std::vector<float> x(4096), y(4096);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(static_cast<float>(i));
    y[i] = std::cos(static_cast<float>(i) * 1.7f);
  }
  auto a = kernels::compress(x, shape, 1), b = kernels::compress(y, shape, 1);
  std::vector<kernels::CompressedTensor> va{*a}, vb{*b};
  EXPECT_DOUBLE_EQ(index_overlap(va, va), 1.0);
  EXPECT_LT(index_overlap(va, vb), 0.2);
}

// Bottom-k index signatures (a cost per pair that does not grow with the
// model) estimate the overlap of the kept index sets.
TEST(Gauntlet, IndexSignaturesEstimateTheOverlap) {
  std::vector<std::int64_t> shape{512, 512};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(512 * 512), y(512 * 512), z(512 * 512);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = normal(rng);
    // Half of y's large values at x's: an overlap well inside (0, 1).
    y[i] = (i % 2 == 0 ? x[i] : 0.0f) + 0.9f * normal(rng);
    z[i] = normal(rng);
  }
  auto a = kernels::compress(x, shape, 1), b = kernels::compress(y, shape, 1), c = kernels::compress(z, shape, 1);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  std::vector<kernels::CompressedTensor> va{*a}, vb{*b}, vc{*c};
  const double whole = index_overlap(va, vb);
  ASSERT_GT(whole, 0.1);
  ASSERT_LT(whole, 0.9);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto sa = index_signature(va, seed), sb = index_signature(vb, seed), sc = index_signature(vc, seed);
    EXPECT_EQ(sa.kept, va[0].indices.size());
    EXPECT_EQ(sa.hashes.size(), kIndexSignature);
    EXPECT_TRUE(std::is_sorted(sa.hashes.begin(), sa.hashes.end()));
    EXPECT_NEAR(index_overlap(sa, sb), whole, 0.1) << seed;
    EXPECT_NEAR(index_overlap(sa, sc), index_overlap(va, vc), 0.1) << seed;
    EXPECT_DOUBLE_EQ(index_overlap(sa, sa), 1.0);
  }
  // Another seed hashes other positions: the signatures differ.
  EXPECT_NE(index_signature(va, 1).hashes, index_signature(va, 2).hashes);
  EXPECT_EQ(index_overlap(IndexSignature{}, index_signature(va, 1)), 0.0);
}

}  // namespace
}  // namespace crucible::validator
