#include "crucible/cli/status.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace crucible::cli {

namespace {

using nlohmann::json;

// Below this the penalty (missing_penalty ^ windows without a valid upload)
// leaves nothing of a score worth paying.
constexpr double kPenaltyFloor = 1e-3;

double number(const json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// The newest window result of the history that was evaluated or rejected.
const json* last_result(const json& history) {
  if (!history.is_array()) return nullptr;
  for (auto it = history.rbegin(); it != history.rend(); ++it)
    if (it->is_object()) return &*it;
  return nullptr;
}

}  // namespace

std::string advice_for_rejection(std::string_view reason) {
  if (reason == "missing") return "the validator found no upload: check the miner's log for 'uploaded gradient'";
  if (reason == "too_late") {
    return "the upload came after the slot: training must end sooner (fewer miner.inner_steps, a smaller "
           "micro_batch, or a GPU); check the machine's clock";
  }
  if (reason == "too_early") return "the commitment came before the slot opened: check the machine's clock (NTP)";
  if (reason == "not_observed") {
    return "the validator was not watching when it appeared (it had just started): nothing to do, the next "
           "window counts";
  }
  if (reason == "unreachable" || reason == "download_failed") {
    return "validators could not read the miner's store: check the store's URL and read credentials committed on "
           "chain, and that the bucket answers from outside";
  }
  if (reason == "wrong_signer" || reason == "bad_packet" || reason == "wrong_header") {
    return "the packet is not what this uid's key signs for this window, or its bytes changed after the "
           "commitment (a store that damages or replaces objects): run an unmodified crucible-miner with the key "
           "registered for the uid, on a store that keeps what it is given";
  }
  if (reason == "not_assigned_data") {
    return "the packet claims samples other than the uid's assignment: use the network's dataset and [protocol] "
           "values";
  }
  if (reason == "wrong_shape") return "the update does not fit the model: use the network's [model] preset";
  if (reason == "copy" || reason == "replay") {
    return "the update matches another upload (this window or an earlier one): train your own update each window";
  }
  if (reason == "non_finite" || reason == "evaluation_failed") {
    return "applying the update broke the model: check the miner's loss in its log and lower miner.lr";
  }
  return "see docs/validator.md for this reason";
}

Result<std::vector<ZeroFactor>> explain_zero(std::string_view miner_json) {
  const json j = json::parse(miner_json, nullptr, false);
  if (!j.is_object() || !j.contains("score") || !j["score"].is_object()) {
    return data_loss("not a /v1/miners/{{uid}} answer");
  }
  const json& s = j["score"];
  std::vector<ZeroFactor> out;
  if (number(s, "final", 0) > 0 && number(s, "penalty", 1) >= kPenaltyFloor) return out;
  const json* last = j.contains("history") ? last_result(j["history"]) : nullptr;
  if (!s.contains("last_evaluated") || s["last_evaluated"].is_null()) {
    out.push_back({"not_evaluated", "no validator has evaluated this uid yet",
                   "wait: validators evaluate a sample of uids each window, newcomers first but a few at a time"});
  }
  if (s.value("zeroed", false)) {
    std::string reason = last && last->contains("reason") ? last->value("reason", "") : "";
    std::string detail = last ? last->value("detail", "") : "";
    out.push_back({"rejection",
                   reason.empty() ? "its last evaluated upload was invalid: the score is 0 until one is evaluated valid"
                                  : fmt::format("its upload of window {} was rejected: {}{}", last->value("window", 0),
                                                reason, detail.empty() ? "" : " (" + detail + ")"),
                   reason.empty() ? "see the window's rejections in the score API (/v1/windows/{w})"
                                  : advice_for_rejection(reason)});
  }
  if (const double evidence = number(s, "evidence", 0);
      evidence <= 0 && s.contains("last_evaluated") && !s["last_evaluated"].is_null()) {
    out.push_back({"evidence",
                   fmt::format("its evidence is {:.3f}: applied at the window's common norm, its updates lowered the "
                               "loss on random data by nothing against the best update of their windows",
                               evidence),
                   "train every window on the uid's assigned samples from the network's current model; an update "
                   "that does not help (noise, a stale model) earns nothing"});
  }
  if (const double trust = number(s, "trust", 0);
      trust <= 0 && s.contains("last_evaluated") && !s["last_evaluated"].is_null()) {
    const bool has_z = s.contains("trust_z") && s["trust_z"].is_number();
    out.push_back({"trust",
                   has_z ? fmt::format("its trust is 0 (own-data z accumulated over its evaluations {:.2f}): its "
                                       "updates did not lower the loss on its own assigned samples clearly more "
                                       "than on random samples",
                                       s["trust_z"].get<double>())
                         : fmt::format("its trust is 0 (binary moving average {:.3f}): its updates did not lower "
                                       "the loss on its own assigned data more than on random data",
                                       number(s, "bma", 0)),
                   "train on the uid's assigned samples (the network's dataset and [protocol] values); check that "
                   "the miner's loss falls in its log"});
  }
  if (const double sync = number(s, "sync", 1); sync <= 0) {
    std::string behind = last && last->contains("steps_behind") && (*last)["steps_behind"].is_number()
                             ? fmt::format(" ({:g} outer steps behind)", (*last)["steps_behind"].get<double>())
                             : "";
    out.push_back({"sync", "its model is not the validators' model" + behind,
                   "the miner must apply every window's aggregate: check its log for 'applied aggregate'; if it "
                   "logs 'aggregate not published in time', raise miner.aggregate_wait_s, or, where its waited_s "
                   "is less (the wait was cut short to keep the upload slot), train fewer inner steps"});
  }
  if (const double penalty = number(s, "penalty", 1); penalty < kPenaltyFloor) {
    out.push_back({"penalty", fmt::format("the penalty for windows without a valid upload is {:.2g}", penalty),
                   "upload a valid update every window: the penalty goes back to 1 with the next valid one"});
  }
  if (out.empty()) {
    out.push_back({"unknown", "the score is 0 but no single factor explains it",
                   "see /v1/miners/{uid} in the score API for the numbers"});
  }
  return out;
}

}  // namespace crucible::cli
