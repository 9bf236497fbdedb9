// The validator node: creation (data, model, state, subnet), restore after
// a restart, and the loop that runs process_window once each window's
// upload slot has closed.
#include "crucible/validator/node.h"

#include <charconv>
#include <map>

#include "crucible/chain/keccak.h"
#include "crucible/common/log.h"
#include "crucible/common/retry.h"
#include "crucible/common/safetensors.h"
#include "crucible/kernels/backend_codec.h"
#include "crucible/protocol/instance.h"
#include "crucible/protocol/network_data.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

namespace fs = std::filesystem;
namespace keys = protocol::keys;

constexpr const char* kFirstWindowKey = "first_window";
// Windows before the one under way whose observations are kept while they
// wait to be processed (their slots are over: they are not read again). A
// validator busy with long windows falls behind by a few; one this far
// behind has lost the windows before.
constexpr std::uint64_t kObservedBacklog = 64;
// The most aggregate/ keys read from the sets' store at a restart.
constexpr std::size_t kMaxReplayedSets = 100'000;
// How often the observer looks again for the stores of registered miners
// that had none readable (a miner starting now publishes its location).
constexpr double kResolveRetryS = 1.0;
// Block times are estimated over the last this many blocks (to a quarter more).
constexpr std::uint64_t kBlockTimeSpan = 32;
// A validator without a permit says so at start and every this many windows.
constexpr std::uint64_t kPermitWarningEvery = 10;

struct ValidatorNode::Impl {
  ValidatorNodeOptions o;
  protocol::NodeIo io;
  protocol::WindowClock clock;
  std::unique_ptr<protocol::PeerDirectory> peers;
  // The stores the observer reads, and registered miners without one yet.
  std::map<std::uint16_t, std::shared_ptr<storage::ObjectStore>> observed_stores;
  std::vector<std::uint16_t> unresolved;
  std::unique_ptr<storage::StateStore> db;
  std::optional<data::Dataset> dataset;
  std::optional<data::Dataset> heldout;  // the val split, for the held-out loss
  std::unique_ptr<model::Replica> replica;
  std::unique_ptr<kernels::Backend> codec;  // decode and merge: on validator.device
  ValidatorState st;
  std::uint16_t uid = 0;
  std::uint64_t private_seed = 0;
  std::optional<protocol::InstanceClaim> claim;  // one running instance per key

  Impl(const ValidatorNodeOptions& options, protocol::NodeIo i)
      : o(options), io(std::move(i)), clock(options.protocol) {}

  WindowContext context(const std::atomic<bool>& stop) {
    return WindowContext{WindowOptions::of(o),          io,       clock, *peers,       *db,  *dataset,
                         heldout ? &*heldout : nullptr, *replica, uid,   private_seed, stop, *codec};
  }

  // Where aggregation sets are read: the lead's store (ours when we lead).
  std::shared_ptr<storage::ObjectStore> sets_store() {
    if (auto mg = io.chain->metagraph(o.chain.netuid); mg.is_ok()) {
      if (auto lead_uid = protocol::lead_validator(*mg); lead_uid && *lead_uid != uid) {
        if (auto s = peers->store_of(*lead_uid); s.is_ok()) return *s;
      }
    }
    return io.store;
  }

  // The first window of a fresh state, kept in RocksDB before any window is
  // processed, so a crash before the first commit resumes it rather than
  // skipping to the window under way at the restart.
  Result<std::uint64_t> first_window(std::uint64_t current) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto kept, db->get(storage::Family::kMeta, kFirstWindowKey));
    if (kept) {
      const std::string text(kept->begin(), kept->end());
      std::uint64_t w = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), w);
      if (ec != std::errc() || end != text.data() + text.size())
        return data_loss("meta {}: '{}'", kFirstWindowKey, text);
      return w;
    }
    const std::uint64_t w =
        o.validator.start_window >= 0 ? static_cast<std::uint64_t>(o.validator.start_window) : current;
    storage::StateStore::Batch b;
    const std::string text = std::to_string(w);
    b.put(storage::Family::kMeta, kFirstWindowKey, as_bytes(text));
    CRUCIBLE_RETURN_IF_ERROR(db->commit(std::move(b)));
    return w;
  }

  // The observer polls the keys of windows [first, last]: from the next
  // window to process (at most kObservedBacklog back) to the one after the
  // window under way. Its slot opens when the window after that begins, so
  // a window's key is watched before its slot even when processing one
  // window takes longer than a window (a busy validator on a slow machine).
  Status watch(Observer& observer, std::uint64_t first, std::uint64_t last, std::uint64_t current) {
    auto mg = io.chain->metagraph(o.chain.netuid);
    if (!mg.is_ok()) return mg.status();
    warn_without_permit(*mg, current);
    observed_stores.clear();
    unresolved.clear();
    for (const auto& n : mg->neurons) {
      if (n.uid == uid || n.validator_permit) continue;
      unresolved.push_back(n.uid);
    }
    resolve(observer, first, last);
    return Status::ok();
  }

  // Looks again for the stores of miners that had none readable (a miner
  // that has just started publishes its location): one read per such uid.
  void resolve(Observer& observer, std::uint64_t first, std::uint64_t last) {
    std::erase_if(unresolved, [&](std::uint16_t u) {
      auto s = peers->store_of(u);
      if (s.is_ok()) observed_stores[u] = *s;
      return s.is_ok();
    });
    std::vector<Watched> stores;
    for (const auto& [u, s] : observed_stores) stores.push_back(Watched{u, s});
    observer.watch(first, last, std::move(stores));
  }

  // Tells the observer the chain's time (so that it estimates when slots
  // to come open, and watches them even while this node is busy with a long
  // window) and the exact times of the watched slots whose block is out:
  // it reads a key every observe_interval_s only around its slot. One or
  // two header reads per new head.
  void schedule_slots(Observer& observer, std::uint64_t head, std::uint64_t first, std::uint64_t last) {
    auto top = io.chain->block(head);
    if (!top.is_ok()) return;
    if (!block_time_base || block_time_base->number + kBlockTimeSpan + kBlockTimeSpan / 4 < head) {
      auto base = io.chain->block(head - std::min(head, kBlockTimeSpan));
      if (!base.is_ok()) return;
      block_time_base = *base;
    }
    ChainTime t;
    t.block = top->number;
    t.timestamp = static_cast<double>(top->timestamp);
    t.block_s = top->number > block_time_base->number
                    ? static_cast<double>(top->timestamp - std::min(top->timestamp, block_time_base->timestamp)) /
                          static_cast<double>(top->number - block_time_base->number)
                    : 0.0;
    // Before a slot: a block's jitter, two reads, the skew; after it: the
    // skew and three reads, so one read is past it.
    t.blocks_per_window = clock.blocks_per_window();
    t.slot_s = o.protocol.upload_slot_s;
    t.before_s = t.block_s + 2 * o.validator.observe_interval_s + o.protocol.clock_skew_s;
    t.after_s = o.protocol.clock_skew_s + 3 * o.validator.observe_interval_s;
    observer.follow(t);
    for (std::uint64_t w = first; w <= last && clock.slot_block(w) <= head; ++w) {
      auto known = slot_opens.find(w);
      if (known == slot_opens.end()) {
        auto h = io.chain->block(clock.slot_block(w));
        if (!h.is_ok()) continue;
        known = slot_opens.emplace(w, static_cast<double>(h->timestamp)).first;
      }
      const protocol::UploadSlot slot = clock.slot(static_cast<std::uint64_t>(known->second));
      observer.schedule(w, slot.start_s - t.before_s, slot.end_s() + t.after_s);
    }
    std::erase_if(slot_opens, [&](const auto& kv) { return kv.first < first; });
  }
  std::optional<chain::BlockHeader> block_time_base;  // an earlier block, for the block time
  std::map<std::uint64_t, double> slot_opens;         // window -> its slot block's timestamp

  // Without a permit its weights do not count and it never leads: scores
  // come out, but nothing it does reaches the network.
  void warn_without_permit(const chain::Metagraph& mg, std::uint64_t current) {
    for (const auto& n : mg.neurons)
      if (n.uid == uid && n.validator_permit) return;
    if (last_permit_warning && current < *last_permit_warning + kPermitWarningEvery) return;
    last_permit_warning = current;
    log::warn(
        "this validator has no validator permit: its weights do not count and it never leads; its hotkey needs "
        "stake (local chain: crucible chain stake --uid UID --amount TAO --permit)",
        {{"uid", uid}, {"window", current}});
  }
  std::optional<std::uint64_t> last_permit_warning;

  // This node's own observer, told only what changed: the windows from the
  // next to process (at most kObservedBacklog back) to the one after the
  // window under way, the stores of miners not yet resolved (again every
  // kResolveRetryS), and the slots' times at each new head.
  void feed_observer(Observer& own, std::uint64_t head, std::uint64_t next, std::uint64_t current);
  std::optional<std::pair<std::uint64_t, std::uint64_t>> watched;  // the windows the observer was last told
  double last_look = 0;                                            // when the observer's stores were last looked up
  std::optional<std::uint64_t> scheduled_at;                       // the head the observer's schedule was made at

  // At start: scores, similarity history and the model as the state left
  // them, the sets published since, and what the last window left undone
  // (its progress mark, its weights post). The last committed window.
  Result<std::optional<std::uint64_t>> resume(WindowContext& cx);
  Status restore_scores();
  Status restore_model(storage::ObjectStore& sets, WindowContext& cx);
  Status replay_sets(storage::ObjectStore& sets, WindowContext& cx);
  Status replay_through(std::uint64_t last, storage::ObjectStore& sets, WindowContext& cx);
};

void ValidatorNode::Impl::feed_observer(Observer& own, std::uint64_t head, std::uint64_t next, std::uint64_t current) {
  const std::uint64_t first_watched = std::min(std::max(next, current - std::min(current, kObservedBacklog)), current);
  const auto range = std::pair(first_watched, current + 1);
  if (watched != range) {
    if (Status s = watch(own, range.first, range.second, current); s.is_ok()) {
      watched = range;
      last_look = io.clock->unix_seconds();
    } else {
      log::warn("observer: cannot read the metagraph; retrying", {{"error", s.to_string()}});
    }
  } else if (!unresolved.empty() && io.clock->unix_seconds() - last_look >= kResolveRetryS) {
    resolve(own, range.first, range.second);
    last_look = io.clock->unix_seconds();
  }
  if (watched == range && scheduled_at != head) {
    schedule_slots(own, head, range.first, range.second);
    scheduled_at = head;
  }
}

static ObserverOptions observer_options(const ValidatorOptions& v) {
  ObserverOptions oo;
  oo.interval_s = v.observe_interval_s;
  oo.max_latency_s = v.observe_max_latency_s;
  oo.idle_interval_s = v.observe_idle_interval_s;
  oo.parallelism = std::min<std::uint32_t>(v.fetch_parallelism, 16);
  return oo;
}

Result<std::optional<std::uint64_t>> ValidatorNode::Impl::resume(WindowContext& cx) {
  CRUCIBLE_RETURN_IF_ERROR(restore_scores());
  CRUCIBLE_ASSIGN_OR_RETURN(st.history, restore_history(*db));
  const std::shared_ptr<storage::ObjectStore> sets = sets_store();
  CRUCIBLE_RETURN_IF_ERROR(restore_model(*sets, cx));
  CRUCIBLE_RETURN_IF_ERROR(replay_sets(*sets, cx));
  CRUCIBLE_ASSIGN_OR_RETURN(auto last, db->last_committed_window());
  if (last) {
    CRUCIBLE_RETURN_IF_ERROR(complete_progress(*last, st, cx));
    // A stop between the last window's record and its weights post: the
    // post is made now, not lost (only if nothing was logged for its epoch).
    if (Status s = post_missed_weights(*last, st, cx); !s.is_ok()) {
      log::error("weights after a restart", {{"window", *last}, {"error", s.to_string()}});
    }
  }
  return last;
}

// The private seed: from the key (or the configured secret), so nobody
// else can predict the random data or the evaluation choice.
static std::uint64_t private_seed_of(const ValidatorOptions& o, const chain::PrivateKey& key) {
  chain::Keccak256 h;
  if (o.random_seed.empty()) {
    h.update(key.secret_bytes());
  } else {
    h.update(as_bytes(o.random_seed));
  }
  auto d = h.update(as_bytes("crucible validator random data")).finish();
  std::uint64_t seed = 0;
  for (int i = 0; i < 8; ++i) seed |= static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]) << (8 * i);
  return seed;
}

Status ValidatorNode::Impl::restore_scores() {
  CRUCIBLE_ASSIGN_OR_RETURN(auto rows, db->scan(storage::Family::kRatings, "uid/"));
  for (const auto& [k, v] : rows) {
    auto uid = uid_of_rating_key(k);
    if (!uid) return data_loss("ratings: key '{}' is not uid/<uid>", k);
    auto score = score_from_json(nlohmann::json::parse(v.begin(), v.end(), nullptr, false));
    if (!score.is_ok()) return score.status().with_context(fmt::format("ratings {}", k));
    st.scores[*uid] = std::move(*score);
  }
  return Status::ok();
}

// The model saved after the last applied aggregate, its place in the set
// chain (the file's metadata), and that aggregate (for sync scores).
Status ValidatorNode::Impl::restore_model(storage::ObjectStore& sets, WindowContext& cx) {
  const fs::path file = fs::path(o.validator.state_dir) / "model.safetensors";
  if (!fs::exists(file)) return Status::ok();
  CRUCIBLE_ASSIGN_OR_RETURN(safetensors::File f, safetensors::read_file(file));
  CRUCIBLE_RETURN_IF_ERROR(replica->load(f).with_context(file.string()));
  auto state = protocol::ChainState::from_metadata(f.metadata);
  if (!state.is_ok()) return state.status().with_context(file.string());
  st.model = std::move(*state);
  ValidatorChain(st.model, cx)->reload_last(sets);
  return Status::ok();
}

// A model behind the last committed window is brought forward along the
// published sets (a stop between a window's record and its model save);
// one it cannot take sends it to the lead's checkpoint, or leaves it for
// the next window's set to find.
Status ValidatorNode::Impl::replay_sets(storage::ObjectStore& sets, WindowContext& cx) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto last, db->last_committed_window());
  if (!last) return Status::ok();
  if (!st.model.window || *st.model.window < *last) CRUCIBLE_RETURN_IF_ERROR(replay_through(*last, sets, cx));
  log::info("resumed validator state", {{"last_window", *last}, {"uids", st.scores.size()}});
  return Status::ok();
}

Status ValidatorNode::Impl::replay_through(std::uint64_t last, storage::ObjectStore& sets, WindowContext& cx) {
  ValidatorChain chain(st.model, cx);
  CRUCIBLE_ASSIGN_OR_RETURN(auto windows, chain->published_after(sets, kMaxReplayedSets));
  for (std::uint64_t w : windows) {
    if (w > last || cx.stop.load()) break;
    CRUCIBLE_ASSIGN_OR_RETURN(auto desync, chain->advance(w, sets));
    if (desync) {
      CRUCIBLE_ASSIGN_OR_RETURN(bool loaded, chain->load_newer_checkpoint(sets));
      if (loaded) CRUCIBLE_RETURN_IF_ERROR(save_model(st.model, cx));
      break;
    }
    CRUCIBLE_RETURN_IF_ERROR(save_model(st.model, cx));
    log::info("re-applied aggregate after a restart", {{"window", w}});
  }
  return Status::ok();
}

ValidatorNode::ValidatorNode() = default;
ValidatorNode::~ValidatorNode() = default;

Result<std::unique_ptr<ValidatorNode>> ValidatorNode::create(const ValidatorNodeOptions& options,
                                                             const chain::PrivateKey& key, protocol::NodeIo io) {
  CRUCIBLE_RETURN_IF_ERROR(protocol::check(io));
  CRUCIBLE_RETURN_IF_ERROR(model::validate(options.model));
  std::unique_ptr<ValidatorNode> node(new ValidatorNode());
  node->impl_ = std::make_unique<Impl>(options, std::move(io));
  Impl& m = *node->impl_;
  CRUCIBLE_ASSIGN_OR_RETURN(auto ds, protocol::open_network_data(options.validator.data_dir, "validator.data_dir",
                                                                 options.model, options.protocol));
  m.dataset.emplace(std::move(ds));
  if (options.validator.heldout_samples > 0) {
    auto val = data::Dataset::open(options.validator.data_dir, "val");
    if (val.is_ok()) {
      CRUCIBLE_RETURN_IF_ERROR(
          data::check_fits(*val, options.validator.data_dir, options.model, 1).with_context("validator.data_dir"));
      m.heldout.emplace(std::move(*val));
    } else {
      log::warn("no held-out split: the global model's held-out loss is not measured",
                {{"data_dir", options.validator.data_dir}, {"error", val.status().to_string()}});
    }
  }
  model::ReplicaOptions ro{options.validator.device, options.validator.threads, options.validator.autocast};
  CRUCIBLE_ASSIGN_OR_RETURN(m.replica, model::Replica::create(options.model, ro, options.protocol.init_seed));
  CRUCIBLE_RETURN_IF_ERROR(protocol::check_genesis(options.protocol, [&] { return m.replica->parameters_sha256(); }));
  CRUCIBLE_ASSIGN_OR_RETURN(m.codec, kernels::backend_for(options.validator.device, options.validator.threads));
  std::error_code ec;
  fs::create_directories(options.validator.state_dir, ec);
  CRUCIBLE_ASSIGN_OR_RETURN(m.db, storage::StateStore::open((fs::path(options.validator.state_dir) / "db").string()));
  m.peers = std::make_unique<protocol::PeerDirectory>(*m.io.chain, options.chain.netuid, m.io.open_peer_store);
  m.private_seed = private_seed_of(options.validator, key);
  CRUCIBLE_ASSIGN_OR_RETURN(m.uid, protocol::join_subnet(*m.io.chain, options.chain.netuid, key, options.storage));
  CRUCIBLE_ASSIGN_OR_RETURN(
      auto claim, protocol::claim_at_start(m.io, *m.peers, options.chain.netuid, m.uid, key, options.model.canonical(),
                                           m.clock, options.validator.state_dir));
  m.claim.emplace(std::move(claim));
  log::info("validator ready",
            {{"uid", m.uid}, {"address", key.address().checksum()}, {"store", m.io.store->describe()}});
  return node;
}

storage::StateStore& ValidatorNode::state() { return *impl_->db; }
std::uint16_t ValidatorNode::uid() const { return impl_->uid; }
std::optional<std::uint64_t> ValidatorNode::model_window() const { return impl_->st.model.window; }

Status ValidatorNode::run(const std::atomic<bool>& stop, const Observer* observed) {
  Impl& m = *impl_;
  WindowContext cx = m.context(stop);
  CRUCIBLE_ASSIGN_OR_RETURN(const auto last, m.resume(cx));
  bool started = last.has_value();
  std::uint64_t next = last ? *last + 1 : 0;
  std::uint32_t done = 0;
  Observer own(observer_options(m.o.validator), m.io.clock);
  if (!observed) own.start();
  const Observer& observer = observed ? *observed : own;
  while (!stop.load()) {
    auto head = protocol::chain_head(m.io, stop);
    if (!head) continue;
    const std::uint64_t current = m.clock.window_of(*head);
    if (!observed) m.feed_observer(own, *head, next, current);
    if (!started) {  // a fresh validator starts with the window under way, or where configured
      CRUCIBLE_ASSIGN_OR_RETURN(next, m.first_window(current));
      started = true;
    }
    if (m.o.validator.end_window >= 0 && next >= static_cast<std::uint64_t>(m.o.validator.end_window)) {
      log::info("done: end_window reached", {{"window", next}});
      break;
    }
    // Window w is processed once its upload slot (in w+1) has closed and
    // the packets committed in it have been revealed.
    if (next >= current) {
      m.io.clock->sleep(2 * kPoll, stop);
      continue;
    }
    auto header =
        retry_transient("block header", *m.io.clock, stop, [&] { return m.io.chain->block(m.clock.slot_block(next)); });
    if (!header.is_ok()) continue;
    if (!m.clock.slot(header->timestamp).revealed(m.io.clock->unix_seconds())) {
      m.io.clock->sleep(kPoll, stop);
      continue;
    }
    CRUCIBLE_RETURN_IF_ERROR(m.claim->renew(current));
    CRUCIBLE_RETURN_IF_ERROR(process_window(next, m.st, observer, cx));
    ++next;
    if (m.o.validator.max_windows != 0 && ++done >= m.o.validator.max_windows) break;
  }
  log::info("validator stopped", {});
  return Status::ok();
}

}  // namespace crucible::validator
