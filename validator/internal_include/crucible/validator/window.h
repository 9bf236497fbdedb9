// One window of the validator, step by step (protocol.md §6, §8):
//   gather -> copies -> evaluate -> sync -> score -> fix the set (lead) -> record
//   -> advance the model -> weights
// Each step is a function of its own file with explicit inputs and outputs;
// process_window (window.cpp) calls them in that order. What the steps
// share is a WindowContext (I/O, options, the model) and the
// ValidatorState carried from window to window.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crucible/chain/chain.h"
#include "crucible/common/dataset.h"
#include "crucible/common/model_config.h"
#include "crucible/common/replica.h"
#include "crucible/kernels/backend.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/model_chain.h"
#include "crucible/protocol/node_io.h"
#include "crucible/protocol/options.h"
#include "crucible/protocol/rejection.h"
#include "crucible/protocol/window_clock.h"
#include "crucible/storage/state_store.h"
#include "crucible/validator/gauntlet.h"
#include "crucible/validator/node_options.h"
#include "crucible/validator/observer.h"
#include "crucible/validator/similarity.h"
#include "crucible/validator/state.h"
#include "crucible/validator/validator_options.h"

namespace crucible::validator {

// Seeds: the window mixed into the private seed, and the "uid that does
// not exist" whose assignment is the window's random data (protocol.md §2, §6).
inline constexpr std::uint64_t kWindowSeedMixer = 0x9E3779B97F4A7C15ull;
inline constexpr std::uint64_t kOwnDataSalt = 0x6f776e2d64617461ull;  // "own-data": the own samples' draw
inline constexpr std::uint16_t kRandomPoolUidBase = 60000;
inline constexpr std::uint16_t kRandomPoolUidSpan = 5000;
using protocol::kPoll;

// One uid's upload for the window, after every check.
struct Upload {
  std::uint16_t uid = 0;
  std::optional<protocol::Rejection> rejection;
  std::string detail;     // for people: what exactly was wrong
  bool uploaded = false;  // an object was there (valid or not)
  double absent_at = 0;   // when this validator saw this version appear: after absent_at (Unix s)...
  double seen_at = 0;     // ...and by seen_at (observer.h)
  chain::Hash32 digest{};
  chain::Hash32 content{};       // Keccak of the tensors' payloads: the same update signed by anyone
  chain::Hash32 model_digest{};  // the packet's signed claim of the model it trained on (§7)
  // What the window's steps need of a valid update, a few KB whatever the
  // model's size; the packet itself waits on disk (spool_path) until the
  // window is done: memory per upload is bounded, not the update's size.
  Sketch sketch;                        // of the decoded values (similarity.h)
  IndexSignature signature;             // of its kept positions, keyed by the window's seed (copies)
  double norm = 0;                      // L2 norm of the decoded update (clipping)
  bool timed_out = false;               // the store did not answer in time (the uid cools down)
  std::uint64_t bytes = 0;              // bytes downloaded
  std::optional<Status> local_failure;  // this validator's own (its disk): the window stops, nobody is blamed

  bool valid() const { return uploaded && !rejection; }
  void reject(protocol::Rejection r, std::string why) {
    rejection = r;
    detail = std::move(why);
  }
};

// A peer whose store timed out is not contacted for this many windows: a
// silent store must not cost the fetch deadline every window.
inline constexpr std::uint64_t kPeerCooldownWindows = 3;

// An update or an applied aggregate of an earlier window, as a sketch.
struct Remembered {
  std::uint64_t window = 0;
  std::optional<std::uint16_t> uid;  // nullopt: the aggregate applied after that window
  Sketch sketch;
};

// Carried from window to window (and rebuilt by restore()).
struct ValidatorState {
  std::map<std::uint16_t, MinerScore> scores;
  protocol::ChainState model;
  std::vector<Remembered> history;  // the last history_windows windows' updates and aggregates (replays)
  std::map<std::uint16_t, std::uint64_t> cooldown_until;  // uid -> first window it is contacted again
};

// What a window's steps read of the node's configuration: the protocol,
// the [validator] section, the model, the subnet and the object-size
// bound. Not the chain endpoint, the store's credentials, the API or the
// log settings, which belong to the node that runs the steps.
struct WindowOptions {
  const protocol::Options& protocol;
  const ValidatorOptions& validator;
  const model::ModelConfig& model;
  std::uint16_t netuid = 0;
  std::uint64_t max_object_bytes = 0;  // [storage] max_object_bytes: the most read from any peer

  static WindowOptions of(const ValidatorNodeOptions& o) {
    return {o.protocol, o.validator, o.model, o.chain.netuid, o.storage.max_object_bytes};
  }
};

struct WindowContext {
  WindowOptions o;
  protocol::NodeIo& io;
  protocol::WindowClock clock;
  protocol::PeerDirectory& peers;
  storage::StateStore& db;
  const data::Dataset& dataset;
  const data::Dataset* heldout;  // the val split; null when there is none or it is off
  model::Replica& replica;
  std::uint16_t uid = 0;           // this validator's
  std::uint64_t private_seed = 0;  // seeds the evaluation choice and the random data
  const std::atomic<bool>& stop;
  kernels::Backend& codec;  // decode and merge: validator.device

  chain::Chain& chain() { return *io.chain; }
};

// The window's seed: the validator's private seed mixed with w (the
// evaluation choice, the random data, the copy check's signatures).
inline std::uint64_t window_seed(std::uint64_t private_seed, std::uint64_t w) {
  return private_seed ^ (w * kWindowSeedMixer);
}
// Where window w's valid packets wait until it is done (state_dir/spool/{w}),
// and one uid's.
std::filesystem::path spool_dir(const WindowContext& cx, std::uint64_t w);
std::filesystem::path spool_path(const WindowContext& cx, std::uint64_t w, std::uint16_t uid);
// A valid upload's update, read back from its spooled packet.
Result<std::vector<kernels::CompressedTensor>> spooled_update(std::uint64_t w, std::uint16_t uid, WindowContext& cx);

// gather.cpp: window w's upload slot, from its opening block's header
// (slot_block(w), the first block of w + 1), read once a window.
Result<protocol::UploadSlot> read_slot(std::uint64_t w, WindowContext& cx);
// Every miner's upload for w, checked (a rejection per uid).
// Peers are checked fetch_parallelism at a time; none is started after
// gather_deadline_s, each call ends by fetch_deadline_s, and a uid whose
// store timed out is skipped for kPeerCooldownWindows (`cooldown_until`).
// Timing comes from `observer` (what this validator saw during the slot).
Result<std::vector<Upload>> gather(std::uint64_t w, const protocol::UploadSlot& slot, const chain::Metagraph& mg,
                                   std::map<std::uint16_t, std::uint64_t>& cooldown_until, const Observer& observer,
                                   WindowContext& cx);
// One uid: HEAD (present, exactly `packet_bytes` long), GET, the version's
// timing by `seen` (seen in the slot), then the packet's own claims; a
// valid packet is written to spool_path.
Upload check_upload(std::uint16_t who, const chain::Hash32& hotkey, std::uint64_t w, const protocol::UploadSlot& slot,
                    std::uint64_t packet_bytes, const Observation& seen, storage::ObjectStore& peer, WindowContext& cx);

// copies.cpp: mark_copies is pure; remember and restore_history keep the
// history's sketches in RocksDB (Family::kSketches). An update like one of `history` (|cosine| >=
// copy_cosine) is a replay; two uploads of the same update in the window
// (same payload, top-k index overlap >= copy_overlap, or |cosine| >=
// copy_cosine) are both copies.
// Index overlaps are estimated from the uploads' bottom-k signatures
// (gauntlet.h, made at gather): every pair costs the same whatever the
// model's size.
struct SameUpdate {
  double copy_overlap = 0.5;
  double copy_cosine = 0.3;
};
void mark_copies(std::vector<Upload>& uploads, const std::vector<Remembered>& history, const SameUpdate& same);
// After w: its uploads' sketches and (when one was applied) its aggregate's
// join the history, in RocksDB too; windows before w - history_windows + 1 go.
Status remember(std::uint64_t w, const std::vector<Upload>& uploads, const Sketch* aggregate,
                std::uint32_t history_windows, std::vector<Remembered>& history, storage::StateStore& db);
// At start: the history kept in RocksDB.
Result<std::vector<Remembered>> restore_history(storage::StateStore& db);

// aggregation.cpp: once w is scored, the lead fixes its set (admitted uids
// only, validator::admitted), or reads the one it already published; it
// first stores the members' packets in its own store
// (keys::set_packet), then the set; the set's bytes as stored come with it.
struct PublishedSet {
  protocol::AggregationSet set;
  Bytes bytes;
};
Result<PublishedSet> fix_aggregation_set(std::uint64_t w, const std::vector<Upload>& uploads, const ValidatorState& st,
                                         WindowContext& cx);
// theta_{w+1}: the lead applies its own set; others wait for the lead's,
// and load the lead's checkpoint when a set cannot be applied.
Status advance_model(std::uint64_t w, const chain::Metagraph& mg, const std::optional<PublishedSet>& own,
                     ValidatorState& st, WindowContext& cx);
// The validator's model in the lead's set chain: cx.replica moved along
// `state` by protocol::ModelChain (keeping the last merged update for sync).
class ValidatorChain {
 public:
  ValidatorChain(protocol::ChainState& state, WindowContext& cx);
  protocol::ModelChain* operator->() { return &chain_; }

 private:
  protocol::ChainModelOf<model::Replica> link_;
  protocol::ModelChain chain_;
};
// state_dir/model.safetensors: the model with its chain state in its metadata.
Status save_model(const protocol::ChainState& model, WindowContext& cx);

// evaluate.cpp: Gauntlet losses for a sample of the valid uploads
// (choose_for_evaluation), the most urgent first. No evaluation but the
// first starts at or after `deadline` (Unix seconds, the node's clock): the
// uids left are not evaluated this window, so they wait longer and go first
// in the next.
struct Evaluated {
  WindowInput input;
  WindowSummary summary;
};
Result<Evaluated> evaluate(std::uint64_t w, std::vector<Upload>& uploads, const ValidatorState& st, WindowContext& cx,
                           double deadline = std::numeric_limits<double>::infinity());

// sync.cpp: steps behind for each evaluated uid: 0 when its packet's signed
// model digest is the digest of the validator's own model at that uid's
// positions; otherwise measured from its fingerprint file, which must carry
// that same digest; the cap when neither holds.
std::map<std::uint16_t, double> sync(std::uint64_t w, const std::vector<Evaluation>& evaluations,
                                     const std::vector<Upload>& uploads, const protocol::ChainState& model,
                                     WindowContext& cx);

// record.cpp: w's results, one RocksDB batch with the progress mark.
std::vector<UidResult> window_results(const std::vector<Upload>& uploads, const WindowInput& input,
                                      const std::map<std::uint16_t, MinerScore>& scores);
Status record_window(std::uint64_t w, const std::vector<UidResult>& results, const WindowSummary& summary,
                     const std::map<std::uint16_t, MinerScore>& scores, storage::StateStore& db);

// progress.cpp: the global model after the window: held-out loss on the
// first heldout_samples samples of the val split, tokens behind the
// aggregate applied, bytes received; recorded under progress_key(w). It is
// written after the window's record; a restart that finds the last
// committed window without one measures it on the restored model.
Result<ProgressRecord> measure_progress(std::uint64_t w, std::uint64_t bytes_received, const ValidatorState& st,
                                        WindowContext& cx);
Status record_progress(const ProgressRecord& p, storage::StateStore& db);
// After a restart: the last committed window's progress, if it was lost.
Status complete_progress(std::uint64_t last, const ValidatorState& st, WindowContext& cx);

// weights.cpp: every weights_every windows, logged so a restart never posts
// twice; on commit-reveal subnets, every window also reveals the commits
// whose reveal epoch has come.
Status maybe_post_weights(std::uint64_t w, const ValidatorState& st, WindowContext& cx);
// After a restart: when `last` was a posting window and nothing is logged
// for its epoch (the node stopped between the window's record and its
// post), the post is made now. A logged one (sent or not) is left to the
// next window's maybe_post_weights, which never posts twice.
Status post_missed_weights(std::uint64_t last, const ValidatorState& st, WindowContext& cx);

// The subnet's rules for a weights vector (subnets/weights.rs check_length
// and max_weight_limited at opentensor/subtensor 14bc6f9), applied before
// posting: at least min(n_uids, min_allowed_weights) uids (others are added
// with weight 0), and no uid over max_weight_limit / 65535 of the total
// (larger shares are capped and the excess spread over the rest). Sorted by
// uid. failed_precondition when the cap cannot be met by the uids that have
// weight.
Result<std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>>> fit_weights_to_subnet(
    std::vector<std::uint16_t> uids, std::vector<std::uint16_t> values, std::size_t n_uids,
    const chain::SubnetParams& sp);

// window.cpp: the steps in order; `observer` is what this validator saw of w's slot.
Status process_window(std::uint64_t w, ValidatorState& st, const Observer& observer, WindowContext& cx);

}  // namespace crucible::validator
