// The observer (observer.h): read each watched commitment on its schedule
// and record when each value was first seen. Everything a store serves may
// be a lie; the only facts kept are this validator's own clock readings
// around polls that answered.
#include "crucible/validator/observer.h"

#include <algorithm>

#include <fmt/format.h>

#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/protocol/object_keys.h"

namespace crucible::validator {

Observer::Observer(ObserverOptions options, std::shared_ptr<Clock> clock) : o_(options), clock_(std::move(clock)) {}

Observer::~Observer() {
  stop_ = true;
  for (auto& t : threads_) t.join();
}

void Observer::watch(std::uint64_t first, std::uint64_t last, std::vector<Watched> stores) {
  std::lock_guard lk(mu_);
  first_ = first;
  last_ = last;
  told_last_ = last;
  watching_ = true;
  stores_.clear();
  for (auto& s : stores)
    if (s.store) stores_[s.uid] = std::move(s.store);
  std::erase_if(entries_, [&](const auto& kv) { return kv.first.window < first; });
  std::erase_if(busy_, [&](const auto& kv) { return kv.first < first; });
  for (const auto& [uid, store] : stores_)
    for (std::uint64_t w = first; w <= last; ++w) entries_.try_emplace(Key{uid, w});
}

void Observer::schedule(std::uint64_t window, double from_s, double until_s) {
  std::lock_guard lk(mu_);
  busy_[window] = {from_s, until_s};
}

void Observer::follow(const ChainTime& t) {
  std::lock_guard lk(mu_);
  chain_time_ = t;
}

// The windows watched reach the one after the window under way at
// now + before_s, by the chain time's reckoning (at most 8 past watch()'s).
void Observer::extend(double now) {
  if (!watching_ || !chain_time_ || !(chain_time_->block_s > 0) || chain_time_->blocks_per_window == 0) return;
  const ChainTime& t = *chain_time_;
  const double ahead = std::max(0.0, (now + t.before_s - t.timestamp) / t.block_s);
  const std::uint64_t head = t.block + static_cast<std::uint64_t>(ahead);
  const std::uint64_t want = std::min(head / t.blocks_per_window + 1, told_last_ + 8);
  for (std::uint64_t w = last_ + 1; w <= want; ++w)
    for (const auto& [uid, store] : stores_) entries_.try_emplace(Key{uid, w});
  last_ = std::max(last_, want);
}

double Observer::interval_of(std::uint64_t window, double now) const {
  // Caller holds mu_.
  std::pair<double, double> times;
  bool estimated = false;
  if (auto it = busy_.find(window); it != busy_.end()) {
    times = it->second;
  } else if (chain_time_ && chain_time_->block_s > 0) {
    estimated = true;
    const ChainTime& t = *chain_time_;
    const double slot_block = static_cast<double>((window + 1) * t.blocks_per_window);
    const double opens = t.timestamp + (slot_block - static_cast<double>(t.block)) * t.block_s;
    const double slack = 2 * t.block_s + 0.1 * std::abs(opens - t.timestamp);
    times = {opens - t.before_s - slack, opens + t.slot_s + t.after_s + slack};
  } else {
    return o_.interval_s;
  }
  const auto [from, until] = times;
  // Past an estimated slot, reads go on at the idle pace for a window's
  // length (an estimate can be wrong); past a known one, nothing more is
  // to be seen.
  const double grace = estimated ? chain_time_->blocks_per_window * chain_time_->block_s : 0.0;
  if (now > until + grace) return std::numeric_limits<double>::infinity();
  if (now > until || now < from) return o_.idle_interval_s > 0 ? o_.idle_interval_s : o_.interval_s;
  return o_.interval_s;
}

void Observer::start() {
  for (std::uint32_t i = 0; i < std::max<std::uint32_t>(1, o_.parallelism); ++i)
    threads_.emplace_back([this, ticket = clock_->counted()] { loop(); });
}

std::vector<std::pair<Observer::Key, std::shared_ptr<storage::ObjectStore>>> Observer::due(double now, Pick pick) {
  // Caller holds mu_. The most overdue key first (never polled before any).
  std::vector<std::pair<Key, std::shared_ptr<storage::ObjectStore>>> out;
  if (!watching_) return out;
  extend(now);
  for (auto& [key, e] : entries_) {
    auto s = stores_.find(key.uid);
    if (s == stores_.end() || key.window < first_ || key.window > last_ || e.in_flight || e.seen.gave_up) continue;
    if (pick != Pick::kEveryKey) {
      const double every = interval_of(key.window, now);
      if (every == std::numeric_limits<double>::infinity()) continue;
      if (e.last_start && now - *e.last_start < every) continue;
    }
    out.emplace_back(key, s->second);
  }
  if (pick == Pick::kMostOverdue && out.size() > 1) {
    auto overdue = std::min_element(out.begin(), out.end(), [&](const auto& a, const auto& b) {
      const auto& ea = entries_.at(a.first).last_start;
      const auto& eb = entries_.at(b.first).last_start;
      return (ea ? *ea : -1.0) < (eb ? *eb : -1.0);
    });
    out = {*overdue};
  }
  for (const auto& [key, store] : out) {
    entries_.at(key).in_flight = true;
    entries_.at(key).last_start = now;
  }
  return out;
}

void Observer::loop() {
  while (!stop_.load()) {
    std::vector<std::pair<Key, std::shared_ptr<storage::ObjectStore>>> next;
    {
      std::lock_guard lk(mu_);
      next = due(clock_->unix_seconds(), Pick::kMostOverdue);
    }
    if (next.empty()) {  // look again in 20 ms of the node's clock (a test's virtual time moves meanwhile)
      clock_->sleep(std::chrono::milliseconds(20), stop_);
      continue;
    }
    poll(next[0].first, next[0].second);
  }
}

void Observer::poll_picked(Pick pick) {
  std::vector<std::pair<Key, std::shared_ptr<storage::ObjectStore>>> all;
  {
    std::lock_guard lk(mu_);
    all = due(clock_->unix_seconds(), pick);
  }
  for (const auto& [key, store] : all) poll(key, store);
}

void Observer::poll_round() { poll_picked(Pick::kEveryKey); }

void Observer::poll_due() { poll_picked(Pick::kAllDue); }

void Observer::poll(const Key& key, const std::shared_ptr<storage::ObjectStore>& store) {
  const double start = clock_->unix_seconds();
  metrics::global().add(metrics::Counter::kObserverPolls);
  auto got = store->get(protocol::keys::commitment(key.window), protocol::keys::kCommitmentBytes);
  const double end = clock_->unix_seconds();
  std::optional<chain::Hash32> shown;
  Status error = Status::ok();
  if (got.is_ok() && got->data.size() == protocol::keys::kCommitmentBytes) {
    shown.emplace();
    std::copy(got->data.begin(), got->data.end(), shown->begin());
  } else if (!got.is_ok() && got.status().code() != StatusCode::kNotFound &&
             got.status().code() != StatusCode::kResourceExhausted) {
    error = got.status();  // an object of another size is no commitment: read as nothing
  }
  std::lock_guard lk(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  e.in_flight = false;
  if (!error.is_ok()) {
    // A store that does not answer is not asked again this window: a silent
    // peer costs one deadline, not one per interval.
    e.seen.gave_up = true;
    log::warn("observer: a store did not answer; its commitment is not read again this window",
              {{"uid", key.uid}, {"window", key.window}, {"error", error.to_string()}});
    return;
  }
  if (!e.seen.first_poll) e.seen.first_poll = start;
  const bool fast = end - start <= o_.max_latency_s;
  if (fast) e.seen.last_poll = start;
  if (shown != e.shown) {  // a change: the new value appeared after the previous answered poll began
    e.absent_mark = e.previous_start;
    e.shown = shown;
    e.recorded = false;
  }
  e.previous_start = start;
  if (shown && fast && !e.recorded) {
    auto& s = e.seen.sightings;
    const bool known = std::any_of(s.begin(), s.end(), [&](const Sighting& x) { return x.object == *shown; });
    if (!known && s.size() < o_.max_versions) s.push_back(Sighting{*shown, e.absent_mark, end});
    e.recorded = true;
  }
}

Observation Observer::observed(std::uint16_t uid, std::uint64_t window) const {
  std::lock_guard lk(mu_);
  auto it = entries_.find(Key{uid, window});
  return it == entries_.end() ? Observation{} : it->second.seen;
}

}  // namespace crucible::validator
