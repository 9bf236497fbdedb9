// The model replica both nodes hold: updates, losses, the probe's exact
// restore, batched reads at fingerprint positions, save/load. Through the
// torch-free header only.
#include "crucible/common/replica.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/in_process.h"
#include "support/temp_dir.h"

namespace crucible::model {
namespace {

ModelConfig small() { return testing::tiny_model(); }

std::unique_ptr<Replica> make(std::uint64_t seed = 1) {
  auto r = Replica::create(small(), ReplicaOptions{"cpu", 1}, seed);
  EXPECT_TRUE(r.is_ok()) << r.status();
  return std::move(*r);
}

TensorValues filled(const std::vector<TensorSpec>& specs, float v) {
  TensorValues out;
  for (const auto& s : specs) out.emplace_back(static_cast<std::size_t>(s.numel()), v);
  return out;
}

std::vector<std::vector<std::int64_t>> first_positions(const std::vector<TensorSpec>& specs) {
  std::vector<std::vector<std::int64_t>> pos;
  for (const auto& s : specs) pos.push_back({0, s.numel() - 1, s.numel() / 2});
  return pos;
}

std::vector<std::int64_t> tokens(std::int64_t n, std::int64_t L) {
  std::vector<std::int64_t> t(static_cast<std::size_t>(n * L));
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::int64_t>((i * 13 + 5) % 64);
  return t;
}

TEST(Replica, ApplyUpdateSubtractsTheScaledUpdate) {
  auto r = make();
  const auto pos = first_positions(r->specs());
  const auto before = r->values_at(pos);
  ASSERT_TRUE(r->apply_update(filled(r->specs(), 0.5f), 0.2).is_ok());
  const auto after = r->values_at(pos);
  for (std::size_t t = 0; t < pos.size(); ++t)
    for (std::size_t i = 0; i < pos[t].size(); ++i) EXPECT_NEAR(after[t][i], before[t][i] - 0.1f, 1e-6);
}

TEST(Replica, ApplyUpdateRefusesBadUpdatesAndLeavesTheModel) {
  auto r = make();
  const auto pos = first_positions(r->specs());
  const auto before = r->values_at(pos);
  auto bad = filled(r->specs(), 0.1f);
  bad.back().back() = std::numeric_limits<float>::infinity();
  EXPECT_EQ(r->apply_update(bad, 1).code(), StatusCode::kInvalidArgument);
  auto short_update = filled(r->specs(), 0.1f);
  short_update.pop_back();
  EXPECT_EQ(r->apply_update(short_update, 1).code(), StatusCode::kInvalidArgument);
  auto wrong_size = filled(r->specs(), 0.1f);
  wrong_size[0].pop_back();
  EXPECT_EQ(r->apply_update(wrong_size, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->values_at(pos), before);
}

TEST(Replica, ProbeMeasuresTheUpdateAndRestoresBitForBit) {
  auto r = make();
  const auto L = small().seq_len;
  const auto a = tokens(2, L), b = tokens(3, L);
  const auto pos = first_positions(r->specs());
  const auto before = r->values_at(pos);
  auto la = r->loss(a, 2);
  ASSERT_TRUE(la.is_ok());
  auto probed = r->probe(filled(r->specs(), 0.01f), 1.0, a, 2, b, 3);
  ASSERT_TRUE(probed.is_ok()) << probed.status();
  EXPECT_NE(probed->first, *la);  // the update changed the loss
  EXPECT_EQ(r->values_at(pos), before);
  EXPECT_EQ(*r->loss(a, 2), *la);                                              // and the model is back exactly
  EXPECT_FALSE(r->probe(filled(r->specs(), 0.01f), 1.0, a, 3, b, 3).is_ok());  // wrong count
  EXPECT_EQ(r->values_at(pos), before);
  EXPECT_FALSE(r->loss(a, 0).is_ok());
}

// Each sample's loss: their mean is the batch loss, a sample's loss does not
// depend on the others in its batch, and probe_samples gives the same
// per-sample losses as measuring the updated model directly.
TEST(Replica, SampleLossesAverageToTheLossAndProbeMatchesThem) {
  auto r = make();
  const auto L = small().seq_len;
  const auto a = tokens(3, L), b = tokens(2, L);
  auto each = r->sample_losses(a, 3);
  ASSERT_TRUE(each.is_ok()) << each.status();
  ASSERT_EQ(each->size(), 3u);
  EXPECT_NEAR(((*each)[0] + (*each)[1] + (*each)[2]) / 3, *r->loss(a, 3), 1e-5);
  auto first = r->sample_losses(std::span(a).first(static_cast<std::size_t>(L)), 1);
  ASSERT_TRUE(first.is_ok());
  EXPECT_NEAR((*first)[0], (*each)[0], 1e-5);
  EXPECT_NE((*each)[0], (*each)[1]);  // different samples, different losses
  const auto update = filled(r->specs(), 0.01f);
  auto probed = r->probe_samples(update, 1.0, a, 3, b, 2);
  ASSERT_TRUE(probed.is_ok()) << probed.status();
  ASSERT_EQ(probed->first.size(), 3u);
  ASSERT_EQ(probed->second.size(), 2u);
  ASSERT_TRUE(r->apply_update(update, 1.0).is_ok());
  auto direct = r->sample_losses(a, 3);
  ASSERT_TRUE(direct.is_ok());
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(probed->first[i], (*direct)[i], 1e-6);
  EXPECT_FALSE(r->sample_losses(a, 2).is_ok());  // wrong count
}

// The gradient points uphill (a small step against it lowers the loss, one
// along it raises it), leaves the model and its grad state as they were,
// and refuses a wrong sample count.
TEST(Replica, GradientPointsUphillAndLeavesTheModel) {
  auto r = make();
  const auto L = small().seq_len;
  const auto a = tokens(2, L);
  const auto pos = first_positions(r->specs());
  const auto before = r->values_at(pos);
  const double loss = *r->loss(a, 2);
  auto g = r->gradient(a, 2);
  ASSERT_TRUE(g.is_ok()) << g.status();
  ASSERT_EQ(g->size(), r->specs().size());
  double sq = 0;
  for (std::size_t t = 0; t < g->size(); ++t) {
    ASSERT_EQ(static_cast<std::int64_t>((*g)[t].size()), r->specs()[t].numel());
    for (float v : (*g)[t]) sq += double(v) * v;
  }
  ASSERT_GT(sq, 0.0);
  EXPECT_EQ(r->values_at(pos), before);
  EXPECT_EQ(*r->loss(a, 2), loss);
  // theta - eps*g: lower loss; theta + eps*g: higher.
  const double eps = 0.05 / std::sqrt(sq);
  auto down = r->probe(*g, eps, a, 2, a, 2);
  auto up = r->probe(*g, -eps, a, 2, a, 2);
  ASSERT_TRUE(down.is_ok() && up.is_ok());
  EXPECT_LT(down->first, loss);
  EXPECT_GT(up->first, loss);
  // Twice the same: nothing accumulated between calls.
  auto again = r->gradient(a, 2);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *g);
  EXPECT_FALSE(r->gradient(a, 3).is_ok());
}

TEST(Replica, SavesAndLoadsAndSeedsDiffer) {
  testing::TempDir dir;
  auto r = make(1);
  auto other = make(2);
  const auto pos = first_positions(r->specs());
  EXPECT_NE(r->values_at(pos), other->values_at(pos));
  ASSERT_TRUE(r->apply_update(filled(r->specs(), 0.3f), 1).is_ok());
  ASSERT_TRUE(r->save(dir.path() / "m.safetensors", {{"window", "4"}}).is_ok());
  ASSERT_TRUE(other->load(dir.path() / "m.safetensors").is_ok());
  EXPECT_EQ(other->values_at(pos), r->values_at(pos));
  EXPECT_EQ(other->num_parameters(), small().num_parameters());
  EXPECT_FALSE(other->load(dir.path() / "missing.safetensors").is_ok());
}

TEST(Replica, RefusesUnknownDevices) {
  EXPECT_EQ(Replica::create(small(), ReplicaOptions{"tpu", 1}, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Replica::create(small(), ReplicaOptions{"cpu", 1, "fp8"}, 1).status().code(), StatusCode::kInvalidArgument);
}

// bf16 autocast: "auto" is off on a CPU; "bf16" computes the losses in
// bf16 (close to f32, not equal), keeps the parameters f32 and leaves no
// autocast behind (an f32 replica measures exactly what it did before).
TEST(Replica, Bf16AutocastIsCloseToF32AndLeavesNothingBehind) {
  auto f32 = make(1);
  EXPECT_FALSE(f32->autocast());
  auto bf16 = Replica::create(small(), ReplicaOptions{"cpu", 1, "bf16"}, 1);
  ASSERT_TRUE(bf16.is_ok()) << bf16.status();
  EXPECT_TRUE((*bf16)->autocast());
  const auto L = small().seq_len;
  const auto a = tokens(3, L);
  auto exact = f32->sample_losses(a, 3);
  auto cast = (*bf16)->sample_losses(a, 3);
  ASSERT_TRUE(exact.is_ok() && cast.is_ok());
  bool differs = false;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR((*cast)[i], (*exact)[i], 0.02 * (*exact)[i]);
    differs |= (*cast)[i] != (*exact)[i];
  }
  EXPECT_TRUE(differs) << "autocast did not take effect";
  EXPECT_EQ(f32->sample_losses(a, 3).value(), *exact);  // nothing left switched on
  auto g = (*bf16)->gradient(a, 3);
  ASSERT_TRUE(g.is_ok()) << g.status();
  for (const auto& t : *g)
    for (float v : t) ASSERT_TRUE(std::isfinite(v));
  const auto pos = first_positions(f32->specs());
  EXPECT_EQ((*bf16)->values_at(pos), f32->values_at(pos));  // the parameters untouched, f32
}

// The replica on a GPU (skipped where there is none): the same initial
// parameters as on the CPU, f32 losses close to the CPU's, a probe that
// puts the model back bit for bit, an update applied as on the CPU, and
// bf16 autocast on by default ("auto") and close to f32.
TEST(ReplicaOnCuda, MatchesTheCpuAndProbesBackBitForBit) {
  auto gpu = Replica::create(small(), ReplicaOptions{"cuda", 1, "off"}, 1);
  if (!gpu.is_ok()) GTEST_SKIP() << "no GPU here: " << gpu.status();
  auto& r = **gpu;
  EXPECT_TRUE(r.on_cuda());
  EXPECT_FALSE(r.autocast());
  auto cpu = make(1);
  const auto pos = first_positions(r.specs());
  EXPECT_EQ(r.values_at(pos), cpu->values_at(pos));
  const auto L = small().seq_len;
  const auto a = tokens(3, L), b = tokens(2, L);
  auto on_gpu = r.sample_losses(a, 3);
  auto on_cpu = cpu->sample_losses(a, 3);
  ASSERT_TRUE(on_gpu.is_ok()) << on_gpu.status();
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR((*on_gpu)[i], (*on_cpu)[i], 1e-3 * (*on_cpu)[i]);
  const auto update = filled(r.specs(), 0.01f);
  auto probed = r.probe_samples(update, 1.0, a, 3, b, 2);
  ASSERT_TRUE(probed.is_ok()) << probed.status();
  EXPECT_EQ(r.sample_losses(a, 3).value(), *on_gpu);  // back exactly
  ASSERT_TRUE(r.apply_update(update, 1.0).is_ok());
  ASSERT_TRUE(cpu->apply_update(update, 1.0).is_ok());
  const auto after_gpu = r.values_at(pos), after_cpu = cpu->values_at(pos);
  for (std::size_t t = 0; t < after_gpu.size(); ++t) {
    for (std::size_t i = 0; i < after_gpu[t].size(); ++i) EXPECT_NEAR(after_gpu[t][i], after_cpu[t][i], 1e-6);
  }
  auto g = r.gradient(a, 3);
  ASSERT_TRUE(g.is_ok()) << g.status();

  auto cast = Replica::create(small(), ReplicaOptions{"cuda", 1, "auto"}, 1);
  ASSERT_TRUE(cast.is_ok()) << cast.status();
  EXPECT_TRUE((*cast)->autocast());
  auto bf16 = (*cast)->sample_losses(a, 3);
  ASSERT_TRUE(bf16.is_ok()) << bf16.status();
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR((*bf16)[i], (*on_cpu)[i], 0.02 * (*on_cpu)[i]);
}

}  // namespace
}  // namespace crucible::model
