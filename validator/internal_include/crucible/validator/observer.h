// What this validator saw, and when (protocol.md §6 "Timing and
// precedence"). A miner controls its bucket, so the store's Last-Modified,
// ETag and every other header it serves are claims, not evidence. During
// the slot a miner puts only its commitment (keys::commitment: the
// Keccak-256 of the packet it will upload once the slot has closed). The
// observer reads each watched uid's commitment for the windows under way
// on threads of its own, and records for each value it held the interval
// in which it appeared by this validator's clock: after `absent_at` (the
// start of the last poll that did not show it) and no later than `seen_at`
// (the end of the first poll that did). Gather judges timing from these
// intervals only.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "crucible/chain/keccak.h"
#include "crucible/common/clock.h"
#include "crucible/storage/object_store.h"

namespace crucible::validator {

// One version of a uid's object for a window.
struct Sighting {
  chain::Hash32 object{};                                       // Keccak-256 of the object's bytes
  double absent_at = -std::numeric_limits<double>::infinity();  // not there yet (validator's clock, Unix s)
  double seen_at = 0;                                           // there by then
};

// Everything observed of one uid's key for one window.
struct Observation {
  std::vector<Sighting> sightings;   // oldest first, one per version
  std::optional<double> first_poll;  // start of the first poll of this key
  std::optional<double> last_poll;   // start of the last poll that was answered
  bool gave_up = false;              // the store timed out: not polled again for this window
};

// The chain's time as the node last read it, for estimating when slots to
// come open (UploadSlot: window w's opens with block (w + 1) *
// blocks_per_window).
struct ChainTime {
  std::uint64_t block = 0;  // the head then
  double timestamp = 0;     // its timestamp (Unix s)
  double block_s = 0;       // recent seconds per block
  std::uint32_t blocks_per_window = 1;
  double slot_s = 0;    // the upload slot's length
  double before_s = 0;  // busy from this long before a slot opens (a block's jitter, two reads, the skew)
  double after_s = 0;   // until this long after it ends (the skew, three reads)
};

struct ObserverOptions {
  double interval_s = 1.0;         // between two polls of one key around its slot
  double idle_interval_s = 0;      // between two polls of a key before its window's busy time (0: interval_s)
  double max_latency_s = 2.0;      // a poll that took longer proves nothing about time
  std::uint32_t parallelism = 16;  // polls in flight at once
  std::size_t max_versions = 8;    // values kept per key; later ones are not recorded
};

// The uids' stores, as the main thread resolved them from the chain.
struct Watched {
  std::uint16_t uid = 0;
  std::shared_ptr<storage::ObjectStore> store;
};

class Observer {
 public:
  Observer(ObserverOptions options, std::shared_ptr<Clock> clock);
  ~Observer();  // stops and joins the thread
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  // Polls the keys of windows [first, last] of these uids from now on;
  // windows before `first` are forgotten.
  void watch(std::uint64_t first, std::uint64_t last, std::vector<Watched> stores);
  // Window w's keys are read every interval_s from `from_s` (this
  // validator's clock: a margin before its slot opens) to `until_s` (a
  // margin after it closes), every idle_interval_s before `from_s`, and no
  // more after `until_s`: reads cost O(N) a window, not O(N) an interval
  // for as long as a window is watched.
  void schedule(std::uint64_t window, double from_s, double until_s);
  // Windows not scheduled get times estimated from `t` (the slot's times
  // widened by two blocks and a tenth of the time since `t`; past them,
  // reads go on every idle_interval_s for a window's length, as an
  // estimate may be wrong); and the
  // windows watched reach on their own to the one after the window under
  // way by `t`'s reckoning, so a node busy with a long window still watches
  // the slots that open meanwhile. Without it, a window not scheduled is
  // read every interval_s throughout.
  void follow(const ChainTime& t);
  // Polls on its own thread every interval_s until destroyed.
  void start();
  // One poll of every watched key that is not in flight, on the calling
  // thread and `parallelism` helpers; returns when all have answered (tests).
  void poll_round();
  // One poll of every key due now by its schedule, on the calling thread (tests).
  void poll_due();

  Observation observed(std::uint16_t uid, std::uint64_t window) const;

 private:
  struct Key {
    std::uint16_t uid;
    std::uint64_t window;
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    Observation seen;
    std::optional<chain::Hash32> shown;  // what the last answered poll read (nullopt: nothing)
    bool recorded = false;               // `shown` is recorded
    double absent_mark = -std::numeric_limits<double>::infinity();     // `shown` was not there yet
    double previous_start = -std::numeric_limits<double>::infinity();  // start of the last answered poll
    std::optional<double> last_start;
    bool in_flight = false;
  };
  void poll(const Key& key, const std::shared_ptr<storage::ObjectStore>& store);
  enum class Pick { kMostOverdue, kAllDue, kEveryKey };
  std::vector<std::pair<Key, std::shared_ptr<storage::ObjectStore>>> due(double now, Pick pick);
  void poll_picked(Pick pick);  // due(now, pick), polled on the calling thread
  // Seconds between two polls of a key of `window` at `now`; +inf: not polled.
  double interval_of(std::uint64_t window, double now) const;
  void loop();

  ObserverOptions o_;
  std::shared_ptr<Clock> clock_;
  mutable std::mutex mu_;
  std::uint64_t first_ = 0, last_ = 0;
  std::uint64_t told_last_ = 0;  // the last window watch() named (extend() goes at most 8 past it)
  bool watching_ = false;
  std::map<std::uint16_t, std::shared_ptr<storage::ObjectStore>> stores_;
  std::map<Key, Entry> entries_;
  std::map<std::uint64_t, std::pair<double, double>> busy_;  // window -> [from, until] (schedule)
  std::optional<ChainTime> chain_time_;                      // follow()
  void extend(double now);                                   // caller holds mu_
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace crucible::validator
