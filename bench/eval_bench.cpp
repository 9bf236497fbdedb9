// The validator's evaluation throughput: miners evaluated per minute.
//
//   eval_bench [--model configs/models/1b.toml] [--device cuda] [--miners 20] [--samples 4] [--threads 0]
//
// Per miner it does what the Gauntlet does (validator/src/evaluate.cpp):
// decode the miner's compressed update, every tensor, on the backend of
// --device (kernels/backend_codec.h; the result comes back to the host, as
// in the validator), then Replica::probe: the model with the update
// applied, losses on the miner's own samples and on random samples, the
// model put back bit for bit. Plus the window's two baseline losses, once.
// Updates are random at the codec's real density; tokens are random ids.
// Prints the seconds per miner (decode, probe) and miners per minute.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "crucible/common/model_config.h"
#include "crucible/common/replica.h"
#include "crucible/kernels/backend_codec.h"
#include "random_update.h"

namespace {

using namespace crucible;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <typename T>
T must(Result<T> r, const char* what) {
  if (!r.is_ok()) {
    fmt::print(stderr, "eval_bench: {}: {}\n", what, r.status().to_string());
    std::exit(1);
  }
  return std::move(*r);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "configs/models/1b.toml", device = "cuda";
  int miners = 20, samples = 4, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--model")
      model = argv[i + 1];
    else if (a == "--device")
      device = argv[i + 1];
    else if (a == "--miners")
      miners = std::atoi(argv[i + 1]);
    else if (a == "--samples")
      samples = std::atoi(argv[i + 1]);
    else if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
    else {
      fmt::print(stderr,
                 "usage: eval_bench [--model F] [--device cpu|cuda] [--miners N] [--samples N] [--threads N]\n");
      return 2;
    }
  }
  const auto config = must(model::load_model_config(model), "model");
  auto t0 = Clock::now();
  auto replica = must(model::Replica::create(config, {device, threads}, 1), "replica");
  auto codec = must(kernels::backend_for(device, threads), "codec backend");
  fmt::print("model {} ({:.1f}M parameters) on {}: built in {:.1f} s\n", model,
             static_cast<double>(replica->num_parameters()) / 1e6, device, since(t0));
  const auto& specs = replica->specs();

  // Two distinct updates, alternated (generating one per miner would only time the generator).
  std::mt19937_64 rng(3);
  std::vector<std::vector<kernels::CompressedTensor>> updates(2);
  for (auto& u : updates) {
    for (const auto& s : specs)
      u.push_back(bench::random_update(must(kernels::layout_for(s.shape), "layout"), rng, 0.001f));
  }
  const std::int64_t L = config.seq_len;
  std::vector<std::int64_t> own(static_cast<std::size_t>(samples * L)), other(own.size());
  for (auto& t : own) t = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(config.vocab_size));
  for (auto& t : other) t = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(config.vocab_size));

  model::TensorValues dense(specs.size());
  for (std::size_t t = 0; t < specs.size(); ++t) {
    std::int64_t n = 1;
    for (auto d : specs[t].shape) n *= d;
    dense[t].resize(static_cast<std::size_t>(n));
  }
  t0 = Clock::now();
  const double base_own = must(replica->loss(own, samples), "loss");
  const double base_rand = must(replica->loss(other, samples), "loss");
  const double baseline_s = since(t0);
  double decode_s = 0, probe_s = 0;
  const auto all0 = Clock::now();
  for (int m = 0; m < miners; ++m) {
    auto t1 = Clock::now();
    const auto& u = updates[static_cast<std::size_t>(m % 2)];
    for (std::size_t t = 0; t < specs.size(); ++t) {
      if (Status st = kernels::decompress(*codec, u[t], dense[t]); !st.is_ok()) return must(Result<int>(st), "decode");
    }
    decode_s += since(t1);
    t1 = Clock::now();
    auto after = must(replica->probe(dense, 1.0, own, samples, other, samples), "probe");
    probe_s += since(t1);
    if (m == 0)
      fmt::print("losses before {:.4f} / {:.4f}, after {:.4f} / {:.4f}\n", base_own, base_rand, after.first,
                 after.second);
  }
  const double total = since(all0) + baseline_s;
  fmt::print(
      "| model | device | miners | samples per loss | decode s/miner | probe s/miner | total s | miners/min |\n");
  fmt::print("|---|---|---|---|---|---|---|---|\n");
  fmt::print("| {} | {} | {} | {} x {} tokens | {:.3f} | {:.3f} | {:.1f} | {:.1f} |\n", model, device, miners, samples,
             L, decode_s / miners, probe_s / miners, total, 60.0 * miners / total);
  return 0;
}
