// How the validator's state sits in RocksDB (storage::StateStore), shared by
// the node (writes) and the HTTP API (reads). Values are JSON objects.
//   ratings        uid/<uid:05>                 a MinerScore
//   window_scores  w/<window:012>/summary        window summary
//                  w/<window:012>/uid/<uid:05>   one uid's result in the window
//                  u/<uid:05>/<window:012>       the same, keyed for a uid's history
//   weights_log    epoch/<epoch:012>             a weights post (pending | confirmed | failed)
//   meta           set_prev                      the last window the lead published a set for
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "crucible/validator/gauntlet.h"

namespace crucible::validator {

std::string rating_key(std::uint16_t uid);
std::string window_summary_key(std::uint64_t window);
std::string window_uid_key(std::uint64_t window, std::uint16_t uid);
std::string window_prefix(std::uint64_t window);
std::string history_key(std::uint16_t uid, std::uint64_t window);
std::string history_prefix(std::uint16_t uid);
std::string epoch_key(std::uint64_t epoch);

nlohmann::json to_json(const MinerScore& s);
MinerScore score_from_json(const nlohmann::json& j);

}  // namespace crucible::validator
