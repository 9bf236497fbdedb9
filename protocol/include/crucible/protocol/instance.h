// One running instance per node key (protocol.md §11): a node claims its own
// store by writing instance.json {hotkey, instance, window, started_window,
// model, version} at start and again every window. `instance` is a random id
// kept in the node's state folder, so a restart of the same node (same
// state_dir) is the same instance, and a second copy started with the same
// key and store but another state folder is not:
//   - at start, a claim by another instance renewed within the last
//     kInstanceLiveWindows windows refuses the start (already_exists);
//   - every window, a claim by another instance written since this one's
//     last renewal stops this one (already_exists),
// so that two copies never both post weights or uploads. A claim is also
// what a node says about itself to peers: followers read the lead's
// `model` to refuse a model of another shape before they train on it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "crucible/common/bytes.h"
#include "crucible/common/status.h"

namespace crucible::storage {
class ObjectStore;
}
namespace crucible::chain {
class Chain;
class PrivateKey;
}  // namespace crucible::chain

namespace crucible::protocol {

inline constexpr std::uint64_t kInstanceLiveWindows = 2;
inline constexpr std::size_t kMaxInstanceBytes = 4 << 10;

struct InstanceRecord {
  std::string hotkey;    // the node's address, 0x-hex
  std::string instance;  // 32 hex digits
  std::uint64_t window = 0;
  std::uint64_t started_window = 0;
  std::string model;  // ModelConfig::canonical()
  std::string version;
};

std::string encode_instance(const InstanceRecord& r);
// Strict: every field with its type, the instance id 32 hex digits, at most
// kMaxInstanceBytes.
Result<InstanceRecord> decode_instance(ByteSpan bytes);

// A node's claim in `store` (none when absent). Read from a peer's store it
// tells what the peer says it is: nothing in it is evidence of work.
Result<std::optional<InstanceRecord>> read_instance(storage::ObjectStore& store);

class PeerDirectory;
class WindowClock;
struct NodeIo;

// Start-up check of a follower: the lead validator's record names the model
// shape it runs; a node whose `model` (ModelConfig::canonical()) differs
// could apply none of its sets, so it is refused (invalid_argument naming
// both shapes and the fix) before it trains or posts anything. Passes when
// there is no lead, `self` leads, or the lead has no readable record yet.
Status check_lead_model(chain::Chain& chain, PeerDirectory& peers, std::uint16_t netuid, std::uint16_t self,
                        const std::string& model);

class InstanceClaim {
 public:
  // Reads (or creates) the instance id in state_dir/instance_id, checks the
  // store's claim and writes this node's. `mine` gives hotkey, model and
  // version; its instance and windows are set here.
  static Result<InstanceClaim> acquire(std::shared_ptr<storage::ObjectStore> store,
                                       const std::filesystem::path& state_dir, InstanceRecord mine,
                                       std::uint64_t current_window);

  // Before window `window`'s posts: already_exists when another instance
  // claimed the store since this one last did; otherwise the claim is
  // renewed. A store that cannot be read or written is logged and passed
  // over (the next renewal checks again).
  Status renew(std::uint64_t window);

  const std::string& id() const { return mine_.instance; }

 private:
  InstanceClaim(std::shared_ptr<storage::ObjectStore> store, InstanceRecord mine)
      : store_(std::move(store)), mine_(std::move(mine)) {}
  std::shared_ptr<storage::ObjectStore> store_;
  InstanceRecord mine_;
};

// A node's start, after join_subnet: check_lead_model, then the claim on
// io.store at the chain's current window, with the node's record (its key's
// address, `model`, this build's version). Errors as those two give them.
Result<InstanceClaim> claim_at_start(NodeIo& io, PeerDirectory& peers, std::uint16_t netuid, std::uint16_t uid,
                                     const chain::PrivateKey& key, const std::string& model, const WindowClock& clock,
                                     const std::filesystem::path& state_dir);

}  // namespace crucible::protocol
