#include "crucible/common/model.h"

#include <gtest/gtest.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "crucible/common/sampler.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible::model {
namespace {

ModelConfig micro() {
  ModelConfig c;
  c.vocab_size = 256;
  c.dim = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.hidden_dim = 64;
  c.seq_len = 16;
  c.tie_embeddings = false;
  return c;
}

at::Tensor batch(std::int64_t b, std::int64_t t, std::int64_t vocab, std::uint64_t seed) {
  at::Tensor out = at::empty({b, t}, at::kLong);
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < b * t; ++i)
    out.data_ptr<std::int64_t>()[i] = static_cast<std::int64_t>(rng.below(vocab));
  return out;
}

TEST(ModelConfigFile, PresetsLoadAndHaveTheAdvertisedSizes) {
  const std::filesystem::path dir = std::filesystem::path(CRUCIBLE_SOURCE_DIR) / "configs/models";
  auto tiny = load_model_config((dir / "tiny.toml").string());
  auto small = load_model_config((dir / "small.toml").string());
  auto big = load_model_config((dir / "1b.toml").string());
  ASSERT_TRUE(tiny.is_ok() && small.is_ok() && big.is_ok()) << tiny.status() << small.status() << big.status();
  EXPECT_NEAR(static_cast<double>(tiny->num_parameters()), 1e6, 0.2e6);
  EXPECT_GE(small->num_parameters(), 20'000'000);
  EXPECT_LE(small->num_parameters(), 30'000'000);
  EXPECT_NEAR(static_cast<double>(big->num_parameters()), 1e9, 0.15e9);
}

TEST(ModelConfigFile, UnknownKeysAndBadShapesAreErrors) {
  testing::TempDir dir;
  EXPECT_FALSE(load_model_config(dir.write("a.toml", "[model]\ndimm = 3\n")).is_ok());
  auto bad = load_model_config(dir.write("b.toml", "[model]\ndim = 130\nn_heads = 4\n"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("n_heads"), std::string::npos);
}

TEST(Llama, HasHuggingFaceNamesAndTheConfigsParameterCount) {
  auto m = Llama::create(micro(), 1);
  ASSERT_TRUE(m.is_ok()) << m.status();
  const auto& p = m->parameters();
  EXPECT_EQ(p.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(p[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(p[3].tensor.sizes().vec(), (std::vector<std::int64_t>{16, 32}));  // k_proj with 2 kv heads
  EXPECT_EQ(p.back().name, "lm_head.weight");
  EXPECT_EQ(m->num_parameters(), micro().num_parameters());
  ModelConfig tied = micro();
  tied.tie_embeddings = true;
  auto t = Llama::create(tied, 1);
  EXPECT_EQ(t->parameters().back().name, "model.norm.weight");
  EXPECT_EQ(t->num_parameters(), tied.num_parameters());
}

TEST(Llama, InitialisationIsASpecifiedFunctionOfTheSeed) {
  auto a = Llama::create(micro(), 7), b = Llama::create(micro(), 7), c = Llama::create(micro(), 8);
  for (std::size_t i = 0; i < a->parameters().size(); ++i) {
    EXPECT_TRUE(a->parameters()[i].tensor.equal(b->parameters()[i].tensor));
  }
  EXPECT_FALSE(a->parameters()[0].tensor.equal(c->parameters()[0].tensor));
  // The stream itself (docs/protocol.md): its first values and its moments.
  std::vector<float> v = init_normal(7, "model.embed_tokens.weight", 100000, 0.02);
  EXPECT_EQ(v[0], a->parameters()[0].tensor.data_ptr<float>()[0]);
  double mean = 0, sq = 0;
  for (float x : v) mean += x, sq += double(x) * x;
  mean /= v.size();
  EXPECT_NEAR(mean, 0.0, 0.0005);
  EXPECT_NEAR(std::sqrt(sq / v.size()), 0.02, 0.0005);
  // norm weights start at one
  EXPECT_TRUE(a->parameters()[1].tensor.eq(1).all().item<bool>());
}

// protocol.genesis_sha256: a function of the config and the seed, and of
// every value.
TEST(Llama, ParametersSha256NamesTheGenesisModel) {
  auto a = Llama::create(micro(), 7), b = Llama::create(micro(), 7), c = Llama::create(micro(), 8);
  const std::string digest = a->parameters_sha256();
  EXPECT_EQ(digest.size(), 64u);
  EXPECT_EQ(digest, b->parameters_sha256());
  EXPECT_NE(digest, c->parameters_sha256());
  ModelConfig wider = micro();
  wider.hidden_dim += 8;
  EXPECT_NE(digest, Llama::create(wider, 7)->parameters_sha256());
  at::NoGradGuard no_grad;
  b->parameters().back().tensor.view(-1)[0].add_(1e-6f);
  EXPECT_NE(digest, b->parameters_sha256());
}

TEST(Llama, InitialLossIsNearUniformAndAttentionIsCausal) {
  auto m = Llama::create(micro(), 3);
  at::Tensor x = batch(2, 16, 256, 1);
  float loss = m->loss(x).item<float>();
  EXPECT_NEAR(loss, std::log(256.0f), 0.2f);

  at::Tensor changed = x.clone();
  changed.index_put_({0, 15}, (x.index({0, 15}).item<std::int64_t>() + 1) % 256);
  at::Tensor a = m->logits(x), b = m->logits(changed);
  // Positions before the change see the same logits; the last one differs.
  EXPECT_TRUE(at::allclose(a.narrow(1, 0, 15), b.narrow(1, 0, 15)));
  EXPECT_FALSE(at::allclose(a.narrow(1, 15, 1), b.narrow(1, 15, 1)));
}

TEST(Llama, AdamWStepsLowerTheLossOnABatch) {
  auto m = Llama::create(micro(), 3);
  m->set_requires_grad(true);
  torch::optim::AdamW opt(m->tensors(), torch::optim::AdamWOptions(3e-3));
  at::Tensor x = batch(4, 16, 256, 2);
  float first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    at::Tensor loss = m->loss(x);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_LT(last, first - 0.5f);
}

TEST(Llama, SafetensorsRoundTripAndRefusals) {
  testing::TempDir dir;
  auto a = Llama::create(micro(), 11);
  ASSERT_TRUE(a->save(dir.path() / "m.safetensors", {{"window", "5"}}).is_ok());
  auto b = Llama::create(micro(), 12);
  ASSERT_TRUE(b->load(dir.path() / "m.safetensors").is_ok());
  for (std::size_t i = 0; i < a->parameters().size(); ++i) {
    EXPECT_TRUE(a->parameters()[i].tensor.equal(b->parameters()[i].tensor)) << a->parameters()[i].name;
  }
  auto file = safetensors::read_file(dir.path() / "m.safetensors");
  EXPECT_EQ(file->metadata.at("window"), "5");
  EXPECT_EQ(file->metadata.at("crucible.model"), micro().canonical());

  ModelConfig other = micro();
  other.hidden_dim = 96;
  auto c = Llama::create(other, 1);
  at::Tensor before = c->parameters()[0].tensor.clone();
  EXPECT_EQ(c->load(dir.path() / "m.safetensors").code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(c->parameters()[0].tensor.equal(before));  // nothing changed

  // NaN in a checkpoint is refused and changes nothing.
  a->parameters()[5].tensor.view({-1})[0] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(a->save(dir.path() / "nan.safetensors").is_ok());
  at::Tensor kept = b->parameters()[5].tensor.clone();
  EXPECT_EQ(b->load(dir.path() / "nan.safetensors").code(), StatusCode::kDataLoss);
  EXPECT_TRUE(b->parameters()[5].tensor.equal(kept));
}

// The checkpoint read by an independent reader (numpy, from the format's spec).
TEST(Llama, CheckpointIsReadableFromPython) {
  if (!std::filesystem::exists("/usr/bin/python3") ||
      testing::run_process({"/usr/bin/python3", "-c", "import numpy"}).exit_code != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not installed";
  }
  testing::TempDir dir;
  auto m = Llama::create(micro(), 5);
  ASSERT_TRUE(m->save(dir.path() / "m.safetensors").is_ok());
  auto r =
      testing::run_process({"/usr/bin/python3", std::string(CRUCIBLE_SOURCE_DIR) + "/tests/model/read_safetensors.py",
                            (dir.path() / "m.safetensors").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["metadata"]["format"], "pt");
  ASSERT_EQ(j["tensors"].size(), m->parameters().size());
  for (const auto& p : m->parameters()) {
    const auto& t = j["tensors"][p.name];
    EXPECT_EQ(t["dtype"], "F32");
    EXPECT_EQ(t["shape"].get<std::vector<std::int64_t>>(), p.tensor.sizes().vec());
    EXPECT_NEAR(t["sum"].get<double>(), p.tensor.to(at::kDouble).sum().item<double>(), 1e-6) << p.name;
    EXPECT_EQ(t["first"].get<double>(), static_cast<double>(p.tensor.view({-1})[0].item<float>()));
  }
}

}  // namespace
}  // namespace crucible::model

namespace crucible::model {
namespace {

// The forward pass against an independent numpy implementation of the
// Hugging Face Llama definitions, on the saved checkpoint: names, layouts,
// RoPE convention and grouped-query attention must all agree.
TEST(Llama, LogitsMatchAnIndependentNumpyLlama) {
  if (testing::run_process({"/usr/bin/python3", "-c", "import numpy"}).exit_code != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not installed";
  }
  testing::TempDir dir;
  ModelConfig c = micro();
  auto m = Llama::create(c, 9);
  ASSERT_TRUE(m->save(dir.path() / "m.safetensors").is_ok());
  at::Tensor x = batch(1, 12, c.vocab_size, 4);
  std::vector<std::int64_t> tokens(x.data_ptr<std::int64_t>(), x.data_ptr<std::int64_t>() + 12);
  nlohmann::json cfg = {{"dim", c.dim},           {"n_heads", c.n_heads},       {"n_kv_heads", c.n_kv_heads},
                        {"n_layers", c.n_layers}, {"rope_theta", c.rope_theta}, {"norm_eps", c.norm_eps}};
  auto r =
      testing::run_process({"/usr/bin/python3", std::string(CRUCIBLE_SOURCE_DIR) + "/tests/model/llama_reference.py",
                            (dir.path() / "m.safetensors").string(), cfg.dump(), nlohmann::json(tokens).dump()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto expected = nlohmann::json::parse(r.out).get<std::vector<std::vector<double>>>();
  at::Tensor logits = m->logits(x)[0];
  ASSERT_EQ(expected.size(), 12u);
  double worst = 0;
  for (std::int64_t t = 0; t < 12; ++t) {
    for (std::int64_t v = 0; v < c.vocab_size; ++v) {
      worst = std::max(worst, std::abs(expected[t][v] - logits[t][v].item<double>()));
    }
  }
  EXPECT_LT(worst, 1e-4);
}

}  // namespace
}  // namespace crucible::model
