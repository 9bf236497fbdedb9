// Does crucible's protocol learn as well as centralised training? Four
// trainers ("arms") on the same model, data, initial weights and token
// budget, in one run:
//   a   adamw    one process, AdamW over every worker's samples in turn
//                (N·H steps of the same micro-batch per outer step);
//   a2  adamw, N× batch: one process, H steps of N·B samples per outer
//                step (synchronous data parallelism: the same tokens, the
//                same number of sequential steps as a worker);
//   b   diloco   N workers, H AdamW steps each from the global model, the
//                dense pseudo-gradients averaged, θ ← θ − outer_lr · mean
//                (with --diloco-momentum M: Nesterov outer momentum, DiLoCo's
//                own outer optimiser);
//   c   crucible N workers as (b), but each sends what a miner sends: error
//                feedback, top-k + 2-bit codec (protocol.md §3-4), and the
//                global step applies the §8 merge of those packets.
// Worker i trains on uid i's protocol assignment for window w (§2), the
// samples a miner of uid i would get (with --seed S, uid i + 64·(S − 1):
// another data order, and init seed S), and the optimiser settings are the
// miner's. Held-out loss = mean next-token loss over the first
// --eval-samples samples of the val split, the validator's measure.
//
//   convergence --data DIR [--model TOML] [--workers 4] [--outer-steps 20]
//     [--inner-steps 4] [--micro-batch 4] [--lr 3e-3] [--outer-lr 0.7]
//     [--outer-lr-late X --outer-lr-switch N]   outer lr X from step N on
//     [--outer-lr-final X --outer-lr-final-switch N]   and X from step N on (a second drop)
//     [--decay-steps N]   inner lr: cosine to 0.1x over N inner steps (the miner's)
//     [--diloco-momentum M] [--crucible-momentum M]   Nesterov, 0 = none
//     [--topk K] [--dense-first N --dense-topk K]     values kept per 4,096
//     [--ef-beta 0.8] [--clip 1|0] [--seed 1] [--arms a,a2,b,c]
//     [--eval-every 5] [--eval-samples 64] [--threads 2]
//     [--state DIR [--save-every 10]] [--svg FILE]
//   convergence --plot FILE.svg [--title T] RUN_DIR...
//
// With --state the run writes its trainers (weights, AdamW moments, error
// feedback, outer momentum) every --save-every outer steps and its losses
// at every evaluation; run again with the same flags (a larger
// --outer-steps allowed) and it goes on from the last save. --plot reads
// the losses.csv of several runs (seeds) and draws their mean and spread
// per arm against tokens, and prints the table.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crucible/common/dataset.h"
#include "crucible/common/file_io.h"
#include "crucible/common/model_config.h"
#include "crucible/common/replica.h"
#include "crucible/common/safetensors.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/miner/inner_loop.h"
#include "crucible/protocol/options.h"
#include "crucible/protocol/update.h"

namespace {

using namespace crucible;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Args {
  std::string data, model = "configs/models/tiny.toml";
  int workers = 4, outer_steps = 20, eval_every = 5, threads = 2, save_every = 10;
  std::uint32_t inner_steps = 4, micro_batch = 4, eval_samples = 64;
  double lr = 3e-3, outer_lr = 0.7, ef_beta = 0.8;  // ef_beta: the miner's default
  double outer_lr_late = -1;                        // <= 0: outer_lr throughout
  int outer_lr_switch = 0;
  double outer_lr_final = -1;  // <= 0: no second drop
  int outer_lr_final_switch = 0;
  std::uint64_t decay_steps = 0;  // inner cosine decay over this many steps; 0: the miner's default
  double diloco_momentum = 0, crucible_momentum = 0;
  int topk = kernels::kTopKPer4096, dense_first = 0, dense_topk = kernels::kTopKPer4096;
  bool clip = true;
  std::uint64_t seed = 1;
  std::set<std::string> arms = {"a", "a2", "b", "c"};
  std::string state, svg;

  // What decides the numbers (a resumed run must match it).
  json identity() const {
    return {{"data", data},
            {"model", model},
            {"workers", workers},
            {"inner_steps", inner_steps},
            {"micro_batch", micro_batch},
            {"eval_samples", eval_samples},
            {"lr", lr},
            {"outer_lr", outer_lr},
            {"outer_lr_late", outer_lr_late},
            {"outer_lr_switch", outer_lr_switch},
            {"diloco_momentum", diloco_momentum},
            {"crucible_momentum", crucible_momentum},
            {"topk", topk},
            {"dense_first", dense_first},
            {"dense_topk", dense_topk},
            {"ef_beta", ef_beta},
            {"clip", clip},
            {"seed", seed},
            {"arms", arms}};
  }
  // Keys added later join the identity only when set, so that older runs still resume.
  json full_identity() const {
    json j = identity();
    if (decay_steps != 0) j["decay_steps"] = decay_steps;
    if (outer_lr_final >= 0) {
      j["outer_lr_final"] = outer_lr_final;
      j["outer_lr_final_switch"] = outer_lr_final_switch;
    }
    return j;
  }
  // The protocol's schedule (protocol::OuterLr, where a rate of 0 is off)
  // with outer step w as the global step and one sample a step: the switch
  // flags count outer steps (the protocol's samples thresholds divided by
  // inner_steps × micro_batch, the samples a worker trains a step).
  double outer_lr_at(int w) const {
    const protocol::OuterLr schedule{
        outer_lr, std::max(outer_lr_late, 0.0), static_cast<std::uint64_t>(std::max(outer_lr_switch, 0)),
        std::max(outer_lr_final, 0.0), static_cast<std::uint64_t>(std::max(outer_lr_final_switch, 0))};
    return schedule.at(static_cast<std::uint64_t>(w));
  }
  int topk_at(int w) const { return w < dense_first ? dense_topk : topk; }
};

[[noreturn]] void usage(const std::string& why) {
  fmt::print(stderr,
             "convergence: {}\nusage: convergence --data DIR [--model TOML] [--workers N] [--outer-steps N]\n"
             "  [--inner-steps H] [--micro-batch B] [--lr X] [--outer-lr X] [--outer-lr-late X --outer-lr-switch N]\n"
             "  [--outer-lr-final X --outer-lr-final-switch N] [--decay-steps N]\n"
             "  [--diloco-momentum M] [--crucible-momentum M] [--topk K] [--dense-first N --dense-topk K]\n"
             "  [--ef-beta X] [--clip 1|0] [--seed S] [--arms a,a2,b,c] [--eval-every N] [--eval-samples N]\n"
             "  [--threads N] [--state DIR [--save-every N]] [--svg FILE]\n"
             "       convergence --plot FILE.svg [--title T] RUN_DIR...\n",
             why);
  std::exit(2);
}

std::set<std::string> parse_arms(const std::string& v) {
  std::set<std::string> out;
  std::stringstream in(v);
  for (std::string a; std::getline(in, a, ',');) {
    if (a != "a" && a != "a2" && a != "b" && a != "c") usage(fmt::format("unknown arm '{}' (a, a2, b, c)", a));
    out.insert(a);
  }
  if (out.empty()) usage("--arms names none");
  return out;
}

void set_flag(Args& a, const std::string& k, const std::string& v) {
  auto u32 = [&] { return static_cast<std::uint32_t>(std::stoul(v)); };
  if (k == "--data")
    a.data = v;
  else if (k == "--model")
    a.model = v;
  else if (k == "--workers")
    a.workers = std::stoi(v);
  else if (k == "--outer-steps")
    a.outer_steps = std::stoi(v);
  else if (k == "--inner-steps")
    a.inner_steps = u32();
  else if (k == "--micro-batch")
    a.micro_batch = u32();
  else if (k == "--lr")
    a.lr = std::stod(v);
  else if (k == "--outer-lr")
    a.outer_lr = std::stod(v);
  else if (k == "--outer-lr-late")
    a.outer_lr_late = std::stod(v);
  else if (k == "--outer-lr-switch")
    a.outer_lr_switch = std::stoi(v);
  else if (k == "--outer-lr-final")
    a.outer_lr_final = std::stod(v);
  else if (k == "--outer-lr-final-switch")
    a.outer_lr_final_switch = std::stoi(v);
  else if (k == "--decay-steps")
    a.decay_steps = std::stoull(v);
  else if (k == "--diloco-momentum")
    a.diloco_momentum = std::stod(v);
  else if (k == "--crucible-momentum")
    a.crucible_momentum = std::stod(v);
  else if (k == "--topk")
    a.topk = std::stoi(v);
  else if (k == "--dense-first")
    a.dense_first = std::stoi(v);
  else if (k == "--dense-topk")
    a.dense_topk = std::stoi(v);
  else if (k == "--ef-beta")
    a.ef_beta = std::stod(v);
  else if (k == "--clip")
    a.clip = v != "0";
  else if (k == "--seed")
    a.seed = std::stoull(v);
  else if (k == "--arms")
    a.arms = parse_arms(v);
  else if (k == "--eval-every")
    a.eval_every = std::stoi(v);
  else if (k == "--eval-samples")
    a.eval_samples = u32();
  else if (k == "--threads")
    a.threads = std::stoi(v);
  else if (k == "--state")
    a.state = v;
  else if (k == "--save-every")
    a.save_every = std::stoi(v);
  else if (k == "--svg")
    a.svg = v;
  else
    usage(fmt::format("unknown flag {}", k));
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) usage(fmt::format("{} needs a value", argv[i]));
    try {
      set_flag(a, argv[i], argv[i + 1]);
    } catch (const std::logic_error&) {
      usage(fmt::format("{}: '{}' is not a number", argv[i], argv[i + 1]));
    }
  }
  if (a.data.empty()) usage("--data is required");
  if (a.workers < 1 || a.workers > 64 || a.outer_steps < 1 || a.inner_steps < 1 || a.micro_batch < 1 ||
      a.eval_every < 1 || a.save_every < 1 || a.seed < 1 || a.seed > 1000) {
    usage("workers 1..64, seed 1..1000, and outer steps, inner steps, micro-batch, eval-every, save-every >= 1");
  }
  for (int k : {a.topk, a.dense_topk}) {
    if (k < 2 || k > 4096 || k % 2 != 0) usage("--topk and --dense-topk: an even count in 2..4096");
  }
  for (double m : {a.diloco_momentum, a.crucible_momentum}) {
    if (m < 0 || m >= 1) usage("outer momentum in [0, 1)");
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

// What the trainers share: data, settings, held-out measure.
struct Setup {
  Args a;
  model::ModelConfig config;
  std::optional<data::Dataset> train, val;  // opened in main
  miner::MinerOptions miner;
  std::uint64_t seq_len = 0, samples = 0;  // samples per worker per outer step = H·B

  // Worker i's tokens for outer step w: uid i's assignment (protocol.md §2),
  // uids shifted by 64 per seed (another data order).
  std::vector<std::int64_t> tokens(int worker, int w) const {
    const auto uid = static_cast<std::uint16_t>(worker + 64 * static_cast<int>(a.seed - 1));
    auto idx = must(train->assignment(uid, static_cast<std::uint64_t>(w) + 1, samples, seq_len), "assignment");
    return must(train->tokens(idx, seq_len), "tokens");
  }
  double heldout(model::Replica& r) const { return must(model::dataset_loss(r, *val, a.eval_samples), "held-out"); }
  std::unique_ptr<model::Replica> replica() const {
    return must(model::Replica::create(config, {"cpu", a.threads}, a.seed), "replica");
  }
};

model::TensorValues zeros_like(const model::Replica& r) {
  model::TensorValues out;
  for (const auto& spec : r.specs()) out.emplace_back(static_cast<std::size_t>(spec.numel()), 0.0f);
  return out;
}

// Buffers (error feedback, momentum) as one safetensors file, "<name>.<i>".
Status save_buffers(const fs::path& file, const std::vector<model::TensorValues>& sets) {
  std::vector<safetensors::TensorView> views;
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (std::size_t t = 0; t < sets[s].size(); ++t) {
      const auto& v = sets[s][t];
      views.push_back({fmt::format("{}.{}", s, t),
                       safetensors::DType::kF32,
                       {static_cast<std::int64_t>(v.size())},
                       ByteSpan(reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * 4)});
    }
  }
  return safetensors::write_file(file, views);
}

Status load_buffers(const fs::path& file, std::vector<model::TensorValues>& sets) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto f, safetensors::read_file(file));
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (std::size_t t = 0; t < sets[s].size(); ++t) {
      const auto* v = f.find(fmt::format("{}.{}", s, t));
      auto& out = sets[s][t];
      if (v == nullptr || v->data.size() != out.size() * 4)
        return data_loss("{}: buffer {}.{} missing", file.string(), s, t);
      std::memcpy(out.data(), v->data.data(), v->data.size());
    }
  }
  return Status::ok();
}

class Trainer {
 public:
  virtual ~Trainer() = default;
  virtual void outer_step(const Setup& s, int w) = 0;
  virtual Status save(const fs::path& dir) const = 0;
  virtual Status load(const fs::path& dir) = 0;
  model::Replica& replica() { return *replica_; }
  double seconds = 0;

 protected:
  std::unique_ptr<model::Replica> replica_;
};

Status save_loop(const miner::InnerLoop& loop, const fs::path& dir) {
  fs::create_directories(dir);
  CRUCIBLE_RETURN_IF_ERROR(loop.save(dir));
  const std::string steps = std::to_string(loop.steps_done());
  return files::write_file_atomic(dir / "steps", as_bytes(steps));
}

Status load_loop(miner::InnerLoop& loop, const fs::path& dir) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto steps, files::read_file(dir / "steps", 32));
  return loop.load(dir, std::stoull(std::string(steps.begin(), steps.end())));
}

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
  Status save(const fs::path& dir) const override { return save_loop(*loop_, dir); }
  Status load(const fs::path& dir) override { return load_loop(*loop_, dir); }

 private:
  std::unique_ptr<miner::InnerLoop> loop_;
};

// (b) and (c): N workers on one replica (each starts from the global model;
// train_window puts it back), one AdamW state each, and the outer step
// θ ← θ − lr·(Δ + μ·v) with v ← μ·v + Δ (Nesterov; plain when μ = 0).
class Workers : public Trainer {
 public:
  Workers(const Setup& s, double momentum) : momentum_(momentum) {
    replica_ = s.replica();
    for (int i = 0; i < s.a.workers; ++i)
      loops_.push_back(must(miner::InnerLoop::create(*replica_, s.miner), "worker"));
    if (momentum_ > 0) velocity_.push_back(zeros_like(*replica_));
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
    model::TensorValues step = combine(s, w, deltas);
    if (momentum_ > 0) {
      auto& v = velocity_[0];
      const auto mu = static_cast<float>(momentum_);
      for (std::size_t t = 0; t < step.size(); ++t) {
        for (std::size_t j = 0; j < step[t].size(); ++j) {
          v[t][j] = mu * v[t][j] + step[t][j];
          step[t][j] += mu * v[t][j];
        }
      }
    }
    must(replica_->apply_update(step, s.a.outer_lr_at(w)), "outer step");
  }
  Status save(const fs::path& dir) const override {
    for (std::size_t i = 0; i < loops_.size(); ++i)
      CRUCIBLE_RETURN_IF_ERROR(save_loop(*loops_[i], dir / fmt::format("w{}", i)));
    return save_buffers(dir / "buffers.safetensors", buffers());
  }
  Status load(const fs::path& dir) override {
    for (std::size_t i = 0; i < loops_.size(); ++i)
      CRUCIBLE_RETURN_IF_ERROR(load_loop(*loops_[i], dir / fmt::format("w{}", i)));
    auto b = buffers();
    CRUCIBLE_RETURN_IF_ERROR(load_buffers(dir / "buffers.safetensors", b));
    set_buffers(std::move(b));
    return Status::ok();
  }

 protected:
  virtual model::TensorValues combine(const Setup& s, int w, std::vector<model::TensorValues>& deltas) = 0;
  // Every buffer that carries over: the velocity, then the arm's own.
  virtual std::vector<model::TensorValues> buffers() const { return velocity_; }
  virtual void set_buffers(std::vector<model::TensorValues> b) { velocity_ = std::move(b); }
  std::vector<model::TensorValues> velocity_;  // one set, or none without momentum

 private:
  double momentum_;
  std::vector<std::unique_ptr<miner::InnerLoop>> loops_;
};

class DenseDiLoCo final : public Workers {
 public:
  explicit DenseDiLoCo(const Setup& s) : Workers(s, s.a.diloco_momentum) {}

 protected:
  model::TensorValues combine(const Setup& s, int, std::vector<model::TensorValues>& deltas) override {
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
  explicit Crucible(const Setup& s) : Workers(s, s.a.crucible_momentum) {
    for (int i = 0; i < s.a.workers; ++i) ef_.push_back(zeros_like(*replica_));
  }

 protected:
  model::TensorValues combine(const Setup& s, int w, std::vector<model::TensorValues>& deltas) override {
    const auto& specs = replica_->specs();
    std::vector<protocol::PeerTensors> peers;
    for (std::size_t i = 0; i < deltas.size(); ++i) {
      protocol::PeerTensors p{static_cast<std::uint16_t>(i), {}};
      for (std::size_t t = 0; t < specs.size(); ++t) {
        p.tensors.push_back(
            must(kernels::error_feedback_step(ef_[i][t], deltas[i][t], specs[t].shape, static_cast<float>(s.a.ef_beta),
                                              s.a.threads, s.a.topk_at(w)),
                 "compress"));
      }
      peers.push_back(std::move(p));
    }
    return s.a.clip ? must(protocol::merge_updates(peers, specs, *kernels::cpu_backend(1)), "merge")
                    : merge_unclipped(peers, specs);
  }
  std::vector<model::TensorValues> buffers() const override {
    auto b = velocity_;
    b.insert(b.end(), ef_.begin(), ef_.end());
    return b;
  }
  void set_buffers(std::vector<model::TensorValues> b) override {
    const std::size_t v = velocity_.size();
    velocity_.assign(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(v));
    ef_.assign(b.begin() + static_cast<std::ptrdiff_t>(v), b.end());
  }

 private:
  // The merge without the median-norm clip (--clip 0): each packet decoded,
  // the mean over the packets that kept a coordinate (protocol.md §8).
  static model::TensorValues merge_unclipped(const std::vector<protocol::PeerTensors>& peers,
                                             const std::vector<protocol::TensorSpec>& specs) {
    model::TensorValues sum;
    for (std::size_t t = 0; t < specs.size(); ++t) {
      const auto n = static_cast<std::size_t>(specs[t].numel());
      std::vector<float> total(n, 0.0f), count(n, 0.0f), one(n);
      for (const auto& p : peers) {
        must(kernels::decompress(p.tensors[t], one, 1), "decode");
        for (std::size_t j = 0; j < n; ++j) {
          total[j] += one[j];
          count[j] += one[j] != 0.0f ? 1.0f : 0.0f;
        }
      }
      for (std::size_t j = 0; j < n; ++j) total[j] = count[j] > 0 ? total[j] / count[j] : 0.0f;
      sum.push_back(std::move(total));
    }
    return sum;
  }
  std::vector<model::TensorValues> ef_;  // per worker, per tensor
};

// ---- the run: losses, saves, resume -------------------------------------

const std::map<std::string, std::string> kArmNames = {
    {"a", "(a) adamw"}, {"a2", "(a2) adamw, N× batch"}, {"b", "(b) dense diloco"}, {"c", "(c) crucible"}};
const std::vector<std::string> kArmOrder = {"a", "a2", "b", "c"};

using Losses = std::map<int, std::map<std::string, double>>;  // outer step -> arm -> held-out loss

std::string losses_csv(const Losses& losses, std::uint64_t tokens_per_step) {
  std::string out = "step,tokens,arm,loss\n";
  for (const auto& [step, arms] : losses) {
    for (const auto& [arm, loss] : arms) {
      out += fmt::format("{},{},{},{:.6f}\n", step, tokens_per_step * static_cast<std::uint64_t>(step), arm, loss);
    }
  }
  return out;
}

// step,tokens,arm,loss rows; tokens per step kept per file.
Result<std::pair<Losses, std::map<int, std::uint64_t>>> read_losses(const fs::path& file) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto bytes, files::read_file(file, 64 << 20));
  std::stringstream in(std::string(bytes.begin(), bytes.end()));
  std::string line;
  std::getline(in, line);
  if (line != "step,tokens,arm,loss") return data_loss("{}: not a losses.csv", file.string());
  Losses losses;
  std::map<int, std::uint64_t> tokens;
  while (std::getline(in, line)) {
    std::stringstream row(line);
    std::string step, tok, arm, loss;
    if (!std::getline(row, step, ',') || !std::getline(row, tok, ',') || !std::getline(row, arm, ',') ||
        !std::getline(row, loss)) {
      return data_loss("{}: bad row '{}'", file.string(), line);
    }
    losses[std::stoi(step)][arm] = std::stod(loss);
    tokens[std::stoi(step)] = std::stoull(tok);
  }
  return std::pair(std::move(losses), std::move(tokens));
}

class Run {
 public:
  explicit Run(Setup& s) : s_(s) {
    for (const auto& arm : kArmOrder) {
      if (!s.a.arms.count(arm)) continue;
      if (arm == "a" || arm == "a2") trainers_.emplace_back(arm, std::make_unique<AdamW>(s, arm == "a2"));
      if (arm == "b") trainers_.emplace_back(arm, std::make_unique<DenseDiLoCo>(s));
      if (arm == "c") trainers_.emplace_back(arm, std::make_unique<Crucible>(s));
    }
    tokens_per_step_ = s.samples * s.seq_len * static_cast<std::uint64_t>(s.a.workers);
  }

  // The step to start from: 0, or the last save's (its losses up to it).
  int resume() {
    if (s_.a.state.empty()) return 0;
    const fs::path dir(s_.a.state);
    fs::create_directories(dir);
    const fs::path ident = dir / "run.json";
    if (!fs::exists(ident)) {
      must(files::write_file_atomic(ident, as_bytes(s_.a.full_identity().dump(2))), "run.json");
      return 0;
    }
    auto bytes = must(files::read_file(ident, 1 << 20), "run.json");
    if (json::parse(bytes.begin(), bytes.end(), nullptr, false) != s_.a.full_identity()) {
      usage(fmt::format("{} holds a run with other settings (run.json); use another --state", dir.string()));
    }
    fs::path ckpt = dir / "ckpt";
    if (!fs::exists(ckpt / "step")) ckpt = dir / "ckpt-old";  // a save cut off between its renames
    if (!fs::exists(ckpt / "step")) return 0;
    auto step_bytes = must(files::read_file(ckpt / "step", 32), "step");
    const int step = std::stoi(std::string(step_bytes.begin(), step_bytes.end()));
    for (auto& [arm, t] : trainers_) must(t->load(ckpt / arm), "resume");
    if (fs::exists(dir / "losses.csv")) losses_ = must(read_losses(dir / "losses.csv"), "losses.csv").first;
    std::erase_if(losses_, [&](const auto& kv) { return kv.first > step; });
    fmt::print(stderr, "convergence: resuming {} at outer step {}\n", dir.string(), step);
    return step;
  }

  // Every trainer into ckpt-tmp, then renamed over ckpt (the old one kept
  // until the new one is whole).
  void save(int step) {
    const fs::path dir(s_.a.state), tmp = dir / "ckpt-tmp", ckpt = dir / "ckpt", old = dir / "ckpt-old";
    fs::remove_all(tmp);
    for (auto& [arm, t] : trainers_) must(t->save(tmp / arm), "save");
    must(files::write_file_atomic(tmp / "step", as_bytes(std::to_string(step))), "save");
    fs::remove_all(old);
    if (fs::exists(ckpt)) fs::rename(ckpt, old);
    fs::rename(tmp, ckpt);
    fs::remove_all(old);
  }

  void evaluate(int step) {
    for (auto& [arm, t] : trainers_) losses_[step][arm] = s_.heldout(t->replica());
    print_row(step);
    if (!s_.a.state.empty()) {
      must(files::write_file_atomic(fs::path(s_.a.state) / "losses.csv",
                                    as_bytes(losses_csv(losses_, tokens_per_step_))),
           "losses.csv");
    }
  }

  void train(int from) {
    const auto start = Clock::now();
    for (int w = from; w < s_.a.outer_steps; ++w) {
      for (auto& [arm, t] : trainers_) {
        const auto t0 = Clock::now();
        t->outer_step(s_, w);
        t->seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      }
      const int done = w + 1;
      if (done % s_.a.eval_every == 0 || done == s_.a.outer_steps) evaluate(done);
      if (!s_.a.state.empty() && (done % s_.a.save_every == 0 || done == s_.a.outer_steps)) save(done);
      const double per = std::chrono::duration<double>(Clock::now() - start).count() / (done - from);
      fmt::print(stderr, "convergence: outer step {}/{}, {:.1f} s a step, about {:.0f} min left\n", done,
                 s_.a.outer_steps, per, per * (s_.a.outer_steps - done) / 60);
    }
  }

  void print_header() const {
    std::string head = "| outer step | tokens |", rule = "|---|---|";
    for (const auto& [arm, t] : trainers_) {
      head += fmt::format(" {} |", kArmNames.at(arm));
      rule += "---|";
    }
    for (const auto& [num, den] : ratios()) {
      head += fmt::format(" ({})/({}) |", num, den);
      rule += "---|";
    }
    fmt::print("{}\n{}\n", head, rule);
  }

  void print_row(int step) const {
    const auto& l = losses_.at(step);
    std::string row = fmt::format("| {} | {} |", step, tokens_per_step_ * static_cast<std::uint64_t>(step));
    for (const auto& [arm, t] : trainers_) row += fmt::format(" {:.4f} |", l.at(arm));
    for (const auto& [num, den] : ratios()) row += fmt::format(" {:.4f} |", l.at(num) / l.at(den));
    fmt::print("{}\n", row);
    std::fflush(stdout);
  }

  void summary() const {
    const auto& specs = trainers_[0].second->replica().specs();
    const auto packet = must(protocol::expected_packet_bytes(specs, s_.a.topk), "packet size");
    const auto dense = static_cast<std::uint64_t>(trainers_[0].second->replica().num_parameters()) * 4;
    fmt::print(
        "\nbytes sent per worker per outer step: (c) crucible {} (sealed packet, {} of 4,096 kept), (b) dense diloco "
        "{} (float32), ratio {:.1f}x fewer\n",
        packet, s_.a.topk, dense, static_cast<double>(dense) / static_cast<double>(packet));
    const auto& last = losses_.rbegin()->second;
    for (const auto& [num, den] : ratios()) {
      fmt::print("final held-out loss: ({}) is {:+.2f}% against ({})\n", num, 100.0 * (last.at(num) / last.at(den) - 1),
                 den);
    }
    std::string secs = "seconds of training (this process):";
    for (const auto& [arm, t] : trainers_) secs += fmt::format(" ({}) {:.0f}", arm, t->seconds);
    fmt::print("{}\n", secs);
  }

  const Losses& losses() const { return losses_; }
  std::uint64_t tokens_per_step() const { return tokens_per_step_; }

 private:
  // (num, den) pairs among the arms run: c against every other, b against a.
  std::vector<std::pair<std::string, std::string>> ratios() const {
    std::vector<std::pair<std::string, std::string>> out;
    const auto& arms = s_.a.arms;
    if (arms.count("b") && arms.count("a")) out.emplace_back("b", "a");
    for (const char* den : {"a", "a2", "b"}) {
      if (arms.count("c") && arms.count(den)) out.emplace_back("c", den);
    }
    return out;
  }

  Setup& s_;
  std::vector<std::pair<std::string, std::unique_ptr<Trainer>>> trainers_;
  Losses losses_;
  std::uint64_t tokens_per_step_ = 0;
};

// ---- the picture --------------------------------------------------------

struct Series {
  std::string arm;
  std::vector<double> x, mean, lo, hi;  // tokens; loss mean and spread over runs
};

const std::map<std::string, const char*> kArmColour = {
    {"a", "#2ca02c"}, {"a2", "#98df8a"}, {"b", "#1f77b4"}, {"c", "#d62728"}};

std::string loss_svg(const std::vector<Series>& series, const std::string& title) {
  constexpr double kW = 760, kH = 420, kLeft = 70, kRight = 560, kTop = 40, kBottom = 360;
  double x_max = 1, y_min = 1e9, y_max = -1e9;
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      x_max = std::max(x_max, s.x[i]);
      y_min = std::min(y_min, s.lo[i]);
      y_max = std::max(y_max, s.hi[i]);
    }
  }
  if (y_max <= y_min) y_max = y_min + 1;
  const double pad = (y_max - y_min) * 0.05;
  y_min -= pad;
  y_max += pad;
  auto px = [&](double x) { return kLeft + (kRight - kLeft) * x / x_max; };
  auto py = [&](double y) { return kBottom - (kBottom - kTop) * (y - y_min) / (y_max - y_min); };
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif">)"
      R"(<rect width="100%" height="100%" fill="white"/>)",
      kW, kH);
  svg += fmt::format(R"(<text x="{}" y="24" font-size="14">{}</text>)", kLeft, title);
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)", kLeft, kTop,
                     kRight - kLeft, kBottom - kTop);
  for (int i = 0; i <= 5; ++i) {
    const double y = y_min + (y_max - y_min) * i / 5, x = x_max * i / 5;
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{:.2f}</text>)", kLeft - 6,
                       py(y) + 4, y);
    const std::string tokens = x_max >= 1e6 ? fmt::format("{:.1f}M", x / 1e6) : fmt::format("{:.0f}K", x / 1e3);
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">{}</text>)", px(x), kBottom + 16,
                       tokens);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" font-size="12" text-anchor="middle">tokens</text>)", (kLeft + kRight) / 2,
                     kBottom + 36);
  svg += fmt::format(
      R"svg(<text x="16" y="{0}" font-size="12" transform="rotate(-90 16 {0})" text-anchor="middle">held-out loss</text>)svg",
      (kTop + kBottom) / 2);
  double legend_y = kTop + 10;
  for (const auto& s : series) {
    const char* c = kArmColour.at(s.arm);
    std::string band, line;
    for (std::size_t i = 0; i < s.x.size(); ++i) band += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.hi[i]));
    for (std::size_t i = s.x.size(); i-- > 0;) band += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.lo[i]));
    for (std::size_t i = 0; i < s.x.size(); ++i) line += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.mean[i]));
    svg += fmt::format(R"(<polygon points="{}" fill="{}" fill-opacity="0.18" stroke="none"/>)", band, c);
    svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>)", line, c);
    svg += fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/>)", kRight + 14, legend_y - 10, c);
    svg += fmt::format(R"(<text x="{}" y="{}" font-size="12">{}</text>)", kRight + 32, legend_y, kArmNames.at(s.arm));
    legend_y += 20;
  }
  return svg + "</svg>\n";
}

// Mean and spread (min, max) per arm and step over the runs of that arm
// (those that measured it at step 0), at the steps every one of them holds.
std::vector<Series> series_of(const std::vector<Losses>& runs, const std::map<int, std::uint64_t>& tokens) {
  std::vector<Series> out;
  for (const auto& arm : kArmOrder) {
    Series s{arm, {}, {}, {}, {}};
    std::size_t with_arm = 0;
    for (const auto& r : runs) with_arm += r.count(0) && r.at(0).count(arm) ? 1 : 0;
    for (const auto& [step, tok] : tokens) {
      std::vector<double> v;
      for (const auto& r : runs) {
        auto it = r.find(step);
        if (it != r.end() && it->second.count(arm)) v.push_back(it->second.at(arm));
      }
      if (v.empty() || v.size() != with_arm) continue;
      double sum = 0;
      for (double x : v) sum += x;
      s.x.push_back(static_cast<double>(tok));
      s.mean.push_back(sum / static_cast<double>(v.size()));
      s.lo.push_back(*std::min_element(v.begin(), v.end()));
      s.hi.push_back(*std::max_element(v.begin(), v.end()));
    }
    if (!s.x.empty()) out.push_back(std::move(s));
  }
  return out;
}

void print_spread_table(const std::vector<Series>& series, std::size_t runs) {
  std::string head = "| tokens |", rule = "|---|";
  for (const auto& s : series) {
    head += fmt::format(" {} |", kArmNames.at(s.arm));
    rule += "---|";
  }
  fmt::print("{} runs: mean (min–max) of held-out loss\n\n{}\n{}\n", runs, head, rule);
  std::set<double> xs;
  for (const auto& s : series) xs.insert(s.x.begin(), s.x.end());
  for (double x : xs) {
    std::string row = fmt::format("| {:.0f} |", x);
    for (const auto& s : series) {
      auto it = std::find(s.x.begin(), s.x.end(), x);
      const auto i = static_cast<std::size_t>(it - s.x.begin());
      row += it != s.x.end() ? fmt::format(" {:.4f} ({:.4f}–{:.4f}) |", s.mean[i], s.lo[i], s.hi[i]) : " – |";
    }
    fmt::print("{}\n", row);
  }
}

int plot(int argc, char** argv) {
  std::string out = argv[2], title = "held-out loss against tokens";
  std::vector<Losses> runs;
  std::map<int, std::uint64_t> tokens;
  for (int i = 3; i < argc; ++i) {
    if (std::string(argv[i]) == "--title" && i + 1 < argc) {
      title = argv[++i];
      continue;
    }
    auto [l, t] = must(read_losses(fs::path(argv[i]) / "losses.csv"), argv[i]);
    runs.push_back(std::move(l));
    tokens.insert(t.begin(), t.end());
  }
  if (runs.empty()) usage("--plot needs at least one run folder");
  const auto series = series_of(runs, tokens);
  must(files::write_file_atomic(out, as_bytes(loss_svg(series, title))), "svg");
  print_spread_table(series, runs.size());
  fmt::print("\nwrote {}\n", out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--plot") return plot(argc, argv);
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
  if (s.a.decay_steps != 0) s.miner.decay_steps = s.a.decay_steps;
  s.miner.ef_beta = s.a.ef_beta;
  s.miner.threads = s.a.threads;

  Run run(s);
  const int from = run.resume();
  fmt::print("{}\n\n", s.a.full_identity().dump());
  run.print_header();
  for (const auto& [step, l] : run.losses()) run.print_row(step);
  if (from == 0) run.evaluate(0);
  run.train(from);
  run.summary();
  if (!s.a.svg.empty()) {
    auto series = series_of({run.losses()}, [&] {
      std::map<int, std::uint64_t> t;
      for (const auto& [step, l] : run.losses()) t[step] = run.tokens_per_step() * static_cast<std::uint64_t>(step);
      return t;
    }());
    must(files::write_file_atomic(s.a.svg, as_bytes(loss_svg(series, "held-out loss against tokens"))), "svg");
  }
  return 0;
}
