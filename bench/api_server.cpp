// The score API on a synthetic validator state, for bench/run_api.sh: 256
// uids with scores and 50 windows of per-uid results in RocksDB. Prints
// "port N" once listening; runs until stdin closes or SIGTERM.
//   api_server STATE_DIR
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "crucible/validator/api_server.h"
#include "crucible/validator/state.h"

using namespace crucible;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: api_server STATE_DIR\n");
    return 2;
  }
  auto db = storage::StateStore::open(std::string(argv[1]) + "/db");
  if (!db.is_ok()) {
    std::fprintf(stderr, "%s\n", db.status().to_string().c_str());
    return 1;
  }
  auto bytes = [](const nlohmann::json& j) {
    std::string s = j.dump();
    return Bytes(s.begin(), s.end());
  };
  for (std::uint64_t w = 0; w < 50; ++w) {
    storage::StateStore::Batch b;
    for (std::uint16_t uid = 0; uid < 256; ++uid) {
      b.put(storage::Family::kWindowScores, validator::history_key(uid, w), bytes({{"uid", uid}, {"valid", true}}));
      b.put(storage::Family::kWindowScores, validator::window_uid_key(w, uid),
            bytes({{"uid", uid},
                   {"valid", true},
                   {"loss_before_own", 5.0},
                   {"loss_after_own", 4.9},
                   {"loss_before_rand", 5.1},
                   {"loss_after_rand", 5.05},
                   {"gradient_score", 0.01},
                   {"final", 0.3}}));
      if (w == 49) {
        validator::MinerScore s;
        s.rating = {25.0 + uid % 7, 6.0};
        s.bma = 0.1;
        s.final_score = (s.rating.ordinal()) * 0.1;
        s.last_evaluated = w;
        b.put(storage::Family::kRatings, validator::rating_key(uid), bytes(validator::to_json(s)));
      }
    }
    b.put(storage::Family::kWindowScores, validator::window_summary_key(w), bytes({{"window", w}}));
    validator::ProgressRecord progress{w, 7.5 - 0.02 * static_cast<double>(w), 64, 16 * 128 * 15 * w, 31555 * 15, {}};
    for (std::uint16_t uid = 1; uid <= 15; ++uid) progress.aggregate.push_back(uid);
    b.put(storage::Family::kWindowScores, validator::progress_key(w), bytes(validator::to_json(progress)));
    if (w % 2 == 1) {  // a weights post every second window, all 256 uids
      nlohmann::json post = {{"epoch", w / 2}, {"window", w}, {"status", "confirmed"}, {"tx", "0xabc"}};
      for (std::uint16_t uid = 0; uid < 256; ++uid) {
        post["uids"].push_back(uid);
        post["values"].push_back(256 - uid);
      }
      b.put(storage::Family::kWeightsLog, validator::epoch_key(w / 2), bytes(post));
    }
    if (!(*db)->commit_window(w, std::move(b)).is_ok()) return 1;
  }
  validator::ApiOptions o;
  o.port = 0;
  o.max_connections = 1024;
  auto server = validator::ApiServer::start(o, **db, validator::ScoringParams{});
  if (!server.is_ok()) return 1;
  std::cout << "port " << (*server)->port() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}
