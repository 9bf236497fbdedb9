// Metrics: a fixed catalogue of counters, gauges and histograms (an enum, not
// free-form strings scattered in the code, as RocksDB's statistics.h), held in
// a prometheus-cpp registry and rendered in the Prometheus text exposition
// format for `/metrics`.
//
// Label values must come from a small known set (a level, a role, a uid):
// never put a peer-supplied string in a label, it would grow without bound.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace crucible::metrics {

enum class Counter : std::uint16_t {
  kLogRecords,         // crucible_log_records_total{level}
  kInnerSteps,         // crucible_miner_inner_steps_total
  kTokensTrained,      // crucible_miner_tokens_total
  kUploads,            // crucible_miner_uploads_total{result}
  kAggregatesApplied,  // crucible_aggregates_applied_total{role}
  kUploadsValid,       // crucible_uploads_valid_total (validator: uploads that passed every check)
  kUploadsRejected,    // crucible_uploads_rejected_total{reason} (validator; reason: protocol::Rejection names)
  kEvaluations,        // crucible_evaluations_total (validator: updates evaluated)
  kWeightPosts,        // crucible_weight_posts_total{result} (validator: confirmed, committed, revealed, failed)
  kStoreRequests,      // crucible_store_requests_total{op} (head, get, get_range, put, list, remove: calls made)
  kStoreBytesRead,     // crucible_store_bytes_read_total (object bytes read by get and get_range)
  kObserverPolls,      // crucible_observer_polls_total (validator: commitment reads by the observer)
  kChainDesyncs,       // crucible_chain_desyncs_total{role,reason} (protocol::Desync names: a set not applied)
  kCheckpointsLoaded,  // crucible_checkpoints_loaded_total{role} (the lead's checkpoint took the model forward)
  kCount_,
};

enum class Gauge : std::uint16_t {
  kBuildInfo,         // crucible_build_info{version,role} = 1
  kStartTimeSeconds,  // crucible_process_start_time_seconds
  kWindow,            // crucible_window{role}
  kMinerLoss,         // crucible_miner_loss (mean inner loss of the last window)
  kTokensPerSecond,   // crucible_miner_tokens_per_second
  kGlobalStep,        // crucible_global_step{role}
  kHeldoutLoss,       // crucible_heldout_loss (validator: the global model's held-out loss)
  kLastUploadWindow,  // crucible_miner_last_upload_window (the last window whose packet was revealed)
  kValidatorLead,     // crucible_validator_lead (1 when it led the last window it processed: fixed the set)
  kCount_,
};

enum class Histogram : std::uint16_t {
  kWindowDurationSeconds,  // crucible_window_duration_seconds{role}
  kValidatorStepSeconds,   // crucible_validator_step_seconds{step} (one step of a window, window.h's names)
  kCount_,
};

enum class Kind : std::uint8_t { kCounter, kGauge, kHistogram };

struct Definition {
  std::string_view name;
  std::string_view help;
  Kind kind;
  std::span<const std::string_view> labels;  // the label names it takes, all required
  std::span<const double> buckets;           // histograms only: upper bounds, ascending
};

const Definition& definition(Counter id);
const Definition& definition(Gauge id);
const Definition& definition(Histogram id);

using Labels = std::map<std::string, std::string>;

// Thread-safe. Passing labels that do not match the definition's label names
// is a programming error and throws std::invalid_argument.
class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  void add(Counter id, double amount = 1.0, const Labels& labels = {});
  void set(Gauge id, double value, const Labels& labels = {});
  void observe(Histogram id, double value, const Labels& labels = {});

  double value(Counter id, const Labels& labels = {}) const;
  double value(Gauge id, const Labels& labels = {}) const;
  // Whether the gauge has been set with these labels.
  bool has(Gauge id, const Labels& labels = {}) const;

  // Everything, in the Prometheus text exposition format (version 0.0.4).
  std::string render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The process's registry: what a node serves on /metrics. Libraries record
// into it; tests that need isolation make their own Registry.
Registry& global();

}  // namespace crucible::metrics
