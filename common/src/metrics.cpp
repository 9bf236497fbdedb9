#include "crucible/common/metrics.h"

#include <array>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace crucible::metrics {
namespace {

constexpr std::string_view kNoLabels[] = {""};
constexpr std::string_view kLevel[] = {"level"};
constexpr std::string_view kRole[] = {"role"};
constexpr std::string_view kVersionRole[] = {"version", "role"};
constexpr std::string_view kResult[] = {"result"};
constexpr std::string_view kReason[] = {"reason"};
constexpr std::string_view kRoleReason[] = {"role", "reason"};
constexpr std::string_view kOp[] = {"op"};
constexpr std::string_view kStep[] = {"step"};
constexpr double kWindowBuckets[] = {0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1200};
constexpr double kStepBuckets[] = {0.001, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120};

constexpr std::span<const std::string_view> none() { return std::span(kNoLabels).first(0); }

const std::array<Definition, static_cast<std::size_t>(Counter::kCount_)> kCounters = {{
    {"crucible_log_records_total", "Log records written, by level.", Kind::kCounter, kLevel, {}},
    {"crucible_miner_inner_steps_total", "Inner optimizer steps taken.", Kind::kCounter, none(), {}},
    {"crucible_miner_tokens_total", "Tokens trained on.", Kind::kCounter, none(), {}},
    {"crucible_miner_uploads_total", "Gradient uploads, by result (ok, late, failed).", Kind::kCounter, kResult, {}},
    {"crucible_aggregates_applied_total",
     "Window aggregates applied to the model (outer steps).",
     Kind::kCounter,
     kRole,
     {}},
    {"crucible_uploads_valid_total", "Uploads that passed every check.", Kind::kCounter, none(), {}},
    {"crucible_uploads_rejected_total", "Uploads rejected, by reason.", Kind::kCounter, kReason, {}},
    {"crucible_evaluations_total", "Updates evaluated (Gauntlet losses).", Kind::kCounter, none(), {}},
    {"crucible_weight_posts_total", "Weight transactions, by result.", Kind::kCounter, kResult, {}},
    {"crucible_store_requests_total",
     "Object store calls made (each may retry inside), by operation.",
     Kind::kCounter,
     kOp,
     {}},
    {"crucible_store_bytes_read_total", "Object bytes read from stores.", Kind::kCounter, none(), {}},
    {"crucible_observer_polls_total", "Commitment reads by the validator's observer.", Kind::kCounter, none(), {}},
    {"crucible_chain_desyncs_total",
     "Aggregation sets the model could not take, by reason (other_basis, set_missing, set_damaged, packet_missing).",
     Kind::kCounter,
     kRoleReason,
     {}},
    {"crucible_checkpoints_loaded_total", "The lead's checkpoints loaded into the model.", Kind::kCounter, kRole, {}},
}};

const std::array<Definition, static_cast<std::size_t>(Gauge::kCount_)> kGauges = {{
    {"crucible_build_info",
     "Always 1; the labels name the build's version and the node's role.",
     Kind::kGauge,
     kVersionRole,
     {}},
    {"crucible_process_start_time_seconds",
     "Start time of the process since the Unix epoch, in seconds.",
     Kind::kGauge,
     none(),
     {}},
    {"crucible_window", "The protocol window the node is working on.", Kind::kGauge, kRole, {}},
    {"crucible_miner_loss", "Mean training loss of the miner's last window.", Kind::kGauge, none(), {}},
    {"crucible_miner_tokens_per_second", "Training throughput of the last window.", Kind::kGauge, none(), {}},
    {"crucible_global_step", "Outer steps applied to the node's model.", Kind::kGauge, kRole, {}},
    {"crucible_heldout_loss",
     "Mean next-token loss of the global model on the held-out samples.",
     Kind::kGauge,
     none(),
     {}},
    {"crucible_miner_last_upload_window",
     "The last window whose gradient the miner revealed.",
     Kind::kGauge,
     none(),
     {}},
    {"crucible_validator_lead",
     "1 when the validator led the last window it processed (fixed and published the set), else 0.",
     Kind::kGauge,
     none(),
     {}},
}};

const std::array<Definition, static_cast<std::size_t>(Histogram::kCount_)> kHistograms = {{
    {"crucible_window_duration_seconds", "Wall time of one window's work, in seconds.", Kind::kHistogram, kRole,
     kWindowBuckets},
    {"crucible_validator_step_seconds",
     "Wall time of one step of the validator's window (gather, copies, evaluate, ...), in seconds.", Kind::kHistogram,
     kStep, kStepBuckets},
}};

void check_labels(const Definition& def, const Labels& labels) {
  bool ok = labels.size() == def.labels.size();
  for (auto name : def.labels) ok = ok && labels.count(std::string(name)) == 1;
  if (!ok) throw std::invalid_argument(fmt::format("metric {}: wrong label names", def.name));
}

}  // namespace

const Definition& definition(Counter id) { return kCounters.at(static_cast<std::size_t>(id)); }
const Definition& definition(Gauge id) { return kGauges.at(static_cast<std::size_t>(id)); }
const Definition& definition(Histogram id) { return kHistograms.at(static_cast<std::size_t>(id)); }

struct Registry::Impl {
  prometheus::Registry registry;
  std::vector<prometheus::Family<prometheus::Counter>*> counters;
  std::vector<prometheus::Family<prometheus::Gauge>*> gauges;
  std::vector<prometheus::Family<prometheus::Histogram>*> histograms;
};

Registry::Registry() : impl_(std::make_unique<Impl>()) {
  for (const auto& d : kCounters) {
    impl_->counters.push_back(
        &prometheus::BuildCounter().Name(std::string(d.name)).Help(std::string(d.help)).Register(impl_->registry));
  }
  for (const auto& d : kGauges) {
    impl_->gauges.push_back(
        &prometheus::BuildGauge().Name(std::string(d.name)).Help(std::string(d.help)).Register(impl_->registry));
  }
  for (const auto& d : kHistograms) {
    impl_->histograms.push_back(
        &prometheus::BuildHistogram().Name(std::string(d.name)).Help(std::string(d.help)).Register(impl_->registry));
  }
}

Registry::~Registry() = default;

void Registry::add(Counter id, double amount, const Labels& labels) {
  check_labels(definition(id), labels);
  if (!(amount >= 0)) throw std::invalid_argument("a counter only goes up");
  impl_->counters[static_cast<std::size_t>(id)]->Add(labels).Increment(amount);
}

void Registry::set(Gauge id, double value, const Labels& labels) {
  check_labels(definition(id), labels);
  impl_->gauges[static_cast<std::size_t>(id)]->Add(labels).Set(value);
}

void Registry::observe(Histogram id, double value, const Labels& labels) {
  const Definition& def = definition(id);
  check_labels(def, labels);
  prometheus::Histogram::BucketBoundaries bounds(def.buckets.begin(), def.buckets.end());
  impl_->histograms[static_cast<std::size_t>(id)]->Add(labels, bounds).Observe(value);
}

double Registry::value(Counter id, const Labels& labels) const {
  check_labels(definition(id), labels);
  auto* family = impl_->counters[static_cast<std::size_t>(id)];
  return family->Has(labels) ? family->Add(labels).Value() : 0.0;
}

double Registry::value(Gauge id, const Labels& labels) const {
  check_labels(definition(id), labels);
  auto* family = impl_->gauges[static_cast<std::size_t>(id)];
  return family->Has(labels) ? family->Add(labels).Value() : 0.0;
}

bool Registry::has(Gauge id, const Labels& labels) const {
  check_labels(definition(id), labels);
  return impl_->gauges[static_cast<std::size_t>(id)]->Has(labels);
}

std::string Registry::render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, impl_->registry.Collect());
  return out.str();
}

Registry& global() {
  static Registry registry;
  return registry;
}

}  // namespace crucible::metrics
