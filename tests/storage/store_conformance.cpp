#include "storage/store_conformance.h"

#include <gmock/gmock.h>

#include <chrono>
#include <random>
#include <thread>

#include <fmt/format.h>

namespace crucible::storage::testing {
namespace {

using ::testing::HasSubstr;

Bytes pattern(std::size_t n, std::uint64_t seed) {
  Bytes b(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t v = rng();
    for (std::size_t j = 0; j < 8 && i + j < n; ++j) b[i + j] = static_cast<std::uint8_t>(v >> (8 * j));
  }
  return b;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_P(StoreConformance, PutGetHeadRemove) {
  Bytes data = pattern(1000, 1);
  ASSERT_TRUE(store->put("v1/gradient/12.crg", data).is_ok());
  auto got = store->get("v1/gradient/12.crg", 1 << 20);
  ASSERT_TRUE(got.is_ok()) << got.status();
  EXPECT_EQ(got->data, data);
  auto info = store->head("v1/gradient/12.crg");
  ASSERT_TRUE(info.is_ok()) << info.status();
  EXPECT_EQ(info->size, 1000u);
  EXPECT_EQ(info->key, "v1/gradient/12.crg");
  EXPECT_NEAR(static_cast<double>(info->last_modified_ms), static_cast<double>(now_ms()), 120'000);
  ASSERT_TRUE(store->remove("v1/gradient/12.crg").is_ok());
  EXPECT_EQ(store->get("v1/gradient/12.crg", 1 << 20).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->head("v1/gradient/12.crg").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store->remove("v1/gradient/12.crg").is_ok());  // absent already: fine
}

TEST_P(StoreConformance, EmptyObjectsAndOverwrite) {
  ASSERT_TRUE(store->put("a/empty", {}).is_ok());
  EXPECT_TRUE(store->get("a/empty", 10).value().data.empty());
  ASSERT_TRUE(store->put("a/x", pattern(10, 1)).is_ok());
  ASSERT_TRUE(store->put("a/x", pattern(20, 2)).is_ok());
  EXPECT_EQ(store->get("a/x", 100).value().data, pattern(20, 2));
}

TEST_P(StoreConformance, SizeCapIsEnforcedBeforeReading) {
  ASSERT_TRUE(store->put("big/obj", pattern(5000, 3)).is_ok());
  auto r = store->get("big/obj", 4999);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  EXPECT_TRUE(store->get("big/obj", 5000).is_ok());
}

TEST_P(StoreConformance, RangedReads) {
  Bytes data = pattern(10'000, 4);
  ASSERT_TRUE(store->put("r/obj", data).is_ok());
  auto mid = store->get_range("r/obj", 1234, 100);
  ASSERT_TRUE(mid.is_ok()) << mid.status();
  EXPECT_EQ(*mid, Bytes(data.begin() + 1234, data.begin() + 1334));
  auto tail = store->get_range("r/obj", 9990, 100);
  ASSERT_TRUE(tail.is_ok()) << tail.status();
  EXPECT_EQ(*tail, Bytes(data.end() - 10, data.end()));
}

TEST_P(StoreConformance, ListsWithPrefixAndPages) {
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(store->put(fmt::format("l/a/{:03}", i), pattern(10, i)).is_ok());
  ASSERT_TRUE(store->put("l/b/other", pattern(5, 9)).is_ok());
  auto page = store->list("l/a/", std::nullopt, 10);
  ASSERT_TRUE(page.is_ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 10u);
  EXPECT_EQ(page->objects[0].key, "l/a/000");
  EXPECT_EQ(page->objects[0].size, 10u);
  ASSERT_TRUE(page->next.has_value());
  auto all = store->list_all("l/a/");
  ASSERT_TRUE(all.is_ok()) << all.status();
  ASSERT_EQ(all->size(), 25u);
  for (int i = 0; i < 25; ++i) EXPECT_EQ((*all)[static_cast<std::size_t>(i)].key, fmt::format("l/a/{:03}", i));
  EXPECT_EQ(store->list_all("l/").value().size(), 26u);
  EXPECT_TRUE(store->list_all("nothing/").value().empty());
}

TEST_P(StoreConformance, PaginatesOverMoreThanAThousandKeys) {
  const int n = 1100;
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = t; i < n; i += 4) ASSERT_TRUE(store->put(fmt::format("p/{:05}", i), Bytes{1}).is_ok());
    });
  }
  for (auto& w : writers) w.join();
  auto first = store->list("p/");
  ASSERT_TRUE(first.is_ok()) << first.status();
  EXPECT_EQ(first->objects.size(), 1000u);
  EXPECT_TRUE(first->next.has_value());
  auto all = store->list_all("p/");
  ASSERT_TRUE(all.is_ok()) << all.status();
  ASSERT_EQ(all->size(), static_cast<std::size_t>(n));
  EXPECT_EQ(all->back().key, fmt::format("p/{:05}", n - 1));
  EXPECT_EQ(store->list_all("p/", 500).status().code(), StatusCode::kResourceExhausted);
}

TEST_P(StoreConformance, BadKeysAreRefused) {
  for (const char* key : {"", "/abs", "a/../b", "a//b", "a/./b", "trailing/", "sp ace", "q?x", "..", "a\\b"}) {
    EXPECT_EQ(store->put(key, Bytes{1}).code(), StatusCode::kInvalidArgument) << key;
    EXPECT_EQ(store->get(key, 10).status().code(), StatusCode::kInvalidArgument) << key;
  }
  EXPECT_EQ(store->list("x", std::nullopt, 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crucible::storage::testing
