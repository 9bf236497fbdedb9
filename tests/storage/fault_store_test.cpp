// Reliability through FaultInjectingStore: retries recover from transient
// errors; truncated or corrupted bodies are detected, never returned as data.
#include "crucible/storage/fault_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "crucible/storage/local_store.h"
#include "support/temp_dir.h"

namespace crucible::storage {
namespace {

RetryPolicy quick(int attempts) {
  RetryPolicy p;
  p.max_attempts = attempts;
  p.backoff_initial = std::chrono::milliseconds(1);
  p.backoff_max = std::chrono::milliseconds(2);
  p.deadline = std::chrono::milliseconds(20'000);
  return p;
}

struct FaultTest : ::testing::Test {
  void SetUp() override { inner = LocalStore::open(dir.path()).value(); }
  crucible::testing::TempDir dir;
  std::shared_ptr<ObjectStore> inner;
};

TEST_F(FaultTest, RetriesRecoverFromTransientErrors) {
  FaultOptions f;
  f.error_rate = 0.5;
  FaultInjectingStore store(inner, f, quick(30));
  for (int i = 0; i < 50; ++i) {
    std::string key = "k/" + std::to_string(i);
    ASSERT_TRUE(store.put(key, Bytes(100, static_cast<std::uint8_t>(i))).is_ok());
    auto got = store.get(key, 1000);
    ASSERT_TRUE(got.is_ok()) << got.status();
    EXPECT_EQ(got->data, Bytes(100, static_cast<std::uint8_t>(i)));
    ASSERT_TRUE(store.head(key).is_ok());
  }
  EXPECT_EQ(store.list_all("k/").value().size(), 50u);
  EXPECT_GT(store.counts().errors, 50);  // faults really happened
}

TEST_F(FaultTest, WithoutRetriesTransientErrorsSurface) {
  FaultOptions f;
  f.error_rate = 1.0;
  FaultInjectingStore store(inner, f, quick(3));
  Status s = store.put("x", Bytes{1});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(store.counts().errors, 3);
}

TEST_F(FaultTest, PermanentErrorsAreNotRetried) {
  FaultInjectingStore store(inner, {}, quick(10));
  auto r = store.get("missing", 10);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST_F(FaultTest, TruncatedAndFlippedBodiesAreNeverReturnedAsData) {
  Bytes data(4096);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 31);
  ASSERT_TRUE(inner->put("obj", data).is_ok());
  // Every body damaged: every get fails with data_loss.
  FaultOptions always;
  always.truncate_rate = 0.5;
  always.bitflip_rate = 1.0;
  FaultInjectingStore broken(inner, always, quick(3));
  for (int i = 0; i < 20; ++i) {
    auto r = broken.get("obj", 1 << 20);
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
  }
  EXPECT_GT(broken.counts().truncations, 0);
  EXPECT_GT(broken.counts().bitflips, 0);
  // Some bodies damaged: retries get a whole one, and what is returned is always right.
  FaultOptions sometimes;
  sometimes.truncate_rate = 0.2;
  sometimes.bitflip_rate = 0.2;
  sometimes.seed = 7;
  FaultInjectingStore flaky(inner, sometimes, quick(20));
  for (int i = 0; i < 100; ++i) {
    auto r = flaky.get("obj", 1 << 20);
    ASSERT_TRUE(r.is_ok()) << r.status();
    ASSERT_EQ(r->data, data);
  }
  EXPECT_GT(flaky.counts().truncations + flaky.counts().bitflips, 10);
}

TEST_F(FaultTest, StaleLastModifiedAndLatencyAreInjected) {
  ASSERT_TRUE(inner->put("obj", Bytes{1, 2, 3}).is_ok());
  std::int64_t real = inner->head("obj").value().last_modified_ms;
  FaultOptions f;
  f.stale_last_modified_ms = 3'600'000;
  f.latency = std::chrono::milliseconds(30);
  FaultInjectingStore store(inner, f, quick(1));
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(store.head("obj").value().last_modified_ms, real - 3'600'000);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
  EXPECT_EQ(store.get("obj", 10).value().info.last_modified_ms, real - 3'600'000);
}

TEST_F(FaultTest, DeadlineBoundsRetrying) {
  FaultOptions f;
  f.error_rate = 1.0;
  f.latency = std::chrono::milliseconds(50);
  RetryPolicy p = quick(1000);
  p.deadline = std::chrono::milliseconds(300);
  p.backoff_initial = std::chrono::milliseconds(20);
  FaultInjectingStore store(inner, f, p);
  auto start = std::chrono::steady_clock::now();
  Status s = store.put("x", Bytes{1});
  EXPECT_FALSE(s.is_ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
}

}  // namespace
}  // namespace crucible::storage
