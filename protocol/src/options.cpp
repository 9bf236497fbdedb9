#include "crucible/protocol/options.h"

#include <algorithm>
#include <cctype>

#include "crucible/common/sha256.h"

namespace crucible::protocol {
namespace {

void bind_scoring(config::Schema& schema, ScoringParams& s) {
  schema.add_double("protocol.openskill_beta", &s.openskill_beta, "OpenSkill performance uncertainty (beta).", 1e-6,
                    1e6);
  schema.add_double("protocol.openskill_tau", &s.openskill_tau,
                    "OpenSkill dynamics (tau): sigma^2 grows by tau^2 before each rating.", 0, 1e6);
  schema.add_double("protocol.openskill_kappa", &s.openskill_kappa, "Floor of OpenSkill's variance shrink factor.",
                    1e-12, 1);
  schema.add_double("protocol.bma_alpha", &s.bma_alpha,
                    "Binary moving average step: BMA <- (1 - alpha) * BMA + alpha * binary.", 0, 1);
  schema.add_double("protocol.sync_max_steps", &s.sync_max_steps,
                    "Steps behind the validator's model at which the sync score reaches 0.", 1e-6, 1e6);
  schema.add_double("protocol.sync_power", &s.sync_power, "Exponent of the sync score.", 0, 100);
  schema.add_double("protocol.missing_penalty", &s.missing_penalty,
                    "Score factor per consecutive window without a valid upload.", 0, 1);
  schema.add_double("protocol.weight_power", &s.weight_power,
                    "Weights are proportional to max(0, final score)^weight_power.", 0, 100);
  schema.add_double("protocol.rank_tie", &s.rank_tie,
                    "Gradient scores within this of their group's best tie in a window's ranking "
                    "(measurement noise between equally good updates decides nothing).",
                    0, 1);
  schema.add_double("protocol.evidence_alpha", &s.evidence_alpha,
                    "Weight of the newest evaluation in a uid's evidence for set admission.", 0.01, 1);
  schema.add_double("protocol.admit_ratio", &s.admit_ratio,
                    "A uid joins the aggregation set while its evidence (moving average of its gradient score "
                    "over the best of its window) is at least this.",
                    0, 1);
  schema.add_double("protocol.admit_sync", &s.admit_sync,
                    "A uid joins the aggregation set only while its sync score is at least this (0.3: at most "
                    "about one window behind): an update made on another model is not merged.",
                    0, 1);
  schema.add_double("protocol.max_norm_ratio", &s.max_norm_ratio,
                    "An update whose norm is more than this many times the window's median norm of admitted uids "
                    "counts only this ratio over its norm ratio of its gain toward evidence: scaling up earns "
                    "less, never more (docs/protocol.md §6).",
                    1, 1e6);
  schema.add_double("protocol.own_data_margin", &s.own_data_margin,
                    "The binary indicator is +1 only when the update's relative loss gain on the uid's own samples "
                    "beats the one on random samples by this fraction of the latter (docs/reliability.md).",
                    0, 10);
  schema.add_int("protocol.min_evaluations", &s.min_evaluations,
                 "A uid's final score stays 0 until it has this many evaluated windows: evidence from several "
                 "windows before one lucky evaluation pays.",
                 1, 1000);
  schema.add_double("protocol.own_data_z", &s.own_data_z,
                    "The binary indicator is +1 only when the update's gain on the uid's own samples stands this "
                    "many standard errors above its gain on random samples, the noise measured from the losses of "
                    "each sample (docs/reliability.md).",
                    0, 10);
  schema.add_double("protocol.trust_decay", &s.trust_decay,
                    "Trust accumulates the own-data z of a uid's evaluations, each one weighted by this against "
                    "the next newer (docs/protocol.md §6): 0.9 counts about the last nineteen evaluations.",
                    0, 0.99);
  schema.add_double("protocol.trust_z", &s.trust_z,
                    "Trust is 0 while the accumulated own-data z is at most this: a uid that does not train on its "
                    "own samples draws it from N(0, 1), so 2 pays such a uid in about 2% of windows.",
                    0, 100);
  schema.add_double("protocol.trust_z_span", &s.trust_z_span,
                    "Trust rises from 0 to 1 as the accumulated own-data z goes from trust_z to trust_z + this.", 1e-3,
                    100);
  schema.add_double("protocol.gradient_margin", &s.gradient_margin,
                    "With validator.gradient_check = require, the binary indicator is +1 only when the update's "
                    "cosine with the gradient on the uid's own samples beats the one on random samples by this "
                    "fraction of the latter.",
                    0, 10);
}

}  // namespace

Status check_pinned_digest(std::string_view key, const std::string& pinned, const std::function<std::string()>& actual,
                           std::string_view what) {
  if (pinned.empty()) return Status::ok();
  if (!is_sha256_hex(pinned)) return invalid_argument("{} = \"{}\" is not a SHA-256 (64 hex digits)", key, pinned);
  const std::string mine = actual();
  std::string lower = pinned;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (mine != lower) {
    return invalid_argument("{} is not the network's: its SHA-256 is {}, the network's ({}) {}", what, mine, key,
                            pinned);
  }
  return Status::ok();
}

void bind_options(config::Schema& schema, Options& options) {
  schema.add_int("protocol.blocks_per_window", &options.blocks_per_window,
                 "Blocks per window: window = block / blocks_per_window.", 1, 1'000'000);
  schema.add_double("protocol.upload_slot_s", &options.upload_slot_s,
                    "Seconds after the first block of window w+1 in which a gradient for w may be uploaded.", 0.1,
                    86'400);
  schema.add_double("protocol.clock_skew_s", &options.clock_skew_s,
                    "Clock skew allowed when checking an upload's time against its slot.", 0, 3'600);
  schema.add_double("protocol.reveal_s", &options.reveal_s,
                    "Seconds after a slot closes (end + clock skew) by which each miner uploads the packet it "
                    "committed to during the slot; validators gather after that.",
                    0, 86'400);
  schema.add_int("protocol.samples_per_window", &options.samples_per_window,
                 "Samples assigned to each uid per window (the same on miners and validators).", 1, 1'000'000);
  schema.add_double("protocol.outer_lr", &options.outer_lr,
                    "Outer learning rate: theta <- theta - outer_lr * aggregate.", 1e-6, 10);
  schema.add_double("protocol.outer_lr_late", &options.outer_lr_late,
                    "Outer learning rate once each miner has been assigned outer_lr_late_from_samples samples (0: "
                    "outer_lr throughout).",
                    0, 10);
  schema.add_int("protocol.outer_lr_late_from_samples", &options.outer_lr_late_from_samples,
                 "Samples assigned to a miner since genesis (global step x samples_per_window) from which "
                 "outer_lr_late applies.");
  schema.add_double("protocol.outer_lr_last", &options.outer_lr_last,
                    "Outer learning rate from outer_lr_last_from_samples samples on, a second drop (0: none).", 0, 10);
  schema.add_int("protocol.outer_lr_last_from_samples", &options.outer_lr_last_from_samples,
                 "Samples assigned to a miner since genesis from which outer_lr_last applies (after "
                 "outer_lr_late_from_samples).");
  schema.retire("protocol.outer_lr_late_from",
                "the drop is counted in samples now: set protocol.outer_lr_late_from_samples to the old value x "
                "samples_per_window");
  schema.retire("protocol.outer_lr_last_from",
                "the drop is counted in samples now: set protocol.outer_lr_last_from_samples to the old value x "
                "samples_per_window");
  schema.add_int("protocol.init_seed", &options.init_seed, "Seed of the genesis model's initialisation.");
  schema.add_int("protocol.aggregate_top", &options.aggregate_top,
                 "Uids in a window's aggregation set: the top ones by final score.", 1, 256);
  schema.add_string("protocol.dataset_sha256", &options.dataset_sha256,
                    "SHA-256 of the network's dataset (crucible data info prints it); empty: not checked.");
  schema.add_string("protocol.genesis_sha256", &options.genesis_sha256,
                    "SHA-256 of the genesis model's parameters (crucible network init computes it); empty: not "
                    "checked.");
  bind_scoring(schema, options.scoring);
}

}  // namespace crucible::protocol
