// FaultInjectingStore: wraps a store and misbehaves on purpose, for
// reliability tests (in the spirit of RocksDB's FaultInjectionTestFS):
// added latency, transient errors, truncated bodies, flipped bits, a
// Last-Modified shifted into the past, and withdrawn objects. Deterministic for a given seed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "crucible/storage/object_store.h"

namespace crucible::storage {

struct FaultOptions {
  std::chrono::milliseconds latency{0};
  double error_rate = 0;                    // fraction of calls failing with unavailable
  double truncate_rate = 0;                 // fraction of bodies cut short
  double bitflip_rate = 0;                  // fraction of bodies with one bit flipped
  std::int64_t stale_last_modified_ms = 0;  // subtracted from every Last-Modified
  std::string hidden_prefix;                // objects under it read as not_found (withdrawn); empty: none
  std::uint64_t seed = 1;
};

struct FaultCounts {
  int errors = 0;
  int truncations = 0;
  int bitflips = 0;
  int hidden = 0;  // reads answered not_found under hidden_prefix
};

class FaultInjectingStore final : public ObjectStore {
 public:
  FaultInjectingStore(std::shared_ptr<ObjectStore> inner, FaultOptions faults, RetryPolicy policy = {});

  std::string describe() const override;
  FaultCounts counts() const;
  void set_faults(const FaultOptions& faults);

  Status do_put(std::string_view key, ByteSpan data, const Sha256& sha256) override;
  Result<Fetched> do_get(std::string_view key, std::uint64_t max_bytes) override;
  Result<Bytes> do_get_range(std::string_view key, std::uint64_t offset, std::uint64_t length) override;
  Result<ObjectInfo> do_head(std::string_view key) override;
  Result<ListPage> do_list(std::string_view prefix, const std::optional<std::string>& token,
                           std::size_t max_keys) override;
  Status do_remove(std::string_view key) override;

 private:
  Status maybe_fail(std::string_view op);
  Status maybe_hide(std::string_view key);
  void damage(Bytes& body);
  void age(ObjectInfo& info) const { info.last_modified_ms -= faults_.stale_last_modified_ms; }

  std::shared_ptr<ObjectStore> inner_;
  mutable std::mutex mu_;
  FaultOptions faults_;
  std::mt19937_64 rng_;
  FaultCounts counts_;
};

}  // namespace crucible::storage
