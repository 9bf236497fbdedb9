// checkpoint/LATEST.json (protocol.md §9), written by the lead after the
// checkpoint itself: {v, window (the last aggregate in the model),
// global_step, key (of the model.safetensors), model (ModelConfig::canonical),
// basis (Keccak-256 of that window's aggregation set, hex)}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "crucible/chain/keccak.h"
#include "crucible/common/bytes.h"
#include "crucible/common/status.h"
#include "crucible/storage/object_store.h"

namespace crucible::protocol {

inline constexpr std::size_t kMaxCheckpointPointerBytes = 64 << 10;

struct CheckpointPointer {
  std::uint64_t window = 0;
  std::uint64_t global_step = 0;
  std::string key;
  std::string model;
  chain::Hash32 basis{};
};

std::string encode_checkpoint_pointer(const CheckpointPointer& p);
// Strict: every field present with its type; the key must be a valid object key.
Result<CheckpointPointer> decode_checkpoint_pointer(std::string_view json);
Result<CheckpointPointer> decode_checkpoint_pointer(ByteSpan bytes);

struct Checkpoint {
  CheckpointPointer pointer;
  Bytes model;  // the safetensors file it names
};
// The lead's latest checkpoint when it is past `applied` (a model holding
// no aggregate takes any): none when the lead has none or none newer;
// failed_precondition when it is for another model shape than
// `model_canonical` (ModelConfig::canonical).
Result<std::optional<Checkpoint>> fetch_newer_checkpoint(storage::ObjectStore& lead,
                                                         std::optional<std::uint64_t> applied,
                                                         const std::string& model_canonical,
                                                         std::uint64_t max_model_bytes);

}  // namespace crucible::protocol
