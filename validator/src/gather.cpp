// Gather (protocol.md §6): every miner's gradient/{w}.crg, checked in the
// order that costs least first: present, in the slot, downloadable, a
// signed packet, by the uid's hotkey, for this uid and window, on the
// uid's assigned data, fitting the model. Each failure is a Rejection.
#include <future>

#include <fmt/format.h>

#include "crucible/chain/packet_signing.h"
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
  if (!tensors.is_ok())
    return u.reject(Rejection::kWrongShape, "does not fit the model: " + tensors.status().to_string());
  u.content = content_of(p);
  u.tensors = std::move(*tensors);
}

}  // namespace

Upload check_upload(std::uint16_t who, const chain::Hash32& hotkey, std::uint64_t w, const protocol::UploadSlot& slot,
                    storage::ObjectStore& peer, WindowContext& cx) {
  Upload u;
  u.uid = who;
  auto head = peer.head(keys::gradient(w));
  if (!head.is_ok()) {
    if (head.status().code() == StatusCode::kNotFound) {
      u.reject(Rejection::kMissing, "no gradient for the window");
    } else {
      u.reject(Rejection::kUnreachable, head.status().to_string());
    }
    return u;
  }
  u.uploaded = true;
  u.last_modified_ms = head->last_modified_ms;
  switch (slot.classify(static_cast<double>(head->last_modified_ms) / 1000.0)) {
    case protocol::SlotTiming::kEarly:
      u.reject(Rejection::kTooEarly, "uploaded before the slot opened");
      return u;
    case protocol::SlotTiming::kLate:
      u.reject(Rejection::kTooLate, "uploaded after the slot closed");
      return u;
    case protocol::SlotTiming::kInside:
      break;
  }
  auto fetched = peer.get(keys::gradient(w), cx.o.storage.max_object_bytes);
  if (!fetched.is_ok()) {
    u.reject(Rejection::kDownloadFailed, fetched.status().to_string());
    return u;
  }
  packet::Limits limits;
  limits.max_packet_bytes = cx.o.storage.max_object_bytes;
  auto opened = chain::open_packet(fetched->data, limits);
  if (!opened.is_ok()) {
    u.reject(Rejection::kBadPacket, opened.status().to_string());
    return u;
  }
  u.digest = opened->digest;
  check_packet(u, hotkey, w, *opened, cx);
  return u;
}

Result<std::vector<Upload>> gather(std::uint64_t w, const chain::Metagraph& mg, WindowContext& cx) {
  auto header = retry_transient("block header", cx.stop, [&] { return cx.chain().block(cx.clock.slot_block(w)); });
  if (!header.is_ok()) return header.status();
  const protocol::UploadSlot slot = cx.clock.slot(header->timestamp);
  // Stores are resolved one by one (the chain client is not shared across
  // threads); downloads and checks run fetch_parallelism at a time.
  std::vector<std::pair<const chain::Neuron*, std::shared_ptr<storage::ObjectStore>>> work;
  std::vector<Upload> out;
  for (const auto& n : mg.neurons) {
    if (n.uid == cx.uid || n.validator_permit) continue;  // validators are not miners
    auto peer = cx.peers.store_of(n.uid);
    if (!peer.is_ok()) {
      Upload u;
      u.uid = n.uid;
      u.reject(Rejection::kUnreachable, "no readable store: " + peer.status().to_string());
      out.push_back(std::move(u));
      continue;
    }
    work.emplace_back(&n, *peer);
  }
  const std::size_t parallel = std::max<std::size_t>(1, cx.o.validator.fetch_parallelism);
  for (std::size_t i = 0; i < work.size(); i += parallel) {
    std::vector<std::future<Upload>> batch;
    for (std::size_t j = i; j < std::min(work.size(), i + parallel); ++j) {
      batch.push_back(std::async(std::launch::async, [&, j] {
        return check_upload(work[j].first->uid, work[j].first->hotkey, w, slot, *work[j].second, cx);
      }));
    }
    for (auto& f : batch) out.push_back(f.get());
  }
  std::sort(out.begin(), out.end(), [](const Upload& a, const Upload& b) { return a.uid < b.uid; });
  return out;
}

}  // namespace crucible::validator
