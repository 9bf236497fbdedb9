#include "crucible/validator/state.h"

#include <fmt/format.h>

namespace crucible::validator {

std::string rating_key(std::uint16_t uid) { return fmt::format("uid/{:05}", uid); }
std::string window_prefix(std::uint64_t window) { return fmt::format("w/{:012}/", window); }
std::string window_summary_key(std::uint64_t window) { return window_prefix(window) + "summary"; }
std::string window_uid_key(std::uint64_t window, std::uint16_t uid) {
  return fmt::format("{}uid/{:05}", window_prefix(window), uid);
}
std::string history_prefix(std::uint16_t uid) { return fmt::format("u/{:05}/", uid); }
std::string history_key(std::uint16_t uid, std::uint64_t window) {
  return fmt::format("{}{:012}", history_prefix(uid), window);
}
std::string epoch_key(std::uint64_t epoch) { return fmt::format("epoch/{:012}", epoch); }

nlohmann::json to_json(const MinerScore& s) {
  return {{"mu", s.rating.mu},
          {"sigma", s.rating.sigma},
          {"ordinal", s.rating.ordinal()},
          {"bma", s.bma},
          {"sync", s.sync},
          {"penalty", s.penalty},
          {"zeroed", s.zeroed},
          {"last_evaluated", s.last_evaluated ? nlohmann::json(*s.last_evaluated) : nlohmann::json(nullptr)},
          {"waiting", s.waiting},
          {"last_gradient_score", s.last_gradient_score},
          {"final", s.final_score}};
}

MinerScore score_from_json(const nlohmann::json& j) {
  MinerScore s;
  s.rating.mu = j.value("mu", s.rating.mu);
  s.rating.sigma = j.value("sigma", s.rating.sigma);
  s.bma = j.value("bma", 0.0);
  s.sync = j.value("sync", 1.0);
  s.penalty = j.value("penalty", 1.0);
  s.zeroed = j.value("zeroed", false);
  if (j.contains("last_evaluated") && j["last_evaluated"].is_number_unsigned()) {
    s.last_evaluated = j["last_evaluated"].get<std::uint64_t>();
  }
  s.waiting = j.value("waiting", 1u);
  s.last_gradient_score = j.value("last_gradient_score", 0.0);
  s.final_score = j.value("final", 0.0);
  return s;
}

}  // namespace crucible::validator
