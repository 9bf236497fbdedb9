// Does crucible's protocol learn as well as centralised training? Three
// trainers on the same model, data, initial weights and token budget, in one
// run:
//   (a) adamw    one process, AdamW over every worker's samples in turn
//                (N·H steps of the same micro-batch per outer step);
//   (a2) adamw, N× batch: one process, H steps of N·B samples per outer
//                step (synchronous data parallelism: the same tokens, the
//                same number of sequential steps as a worker);
//   (b) diloco   N workers, H AdamW steps each from the global model, the
//                dense pseudo-gradients averaged, θ ← θ − outer_lr · mean;
//   (c) crucible N workers as (b), but each sends what a miner sends: error
//                feedback, top-k + 2-bit codec (protocol.md §3-4), and the
//                global step applies the §8 merge of those packets.
// Worker i trains on uid i's protocol assignment for window w (§2), the
// samples a miner of uid i would get, and the optimiser settings are the
// miner's (configs and flags below). Held-out loss = mean next-token loss
// over the first --eval-samples samples of the val split, the validator's
// measure (validator.heldout_samples).
//
//   convergence --data DIR --model configs/models/small.toml --workers 4
//               --outer-steps 40 [--inner-steps 4 --micro-batch 4 --lr 3e-3
//               --outer-lr 0.7 --ef-beta 0.95 --eval-every 5
//               --eval-samples 64 --threads 2 --init-seed 1]
//
// Prints a table of held-out loss at each checkpoint and the ratios,
// then the bytes each worker sends per outer step (a sealed packet for (c),
// dense float32 for (b)) and their ratio.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crucible/common/dataset.h"
#include "crucible/common/model_config.h"
#include "crucible/common/replica.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/miner/inner_loop.h"
#include "crucible/protocol/update.h"

namespace {

using namespace crucible;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string data, model = "configs/models/tiny.toml";
  int workers = 4, outer_steps = 20, eval_every = 5, threads = 2;
  std::uint32_t inner_steps = 4, micro_batch = 4, eval_samples = 64;
  double lr = 3e-3, outer_lr = 0.7, ef_beta = 0.95;
  std::uint64_t init_seed = 1;
};

[[noreturn]] void usage(const std::string& why) {
  fmt::print(stderr,
             "convergence: {}\nusage: convergence --data DIR [--model TOML] [--workers N] [--outer-steps N]\n"
             "  [--inner-steps H] [--micro-batch B] [--lr X] [--outer-lr X] [--ef-beta X]\n"
             "  [--eval-every N] [--eval-samples N] [--threads N] [--init-seed N]\n",
             why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(fmt::format("{} needs a value", k));
    const std::string v = argv[i + 1];
    if (k == "--data")
      a.data = v;
    else if (k == "--model")
      a.model = v;
    else if (k == "--workers")
      a.workers = std::stoi(v);
    else if (k == "--outer-steps")
      a.outer_steps = std::stoi(v);
    else if (k == "--inner-steps")
      a.inner_steps = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--micro-batch")
      a.micro_batch = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--lr")
      a.lr = std::stod(v);
    else if (k == "--outer-lr")
      a.outer_lr = std::stod(v);
    else if (k == "--ef-beta")
      a.ef_beta = std::stod(v);
    else if (k == "--eval-every")
      a.eval_every = std::stoi(v);
    else if (k == "--eval-samples")
      a.eval_samples = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--threads")
      a.threads = std::stoi(v);
    else if (k == "--init-seed")
      a.init_seed = std::stoull(v);
    else
      usage(fmt::format("unknown flag {}", k));
  }
  if (a.data.empty()) usage("--data is required");
  if (a.workers < 1 || a.workers > 64 || a.outer_steps < 1 || a.inner_steps < 1 || a.micro_batch < 1 ||
      a.eval_every < 1) {
    usage("workers 1..64, and outer steps, inner steps, micro-batch and eval-every at least 1");
  }
  return a;
}

template <typename T>
T must(Result<T> r, const char* what) {
  if (!r.is_ok()) {
    fmt::print(stderr, "convergence: {}: {}\n", what, r.status().to_string());
    std::exit(1);
  }
  return std::move(*r);
}

void must(const Status& s, const char* what) {
  if (!s.is_ok()) {
    fmt::print(stderr, "convergence: {}: {}\n", what, s.to_string());
    std::exit(1);
  }
}

// What the three trainers share: data, settings, held-out measure.
struct Setup {
  Args a;
  model::ModelConfig config;
  std::optional<data::Dataset> train, val;  // opened in main
  miner::MinerOptions miner;
  std::uint64_t seq_len = 0, samples = 0;  // samples per worker per outer step = H·B

  // Worker i's tokens for outer step w: uid i's assignment (protocol.md §2).
  std::vector<std::int64_t> tokens(int worker, int w) const {
    auto idx =
        must(train->assignment(static_cast<std::uint16_t>(worker), static_cast<std::uint64_t>(w) + 1, samples, seq_len),
             "assignment");
    return must(train->tokens(idx, seq_len), "tokens");
  }
  double heldout(model::Replica& r) const { return must(model::dataset_loss(r, *val, a.eval_samples), "held-out"); }
  std::unique_ptr<model::Replica> replica() const {
    return must(model::Replica::create(config, {"cpu", a.threads}, a.init_seed), "replica");
  }
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  virtual void outer_step(const Setup& s, int w) = 0;
  model::Replica& replica() { return *replica_; }
  double seconds = 0;

 protected:
  std::unique_ptr<model::Replica> replica_;
};

// (a) one AdamW over the samples of all workers: N·H steps of B samples,
// or (a2, large_batch) H steps of N·B samples.
class AdamW final : public Trainer {
 public:
  AdamW(const Setup& s, bool large_batch) {
    replica_ = s.replica();
    miner::MinerOptions o = s.miner;
    const auto n = static_cast<std::uint32_t>(s.a.workers);
    if (large_batch) {
      o.micro_batch = n * s.miner.micro_batch;
    } else {
      o.inner_steps = n * s.miner.inner_steps;
    }
    loop_ = must(miner::InnerLoop::create(*replica_, o), "adamw");
  }
  void outer_step(const Setup& s, int w) override {
    std::vector<std::int64_t> all;
    for (int i = 0; i < s.a.workers; ++i) {
      auto t = s.tokens(i, w);
      all.insert(all.end(), t.begin(), t.end());
    }
    const auto n = static_cast<std::int64_t>(s.samples) * s.a.workers;
    auto r = must(loop_->train_window(all, n, {}, nullptr), "adamw step");
    must(replica_->apply_update(r.delta, 1.0), "adamw apply");
  }

 private:
  std::unique_ptr<miner::InnerLoop> loop_;
};

// (b) and (c): N workers on one replica (each starts from the global model;
// train_window puts it back), one AdamW state each.
class Workers : public Trainer {
 public:
  explicit Workers(const Setup& s) {
    replica_ = s.replica();
    for (int i = 0; i < s.a.workers; ++i)
      loops_.push_back(must(miner::InnerLoop::create(*replica_, s.miner), "worker"));
  }
  void outer_step(const Setup& s, int w) override {
    std::vector<model::TensorValues> deltas;
    for (int i = 0; i < s.a.workers; ++i) {
      auto t = s.tokens(i, w);
      deltas.push_back(
          must(loops_[static_cast<std::size_t>(i)]->train_window(t, static_cast<std::int64_t>(s.samples), {}, nullptr),
               "inner steps")
              .delta);
    }
    must(replica_->apply_update(combine(s, deltas), s.a.outer_lr), "outer step");
  }

 protected:
  virtual model::TensorValues combine(const Setup& s, std::vector<model::TensorValues>& deltas) = 0;

 private:
  std::vector<std::unique_ptr<miner::InnerLoop>> loops_;
};

class DenseDiLoCo final : public Workers {
 public:
  using Workers::Workers;

 protected:
  model::TensorValues combine(const Setup& s, std::vector<model::TensorValues>& deltas) override {
    model::TensorValues mean = deltas[0];
    for (std::size_t t = 0; t < mean.size(); ++t) {
      for (std::size_t j = 0; j < mean[t].size(); ++j) {
        double sum = 0;
        for (const auto& d : deltas) sum += d[t][j];
        mean[t][j] = static_cast<float>(sum / s.a.workers);
      }
    }
    return mean;
  }
};

class Crucible final : public Workers {
 public:
  explicit Crucible(const Setup& s) : Workers(s) {
    for (int i = 0; i < s.a.workers; ++i) {
      model::TensorValues e;
      for (const auto& spec : replica_->specs()) e.emplace_back(static_cast<std::size_t>(spec.numel()), 0.0f);
      ef_.push_back(std::move(e));
    }
  }

 protected:
  model::TensorValues combine(const Setup& s, std::vector<model::TensorValues>& deltas) override {
    const auto& specs = replica_->specs();
    std::vector<protocol::PeerTensors> peers;
    for (std::size_t i = 0; i < deltas.size(); ++i) {
      protocol::PeerTensors p{static_cast<std::uint16_t>(i), {}};
      for (std::size_t t = 0; t < specs.size(); ++t) {
        p.tensors.push_back(must(kernels::error_feedback_step(ef_[i][t], deltas[i][t], specs[t].shape,
                                                              static_cast<float>(s.a.ef_beta), s.a.threads),
                                 "compress"));
      }
      peers.push_back(std::move(p));
    }
    return must(protocol::merge_updates(peers, specs), "merge");
  }

 private:
  std::vector<model::TensorValues> ef_;  // per worker, per tensor
};

}  // namespace

int main(int argc, char** argv) {
  Setup s;
  s.a = parse(argc, argv);
  s.config = must(model::load_model_config(s.a.model), "model");
  s.train.emplace(must(data::Dataset::open(s.a.data, "train"), "train split"));
  s.val.emplace(must(data::Dataset::open(s.a.data, "val"), "val split"));
  if (s.train->info().vocab_size != static_cast<std::uint32_t>(s.config.vocab_size)) {
    usage(fmt::format("the data's vocabulary is {} tokens, the model's {}", s.train->info().vocab_size,
                      s.config.vocab_size));
  }
  s.seq_len = static_cast<std::uint64_t>(s.config.seq_len);
  s.samples = std::uint64_t{s.a.inner_steps} * s.a.micro_batch;
  s.miner.inner_steps = s.a.inner_steps;
  s.miner.micro_batch = s.a.micro_batch;
  s.miner.lr = s.a.lr;
  s.miner.warmup_steps = 0;
  s.miner.ef_beta = s.a.ef_beta;
  s.miner.threads = s.a.threads;

  std::vector<std::pair<std::string, std::unique_ptr<Trainer>>> trainers;
  trainers.emplace_back("(a) adamw", std::make_unique<AdamW>(s, false));
  trainers.emplace_back("(a2) adamw, N× batch", std::make_unique<AdamW>(s, true));
  trainers.emplace_back("(b) dense diloco", std::make_unique<DenseDiLoCo>(s));
  trainers.emplace_back("(c) crucible", std::make_unique<Crucible>(s));
  const std::int64_t params = trainers[0].second->replica().num_parameters();
  const std::uint64_t tokens_per_step = s.samples * s.seq_len * static_cast<std::uint64_t>(s.a.workers);
  fmt::print(
      "model {} ({:.1f}M parameters), {} workers, H={} B={} lr={} outer_lr={} ef_beta={}, "
      "{} tokens per outer step, held-out: {} val samples, {} threads\n\n",
      s.a.model, static_cast<double>(params) / 1e6, s.a.workers, s.a.inner_steps, s.a.micro_batch, s.a.lr, s.a.outer_lr,
      s.a.ef_beta, tokens_per_step, s.a.eval_samples, s.a.threads);
  fmt::print(
      "| outer step | tokens | (a) adamw | (a2) adamw, N× batch | (b) dense diloco | (c) crucible | (b)/(a) "
      "| (c)/(a) | (c)/(a2) | (c)/(b) |\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<double> loss(trainers.size());
  auto report = [&](int step) {
    for (std::size_t t = 0; t < trainers.size(); ++t) loss[t] = s.heldout(trainers[t].second->replica());
    fmt::print("| {} | {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} |\n", step,
               tokens_per_step * static_cast<std::uint64_t>(step), loss[0], loss[1], loss[2], loss[3],
               loss[2] / loss[0], loss[3] / loss[0], loss[3] / loss[1], loss[3] / loss[2]);
    std::fflush(stdout);
  };
  report(0);
  for (int w = 0; w < s.a.outer_steps; ++w) {
    for (auto& [name, t] : trainers) {
      const auto t0 = Clock::now();
      t->outer_step(s, w);
      t->seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    if ((w + 1) % s.a.eval_every == 0 || w + 1 == s.a.outer_steps) report(w + 1);
  }
  const auto packet = must(protocol::expected_packet_bytes(trainers[0].second->replica().specs()), "packet size");
  const auto dense = static_cast<std::uint64_t>(params) * 4;
  fmt::print(
      "\nbytes sent per worker per outer step: (c) crucible {} (sealed packet), (b) dense diloco {} "
      "(float32), ratio {:.1f}x fewer\n",
      packet, dense, static_cast<double>(dense) / static_cast<double>(packet));
  fmt::print("final held-out loss: (c) is {:+.2f}% against (a), {:+.2f}% against (a2), {:+.2f}% against (b)\n",
             100.0 * (loss[3] / loss[0] - 1), 100.0 * (loss[3] / loss[1] - 1), 100.0 * (loss[3] / loss[2] - 1));
  fmt::print("seconds of training: (a) {:.0f}, (a2) {:.0f}, (b) {:.0f}, (c) {:.0f}\n", trainers[0].second->seconds,
             trainers[1].second->seconds, trainers[2].second->seconds, trainers[3].second->seconds);
  return 0;
}
