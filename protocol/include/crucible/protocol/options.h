// What every node of a network must agree on (protocol.md §1, §6): the
// window and slot constants, the sample assignment's size, the outer step,
// the genesis seed, the aggregation set's size and the Gauntlet scoring
// parameters. Defaults are the production values; configs/local/ holds the
// local network's. Bound under [protocol].
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>

#include "crucible/common/config.h"

namespace crucible::protocol {

inline constexpr std::uint16_t kVersion = 1;  // in packets and object keys (v1/...)

// Gauntlet scoring (protocol.md §6). A validator that scores with other
// values ranks miners differently from its peers: they are network-wide.
struct ScoringParams {
  double openskill_beta = 7.0;        // OpenSkill performance uncertainty
  double openskill_tau = 0.1;         // OpenSkill dynamics: sigma^2 += tau^2 before rating
  double openskill_kappa = 1e-4;      // floor of OpenSkill's variance shrink factor
  double bma_alpha = 0.05;            // BMA <- (1 - alpha) * BMA + alpha * binary
  double sync_max_steps = 3.0;        // steps behind are capped here
  double sync_power = 2.5;            // sync = max(0, 1 - min(x, cap)/cap)^power
  double missing_penalty = 0.75;      // per consecutive window without a valid upload
  double weight_power = 2.0;          // w_i ∝ max(0, final_i)^power
  double rank_tie = 1e-3;             // gradient scores within this of their group's best share its rank
  double evidence_alpha = 0.5;        // evidence <- (1 - alpha) * evidence + alpha * relative gradient score
  double admit_ratio = 0.25;          // a uid joins the set while its evidence is at least this
  double admit_sync = 0.3;            // and its sync is at least this (about one window behind at most)
  double max_norm_ratio = 4.0;        // an update over this × the admitted median earns that share of its gain
  double own_data_margin = 0.0;       // binary +1 needs own gain > random gain + margin * |random gain|
  double gradient_margin = 0.0;       // and (gradient check) align_own > align_rand + margin * |align_rand|
  std::uint32_t min_evaluations = 3;  // no final score before this many evaluated windows
  double own_data_z = 0.5;            // and the own-over-random gain's z (per-sample noise) above this
  // Trust from the own-data z's accumulated over evaluations (protocol.md §6):
  // Z = Σ decay^k z_k / sqrt(Σ decay^2k); trust = clamp((Z - trust_z) / trust_z_span, 0, 1).
  double trust_decay = 0.9;   // weight of an evaluation one evaluation older
  double trust_z = 2.0;       // trust is 0 up to this accumulated Z (N(0, 1) for a miner not on its own data)
  double trust_z_span = 1.0;  // and rises to 1 over this much more
};

// The outer learning rate (§3) by the samples assigned to each miner since
// genesis (what an honest miner trains on), global step × samples_per_step:
// `rate`, then `late` for every step taken once that count reaches
// `late_from`, then `last` from `last_from` on (late or last 0: that drop
// is off). Counting in samples rather than sets keeps the drops at the same
// point of training whatever a window holds. Every node counts the sets
// alike (ChainState::global_step) and reads samples_per_step from the
// protocol, so every node takes the same step.
struct OuterLr {
  double rate = 1.0;
  double late = 0;
  std::uint64_t late_from = 0;  // samples
  double last = 0;
  std::uint64_t last_from = 0;         // samples
  std::uint64_t samples_per_step = 1;  // samples assigned to a miner a set (protocol.samples_per_window)

  // Samples assigned before the step that follows `global_step` sets (saturating).
  std::uint64_t samples_at(std::uint64_t global_step) const {
    if (samples_per_step != 0 && global_step > std::numeric_limits<std::uint64_t>::max() / samples_per_step) {
      return std::numeric_limits<std::uint64_t>::max();
    }
    return global_step * samples_per_step;
  }
  double at(std::uint64_t global_step) const {
    const std::uint64_t samples = samples_at(global_step);
    if (last > 0 && samples >= last_from) return last;
    return late > 0 && samples >= late_from ? late : rate;
  }
};

struct Options {
  std::uint32_t blocks_per_window = 100;  // window = block / blocks_per_window
  double upload_slot_s = 70.0;            // upload slot after the start of window w+1
  double clock_skew_s = 5.0;              // allowed skew when checking an upload's time
  double reveal_s = 60.0;                 // after the slot closes: committed packets are uploaded by then
  std::uint32_t samples_per_window = 64;  // samples assigned to each uid per window (§2)
  // The outer step (§3): theta <- theta - alpha * aggregate, alpha =
  // outer_lr, then outer_lr_late once each miner has been assigned
  // outer_lr_late_from_samples samples (global step × samples_per_window),
  // then outer_lr_last from outer_lr_last_from_samples on (OuterLr).
  // Covenant-72B's 1 then 0.65, and a second drop to 0.4: the best measured
  // on tiny, at H = 30's sets 50 and 75 of 120 samples a worker
  // (docs/benchmarks.md, "The outer learning rate", "Drops in samples").
  double outer_lr = 1.0;
  double outer_lr_late = 0.65;
  std::uint64_t outer_lr_late_from_samples = 6'000;
  double outer_lr_last = 0.4;
  std::uint64_t outer_lr_last_from_samples = 9'000;
  std::uint64_t init_seed = 1;       // seed of the genesis model (docs/protocol.md §3)
  std::uint32_t aggregate_top = 15;  // uids in a window's aggregation set (§8)
  // What the network was made from (docs/network.md), empty when not
  // pinned: the SHA-256 of its dataset (data::dataset_sha256) and of its
  // genesis model's parameters (model::Llama::parameters_sha256 of the
  // model from init_seed). A node whose data or genesis differs refuses to
  // start.
  std::string dataset_sha256;
  std::string genesis_sha256;
  ScoringParams scoring;

  OuterLr outer() const {
    return {outer_lr,          outer_lr_late, outer_lr_late_from_samples, outer_lr_last, outer_lr_last_from_samples,
            samples_per_window};
  }
};

void bind_options(config::Schema& schema, Options& options);

// Checks a node's dataset or genesis model against the network's pin (key
// "protocol.dataset_sha256" or "protocol.genesis_sha256", value `pinned`):
// nothing when the pin is empty (`actual` is not called), invalid_argument
// naming the key when it is not a SHA-256 or differs from actual().
Status check_pinned_digest(std::string_view key, const std::string& pinned, const std::function<std::string()>& actual,
                           std::string_view what);

}  // namespace crucible::protocol
