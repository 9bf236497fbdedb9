#include "crucible/protocol/checkpoint_pointer.h"

#include <nlohmann/json.hpp>

#include "crucible/protocol/object_keys.h"
#include "crucible/storage/object_store.h"

namespace crucible::protocol {

std::string encode_checkpoint_pointer(const CheckpointPointer& p) {
  return nlohmann::json{{"v", 1},       {"window", p.window}, {"global_step", p.global_step},
                        {"key", p.key}, {"model", p.model},   {"basis", to_hex(p.basis)}}
      .dump();
}

Result<CheckpointPointer> decode_checkpoint_pointer(std::string_view text) {
  if (text.size() > kMaxCheckpointPointerBytes) return invalid_argument("checkpoint pointer of {} bytes", text.size());
  auto j = nlohmann::json::parse(text, nullptr, false);
  auto has = [&](const char* k, bool (nlohmann::json::*is)() const noexcept) { return j.contains(k) && (j[k].*is)(); };
  if (!j.is_object() || !j.contains("v") || j["v"] != 1 || !has("window", &nlohmann::json::is_number_unsigned) ||
      !has("global_step", &nlohmann::json::is_number_unsigned) || !has("key", &nlohmann::json::is_string) ||
      !has("model", &nlohmann::json::is_string) || !has("basis", &nlohmann::json::is_string)) {
    return invalid_argument("checkpoint pointer: not a v1 object with window, global_step, key, model, basis");
  }
  CheckpointPointer p;
  p.window = j["window"].get<std::uint64_t>();
  p.global_step = j["global_step"].get<std::uint64_t>();
  p.key = j["key"].get<std::string>();
  CRUCIBLE_RETURN_IF_ERROR(storage::validate_key(p.key).with_context("checkpoint pointer key"));
  p.model = j["model"].get<std::string>();
  auto basis = from_hex_fixed<32>(j["basis"].get<std::string>());
  if (!basis.is_ok()) return invalid_argument("checkpoint pointer: bad basis");
  p.basis = *basis;
  return p;
}

Result<CheckpointPointer> decode_checkpoint_pointer(ByteSpan bytes) {
  return decode_checkpoint_pointer(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

Result<std::optional<Checkpoint>> fetch_newer_checkpoint(storage::ObjectStore& lead,
                                                         std::optional<std::uint64_t> applied,
                                                         const std::string& model_canonical,
                                                         std::uint64_t max_model_bytes) {
  auto latest = lead.get(keys::checkpoint_latest(), kMaxCheckpointPointerBytes);
  if (latest.status().code() == StatusCode::kNotFound) return std::optional<Checkpoint>();
  if (!latest.is_ok()) return latest.status();
  CRUCIBLE_ASSIGN_OR_RETURN(CheckpointPointer ptr, decode_checkpoint_pointer(latest->data));
  if (applied && ptr.window <= *applied) return std::optional<Checkpoint>();
  if (ptr.model != model_canonical) {
    return failed_precondition("the lead's checkpoint is for another model shape ({})", ptr.model);
  }
  CRUCIBLE_ASSIGN_OR_RETURN(storage::Fetched model, lead.get(ptr.key, max_model_bytes));
  return std::optional<Checkpoint>(Checkpoint{std::move(ptr), std::move(model.data)});
}

}  // namespace crucible::protocol
