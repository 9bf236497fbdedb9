#include "crucible/storage/state_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible::storage {
namespace {

using ::testing::HasSubstr;

Bytes text(std::string_view s) { return Bytes(s.begin(), s.end()); }

TEST(StateStore, PutGetScanAcrossFamiliesAndReopen) {
  crucible::testing::TempDir dir;
  std::string path = (dir.path() / "db").string();
  {
    auto db = StateStore::open(path).value();
    StateStore::Batch b;
    b.put(Family::kRatings, "uid/7", text("mu=25"));
    b.put(Family::kWindowScores, "w/3/7", text("0.5"));
    b.put(Family::kWindowScores, "w/3/8", text("0.25"));
    b.put(Family::kWindowScores, "w/4/7", text("0.75"));
    ASSERT_TRUE(db->commit(std::move(b)).is_ok());
    EXPECT_EQ(db->get(Family::kRatings, "uid/7").value(), std::optional<Bytes>(text("mu=25")));
    EXPECT_FALSE(db->get(Family::kWindowScores, "uid/7").value().has_value());  // families are separate
    auto w3 = db->scan(Family::kWindowScores, "w/3/").value();
    ASSERT_EQ(w3.size(), 2u);
    EXPECT_EQ(w3[1].first, "w/3/8");
    EXPECT_EQ(db->scan(Family::kWindowScores, "w/", 2).status().code(), StatusCode::kResourceExhausted);
  }
  auto db = StateStore::open(path).value();
  EXPECT_EQ(db->get(Family::kWindowScores, "w/4/7").value(), std::optional<Bytes>(text("0.75")));
  StateStore::Batch del;
  del.remove(Family::kRatings, "uid/7");
  ASSERT_TRUE(db->commit(std::move(del)).is_ok());
  EXPECT_FALSE(db->get(Family::kRatings, "uid/7").value().has_value());
}

TEST(StateStore, WindowCommitsRecordProgress) {
  crucible::testing::TempDir dir;
  auto db = StateStore::open((dir.path() / "db").string()).value();
  EXPECT_FALSE(db->last_committed_window().value().has_value());
  StateStore::Batch b;
  b.put(Family::kWindowScores, "w/12/0", text("x"));
  ASSERT_TRUE(db->commit_window(12, std::move(b)).is_ok());
  EXPECT_EQ(db->last_committed_window().value(), std::optional<std::uint64_t>(12));
  EXPECT_EQ(db->scan(Family::kWindowProgress, "window/").value().size(), 1u);
}

TEST(StateStore, UnknownSchemaVersionIsRefused) {
  crucible::testing::TempDir dir;
  std::string path = (dir.path() / "db").string();
  {
    auto db = StateStore::open(path).value();
    StateStore::Batch b;
    b.put(Family::kMeta, "schema_version", text("99"));
    ASSERT_TRUE(db->commit(std::move(b)).is_ok());
  }
  auto db = StateStore::open(path);
  EXPECT_EQ(db.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(db.status().message(), HasSubstr("schema version 99"));
}

TEST(StateStore, SecondOpenOfTheSameDirectoryIsRefused) {
  crucible::testing::TempDir dir;
  std::string path = (dir.path() / "db").string();
  auto first = StateStore::open(path).value();
  auto second = StateStore::open(path);
  EXPECT_FALSE(second.is_ok());
  EXPECT_THAT(second.status().message(), HasSubstr("lock"));
}

TEST(StateStore, MissingDatabaseWithoutCreateIsAnError) {
  crucible::testing::TempDir dir;
  StateStoreOptions o;
  o.create_if_missing = false;
  EXPECT_FALSE(StateStore::open((dir.path() / "absent").string(), o).is_ok());
}

// A child process commits windows of kKeysPerWindow keys as fast as it can;
// it is SIGKILLed at random moments. After each kill every window must be
// whole or absent, and the progress marker must agree with the data.
TEST(StateStoreCrash, EveryWindowIsWholeOrAbsentAfterSigkill) {
  constexpr int kKeysPerWindow = 40;
  crucible::testing::TempDir dir;
  std::string path = (dir.path() / "db").string();
  std::mt19937 rng(12345);
  std::uint64_t last_seen = 0;
  for (int round = 0; round < 6; ++round) {
    crucible::testing::Child writer(
        {crucible::testing::bin("state_store_crash_writer"), path, std::to_string(kKeysPerWindow)});
    // Let it get going, then kill it mid-flight.
    writer.read_until("started", 10'000);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 250)(rng)));
    writer.signal(SIGKILL);
    writer.wait(5'000);

    auto db = StateStore::open(path);
    ASSERT_TRUE(db.is_ok()) << db.status();
    // A fast disk commits thousands of windows before the kill: no cap that small.
    auto rows = (*db)->scan(Family::kWindowScores, "w/", 50'000'000).value();
    std::map<std::uint64_t, int> per_window;
    for (const auto& [key, value] : rows) {
      std::uint64_t w = std::stoull(key.substr(2, key.find('/', 2) - 2));
      ++per_window[w];
      ASSERT_EQ(value, Bytes(64, static_cast<std::uint8_t>(w)));
    }
    auto last = (*db)->last_committed_window().value();
    ASSERT_TRUE(last.has_value()) << "round " << round;
    for (const auto& [w, n] : per_window) {
      EXPECT_EQ(n, kKeysPerWindow) << "window " << w << " is partial after a kill (round " << round << ")";
      EXPECT_LE(w, *last);
    }
    EXPECT_EQ(per_window.size(), *last + 1);  // windows 0..last, none missing
    EXPECT_GE(*last, last_seen);
    last_seen = *last;
  }
  EXPECT_GT(last_seen, 0u);
}

}  // namespace
}  // namespace crucible::storage
