// Gather (protocol.md §6): every miner's gradient/{w}.crg, checked in the
// order that costs least first: present, in the slot, downloadable, a
// signed packet, by the uid's hotkey, for this uid and window, on the
// uid's assigned data, fitting the model. Each failure is a Rejection.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "crucible/chain/packet_signing.h"
#include "crucible/common/file_io.h"
#include "crucible/common/log.h"
#include "crucible/common/retry.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/update.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

using protocol::Rejection;
namespace keys = protocol::keys;

namespace {

// Keccak of the tensors' payloads: the same update, whoever signed it.
chain::Hash32 content_of(const packet::Packet& p) {
  chain::Keccak256 content;
  for (const auto& t : p.tensors) content.update(t.indices).update(t.codes);
  return content.finish();
}

// The packet's own claims: signer, header, assigned data, shapes.
void check_packet(Upload& u, const chain::Hash32& hotkey, std::uint64_t w, const chain::OpenedPacket& opened,
                  WindowContext& cx) {
  const packet::Packet& p = opened.packet;
  if (cx.chain().hotkey_of(opened.signer) != hotkey) {
    return u.reject(Rejection::kWrongSigner,
                    fmt::format("signed by {}, which is not uid {}'s key", opened.signer.checksum(), u.uid));
  }
  if (p.uid != u.uid || p.window != w || p.protocol_version != protocol::kVersion) {
    return u.reject(Rejection::kWrongHeader,
                    fmt::format("packet names uid {} window {} protocol {}", p.uid, p.window, p.protocol_version));
  }
  const auto L = static_cast<std::uint64_t>(cx.o.model.seq_len);
  auto assigned = cx.dataset.assignment(u.uid, w, cx.o.protocol.samples_per_window, L);
  if (!assigned.is_ok()) {
    return u.reject(Rejection::kNotAssignedData, "cannot recompute the assignment: " + assigned.status().to_string());
  }
  if (cx.dataset.digest(*assigned, L) != p.sample_digest) {
    return u.reject(Rejection::kNotAssignedData, "sample digest mismatch: not the assigned data");
  }
  auto tensors = protocol::decode_update(p, cx.replica.specs());
  if (!tensors.is_ok()) {
    switch (tensors.status().code()) {
      case StatusCode::kInvalidArgument:  // names, shapes, layout
        return u.reject(Rejection::kWrongShape, "does not fit the model: " + tensors.status().to_string());
      case StatusCode::kOutOfRange:  // values that are not finite, or decode to values that are not
        return u.reject(Rejection::kNonFinite, tensors.status().to_string());
      default:  // a payload that is not the codec's
        return u.reject(Rejection::kBadPacket, tensors.status().to_string());
    }
  }
  u.content = content_of(p);
  u.model_digest = p.model_digest;
  u.sketch = sketch_of(*tensors);
  u.signature = index_signature(*tensors, window_seed(cx.private_seed, w));
  u.norm = norm_of(*tensors);
}

// Whether the validator never read the key in the slot or read it only once
// the commitment was there, it did not see it appear: one verdict, one text
// (a replay of past windows gives the same record whenever it runs).
constexpr const char* kNotSeenAppearing =
    "this validator did not see the commitment appear during the slot: when it appeared is not established";

// Timing from what this validator saw (observer.h), never from what the
// store says: the packet downloaded must be one whose commitment this
// validator read. The commitment appeared in (absent_at, seen_at]: when
// both ends fall in the same part of the slot, that is its timing; when
// they do not, a narrow interval (the reads were regular) is judged by
// seen_at, the skew absorbing the rest, and a wide one (the validator was
// not reading: started or restarted late) establishes nothing.
bool judge_timing(Upload& u, const chain::Hash32& packet_hash, const Observation& seen,
                  const protocol::UploadSlot& slot, double narrow_s) {
  const auto& s = seen.sightings;
  auto it = std::find_if(s.begin(), s.end(), [&](const Sighting& x) { return x.object == packet_hash; });
  if (it == s.end()) {
    const bool looked_after = seen.last_poll && *seen.last_poll > slot.end_s() + slot.skew_s;
    if (!s.empty()) {  // the bytes are not the ones committed: damaged in the store, or replaced
      u.reject(Rejection::kBadPacket,
               "its hash is not the commitment this validator saw: the bytes changed after the commitment "
               "(corrupted or replaced)");
    } else if (looked_after) {
      u.reject(Rejection::kTooLate, "no commitment to this packet during the slot");
    } else {
      u.reject(Rejection::kNotObserved, kNotSeenAppearing);
    }
    return false;
  }
  protocol::SlotTiming timing = slot.classify(it->seen_at);
  if (slot.classify(it->absent_at) != timing && it->seen_at - it->absent_at > narrow_s) {
    u.reject(Rejection::kNotObserved, kNotSeenAppearing);
    return false;
  }
  switch (timing) {
    case protocol::SlotTiming::kEarly:
      u.reject(Rejection::kTooEarly,
               fmt::format("committed {:.1f} s before the slot opened", slot.start_s - it->seen_at));
      return false;
    case protocol::SlotTiming::kLate:
      u.reject(Rejection::kTooLate,
               fmt::format("commitment first seen {:.1f} s after the slot ended", it->seen_at - slot.end_s()));
      return false;
    case protocol::SlotTiming::kInside:
      break;
  }
  u.absent_at = it->absent_at;
  u.seen_at = it->seen_at;
  return true;
}

}  // namespace

Upload check_upload(std::uint16_t who, const chain::Hash32& hotkey, std::uint64_t w, const protocol::UploadSlot& slot,
                    std::uint64_t packet_bytes, const Observation& seen, storage::ObjectStore& peer,
                    WindowContext& cx) {
  Upload u;
  u.uid = who;
  auto head = peer.head(keys::gradient(w));
  if (!head.is_ok()) {
    if (head.status().code() == StatusCode::kNotFound) {
      u.reject(Rejection::kMissing, "no gradient for the window");
    } else {
      u.timed_out = head.status().is_transient();
      u.reject(Rejection::kUnreachable, head.status().to_string());
    }
    return u;
  }
  u.uploaded = true;
  // The size follows from the model: anything else is refused before a byte is downloaded.
  if (head->size != packet_bytes) {
    u.reject(Rejection::kBadPacket,
             fmt::format("{} bytes; this model's packets are {} bytes", head->size, packet_bytes));
    return u;
  }
  auto fetched = peer.get(keys::gradient(w), packet_bytes);
  if (!fetched.is_ok()) {
    u.timed_out = fetched.status().is_transient();
    u.reject(Rejection::kDownloadFailed, fetched.status().to_string());
    return u;
  }
  u.bytes = fetched->data.size();
  // Reads are observe_interval_s apart and each takes at most observe_max_latency_s.
  const double narrow_s = 2 * cx.o.validator.observe_interval_s + cx.o.validator.observe_max_latency_s;
  if (!judge_timing(u, chain::keccak256(fetched->data), seen, slot, narrow_s)) return u;
  packet::Limits limits;
  limits.max_packet_bytes = packet_bytes;
  auto opened = chain::open_packet(fetched->data, limits);
  if (!opened.is_ok()) {
    u.reject(Rejection::kBadPacket, opened.status().to_string());
    return u;
  }
  u.digest = opened->digest;
  check_packet(u, hotkey, w, *opened, cx);
  if (!u.valid()) return u;
  // The packet waits on disk, not in memory, until the window is done.
  if (Status s = files::write_file(spool_path(cx, w, who), fetched->data); !s.is_ok()) {
    u.local_failure = s.with_context("keeping a valid packet until the window is done");  // not the miner's doing
  }
  return u;
}

std::filesystem::path spool_dir(const WindowContext& cx, std::uint64_t w) {
  return std::filesystem::path(cx.o.validator.state_dir) / "spool" / std::to_string(w);
}

std::filesystem::path spool_path(const WindowContext& cx, std::uint64_t w, std::uint16_t uid) {
  return spool_dir(cx, w) / fmt::format("{}.crg", uid);
}

Result<std::vector<kernels::CompressedTensor>> spooled_update(std::uint64_t w, std::uint16_t uid, WindowContext& cx) {
  CRUCIBLE_ASSIGN_OR_RETURN(const std::uint64_t packet_bytes, protocol::expected_packet_bytes(cx.replica.specs()));
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, files::read_file(spool_path(cx, w, uid), packet_bytes));
  packet::Limits limits;
  limits.max_packet_bytes = packet_bytes;
  CRUCIBLE_ASSIGN_OR_RETURN(auto opened, chain::open_packet(bytes, limits));
  return protocol::decode_update(opened.packet, cx.replica.specs());
}

namespace {

// Runs check(i) for i in [0, n) on `parallel` threads; an item not started
// before `deadline` (the node's clock, Unix seconds) gets late(i) instead.
template <typename Check, typename Late>
std::vector<Upload> run_bounded(std::size_t n, std::size_t parallel, Clock& clock, double deadline, Check&& check,
                                Late&& late) {
  std::vector<Upload> out(n);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      out[i] = clock.unix_seconds() < deadline ? check(i) : late(i);
    }
  };
  clock.run_threads(std::min(parallel, n), [&](std::size_t) { worker(); });
  return out;
}

}  // namespace

Result<protocol::UploadSlot> read_slot(std::uint64_t w, WindowContext& cx) {
  auto header =
      retry_transient("block header", *cx.io.clock, cx.stop, [&] { return cx.chain().block(cx.clock.slot_block(w)); });
  if (!header.is_ok()) return header.status();
  return cx.clock.slot(header->timestamp);
}

Result<std::vector<Upload>> gather(std::uint64_t w, const protocol::UploadSlot& slot, const chain::Metagraph& mg,
                                   std::map<std::uint16_t, std::uint64_t>& cooldown_until, const Observer& observer,
                                   WindowContext& cx) {
  Clock& time = *cx.io.clock;
  const double deadline = time.unix_seconds() + cx.o.validator.gather_deadline_s;
  CRUCIBLE_ASSIGN_OR_RETURN(const std::uint64_t packet_bytes, protocol::expected_packet_bytes(cx.replica.specs()));
  // Stores are resolved one by one (the chain client is not shared across
  // threads); the checks run fetch_parallelism at a time.
  std::vector<std::pair<const chain::Neuron*, std::shared_ptr<storage::ObjectStore>>> work;
  std::vector<Upload> out;
  auto unreachable = [&](std::uint16_t uid, std::string why) {
    Upload u;
    u.uid = uid;
    u.reject(Rejection::kUnreachable, std::move(why));
    out.push_back(std::move(u));
  };
  for (const auto& n : mg.neurons) {
    if (n.uid == cx.uid || n.validator_permit) continue;  // validators are not miners
    if (auto c = cooldown_until.find(n.uid); c != cooldown_until.end() && c->second > w) {
      unreachable(n.uid, fmt::format("its store timed out lately: not contacted before window {}", c->second));
      continue;
    }
    auto peer = cx.peers.store_of(n.uid);
    if (!peer.is_ok()) {
      unreachable(n.uid, "no readable store: " + peer.status().to_string());
      continue;
    }
    work.emplace_back(&n, *peer);
  }
  auto checked = run_bounded(
      work.size(), std::max<std::size_t>(1, cx.o.validator.fetch_parallelism), time, deadline,
      [&](std::size_t j) {
        const std::uint16_t uid = work[j].first->uid;
        return check_upload(uid, work[j].first->hotkey, w, slot, packet_bytes, observer.observed(uid, w),
                            *work[j].second, cx);
      },
      [&](std::size_t j) {
        Upload u;
        u.uid = work[j].first->uid;
        u.reject(Rejection::kUnreachable, "not reached before the gather deadline");
        return u;
      });
  for (auto& u : checked) {
    if (u.local_failure) return *u.local_failure;
    if (u.timed_out) cooldown_until[u.uid] = w + 1 + kPeerCooldownWindows;
    out.push_back(std::move(u));
  }
  std::sort(out.begin(), out.end(), [](const Upload& a, const Upload& b) { return a.uid < b.uid; });
  return out;
}

}  // namespace crucible::validator
