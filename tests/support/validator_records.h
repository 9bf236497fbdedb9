// Reading what a validator recorded (its RocksDB), for tests of networks,
// in process or of binaries.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "crucible/storage/state_store.h"
#include "crucible/validator/state.h"

namespace crucible::testing {

// A number of a uid's score record (-1e9: never scored, or no such field).
inline double rating_field(storage::StateStore& db, std::uint16_t uid, const char* field) {
  auto v = db.get(storage::Family::kRatings, validator::rating_key(uid));
  if (!v.is_ok() || !v->has_value()) return -1e9;
  return nlohmann::json::parse(**v).value(field, -1e9);
}

// A uid's final score (-1e9: never scored).
inline double final_of(storage::StateStore& db, std::uint16_t uid) { return rating_field(db, uid, "final"); }

// A uid's score record as the validator stored it (for failure messages).
inline std::string rating_json(storage::StateStore& db, std::uint16_t uid) {
  auto v = db.get(storage::Family::kRatings, validator::rating_key(uid));
  return v.is_ok() && v->has_value() ? std::string((*v)->begin(), (*v)->end()) : "(none)";
}

// Every rejection of each uid over the run: "reason: detail; ...".
inline std::map<std::uint16_t, std::string> rejections(storage::StateStore& db) {
  std::map<std::uint16_t, std::string> reasons;
  auto rows = db.scan(storage::Family::kWindowScores, "w/");
  if (!rows.is_ok()) return reasons;
  for (const auto& [k, v] : *rows) {
    auto j = nlohmann::json::parse(v);
    if (j.contains("reason") && j.contains("uid"))
      reasons[j["uid"].get<std::uint16_t>()] += j["reason"].get<std::string>() + ": " + j.value("detail", "") + "; ";
  }
  return reasons;
}

// How many outer steps behind each evaluated upload of `uid` trained
// (protocol.md §6, sync), by window.
inline std::map<std::uint64_t, double> steps_behind(storage::StateStore& db, std::uint64_t first, std::uint64_t last,
                                                    std::uint16_t uid) {
  std::map<std::uint64_t, double> out;
  for (std::uint64_t w = first; w <= last; ++w) {
    auto row = db.get(storage::Family::kWindowScores, validator::window_uid_key(w, uid));
    if (!row.is_ok() || !row->has_value()) continue;
    auto r = validator::uid_result_from_json(nlohmann::json::parse(**row));
    if (r.is_ok() && r->eval) out[w] = r->eval->steps_behind;
  }
  return out;
}

}  // namespace crucible::testing
