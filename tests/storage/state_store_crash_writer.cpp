// Helper for StateStoreCrash: commits window after window (continuing after
// the last committed one) until it is killed.
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "crucible/storage/state_store.h"

int main(int argc, char** argv) {
  using namespace crucible::storage;
  if (argc != 3) return 2;
  int keys = std::stoi(argv[2]);
  auto db = StateStore::open(argv[1]);
  if (!db.is_ok()) {
    std::fprintf(stderr, "%s\n", db.status().to_string().c_str());
    return 1;
  }
  auto last = (*db)->last_committed_window();
  std::uint64_t w = last.is_ok() && last->has_value() ? **last + 1 : 0;
  std::printf("started\n");
  std::fflush(stdout);
  for (;; ++w) {
    StateStore::Batch b;
    crucible::Bytes value(64, static_cast<std::uint8_t>(w));
    for (int i = 0; i < keys; ++i) b.put(Family::kWindowScores, fmt::format("w/{}/{:04}", w, i), value);
    if (!(*db)->commit_window(w, std::move(b)).is_ok()) return 1;
  }
}
