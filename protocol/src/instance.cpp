#include "crucible/protocol/instance.h"

#include <algorithm>
#include <array>
#include <random>

#include <nlohmann/json.hpp>

#include "crucible/chain/chain.h"
#include "crucible/chain/keys.h"
#include "crucible/common/file_io.h"
#include "crucible/common/log.h"
#include "crucible/common/version.h"
#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/node_io.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/peers.h"
#include "crucible/protocol/window_clock.h"
#include "crucible/storage/object_store.h"

namespace crucible::protocol {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kIdBytes = 16;

bool is_id(const std::string& s) {
  return s.size() == 2 * kIdBytes &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The id of this node's instance: made once, kept in its state folder.
Result<std::string> instance_id(const fs::path& state_dir) {
  const fs::path file = state_dir / "instance_id";
  std::error_code ec;
  if (fs::exists(file, ec)) {
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes b, files::read_file(file, 2 * kIdBytes + 1));
    std::string id(b.begin(), b.end());
    while (!id.empty() && id.back() == '\n') id.pop_back();
    if (!is_id(id))
      return data_loss("{} is not an instance id (32 hex digits): remove it to make a new one", file.string());
    return id;
  }
  std::random_device rd;
  std::array<std::uint8_t, kIdBytes> raw{};
  for (auto& b : raw) b = static_cast<std::uint8_t>(rd());
  std::string id = to_hex(raw, false);
  fs::create_directories(state_dir, ec);
  const std::string text = id + "\n";
  CRUCIBLE_RETURN_IF_ERROR(files::write_file_atomic(file, as_bytes(text)));
  return id;
}

Status put(storage::ObjectStore& store, const InstanceRecord& r) {
  return store.put(keys::instance(), as_bytes(encode_instance(r)));
}

}  // namespace

std::string encode_instance(const InstanceRecord& r) {
  return json{{"v", 1},
              {"hotkey", r.hotkey},
              {"instance", r.instance},
              {"window", r.window},
              {"started_window", r.started_window},
              {"model", r.model},
              {"version", r.version}}
      .dump();
}

Result<InstanceRecord> decode_instance(ByteSpan bytes) {
  if (bytes.size() > kMaxInstanceBytes) return invalid_argument("instance record of {} bytes", bytes.size());
  auto j = json::parse(bytes.begin(), bytes.end(), nullptr, false);
  auto has = [&](const char* k, bool (json::*is)() const noexcept) { return j.contains(k) && (j[k].*is)(); };
  if (!j.is_object() || !j.contains("v") || j["v"] != 1 || !has("hotkey", &json::is_string) ||
      !has("instance", &json::is_string) || !has("window", &json::is_number_unsigned) ||
      !has("started_window", &json::is_number_unsigned) || !has("model", &json::is_string) ||
      !has("version", &json::is_string)) {
    return invalid_argument(
        "instance record: not a v1 object with hotkey, instance, window, started_window, model, version");
  }
  InstanceRecord r;
  r.hotkey = j["hotkey"].get<std::string>();
  r.instance = j["instance"].get<std::string>();
  if (!is_id(r.instance)) return invalid_argument("instance record: the instance id is not 32 hex digits");
  r.window = j["window"].get<std::uint64_t>();
  r.started_window = j["started_window"].get<std::uint64_t>();
  r.model = j["model"].get<std::string>();
  r.version = j["version"].get<std::string>();
  return r;
}

Result<std::optional<InstanceRecord>> read_instance(storage::ObjectStore& store) {
  auto got = store.get(keys::instance(), kMaxInstanceBytes);
  if (got.status().code() == StatusCode::kNotFound) return std::optional<InstanceRecord>();
  if (!got.is_ok()) return got.status();
  CRUCIBLE_ASSIGN_OR_RETURN(InstanceRecord r, decode_instance(got->data));
  return std::optional<InstanceRecord>(std::move(r));
}

Status check_lead_model(chain::Chain& chain, PeerDirectory& peers, std::uint16_t netuid, std::uint16_t self,
                        const std::string& model) {
  auto metagraph = chain.metagraph(netuid);
  if (!metagraph.is_ok()) return Status::ok();
  auto lead = lead_validator(*metagraph);
  if (!lead || *lead == self) return Status::ok();
  auto store = peers.store_of(*lead);
  if (!store.is_ok()) return Status::ok();
  auto record = read_instance(**store);
  if (!record.is_ok() || !*record || (*record)->model == model) return Status::ok();
  return invalid_argument(
      "the lead validator (uid {}) runs a model of another shape: {}; this node's [model] is {}. Use the "
      "network's model preset (its manifest's [model], docs/network.md)",
      *lead, (*record)->model, model);
}

Result<InstanceClaim> InstanceClaim::acquire(std::shared_ptr<storage::ObjectStore> store, const fs::path& state_dir,
                                             InstanceRecord mine, std::uint64_t current_window) {
  CRUCIBLE_ASSIGN_OR_RETURN(mine.instance, instance_id(state_dir));
  mine.window = current_window;
  mine.started_window = current_window;
  auto theirs = read_instance(*store);
  if (!theirs.is_ok() && theirs.status().is_transient())
    return theirs.status().with_context("reading " + keys::instance());
  if (!theirs.is_ok()) {
    log::warn("this store's instance record is unreadable; writing this node's",
              {{"key", keys::instance()}, {"error", theirs.status().to_string()}});
  } else if (*theirs && (*theirs)->instance != mine.instance &&
             (*theirs)->window + kInstanceLiveWindows >= current_window) {
    const InstanceRecord& t = **theirs;
    if (t.hotkey != mine.hotkey) {
      return already_exists(
          "the store {} is in use by another node (hotkey {}, claimed at window {}; the chain is at window {}): "
          "every node needs its own store ([storage] url or prefix)",
          store->describe(), t.hotkey, t.window, current_window);
    }
    return already_exists(
        "another instance of this node (hotkey {}, instance {}, another state folder) claimed the store {} at "
        "window {}; the chain is at window {}. Two instances of one key would post conflicting weights and "
        "uploads: stop the other one, or, if it has stopped, start this one after window {}",
        t.hotkey, t.instance, store->describe(), t.window, current_window, t.window + kInstanceLiveWindows);
  }
  CRUCIBLE_RETURN_IF_ERROR(put(*store, mine).with_context("writing " + keys::instance()));
  log::info("claimed the store", {{"instance", mine.instance}, {"window", current_window}});
  return InstanceClaim(std::move(store), std::move(mine));
}

Status InstanceClaim::renew(std::uint64_t window) {
  auto theirs = read_instance(*store_);
  if (!theirs.is_ok()) {
    log::warn("cannot read this store's instance record; renewing the claim",
              {{"key", keys::instance()}, {"error", theirs.status().to_string()}});
  } else if (*theirs && (*theirs)->instance != mine_.instance && (*theirs)->window >= mine_.window) {
    return already_exists(
        "another instance of this node (hotkey {}, instance {}) claimed the store {} at window {}: this one "
        "stops so that only one posts weights and uploads; run one instance per key",
        (*theirs)->hotkey, (*theirs)->instance, store_->describe(), (*theirs)->window);
  }
  mine_.window = std::max(mine_.window, window);
  if (Status st = put(*store_, mine_); !st.is_ok()) {
    log::warn("cannot renew the claim on this store", {{"key", keys::instance()}, {"error", st.to_string()}});
  }
  return Status::ok();
}

Result<InstanceClaim> claim_at_start(NodeIo& io, PeerDirectory& peers, std::uint16_t netuid, std::uint16_t uid,
                                     const chain::PrivateKey& key, const std::string& model, const WindowClock& clock,
                                     const fs::path& state_dir) {
  CRUCIBLE_RETURN_IF_ERROR(check_lead_model(*io.chain, peers, netuid, uid, model));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t head, io.chain->block_number());
  InstanceRecord mine{key.address().hex(), "", 0, 0, model, std::string(project_version())};
  return InstanceClaim::acquire(io.store, state_dir, std::move(mine), clock.window_of(head));
}

}  // namespace crucible::protocol
