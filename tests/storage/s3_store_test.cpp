// S3Store against a real S3 server that verifies SigV4 (Ceph radosgw,
// started by the ctest fixture "s3" from scripts/s3/start_s3.sh). The
// conformance suite runs here too.
#include "crucible/storage/s3_store.h"
#include "crucible/storage/store_url.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gmock/gmock.h>

#include "storage/store_conformance.h"

namespace crucible::storage {
namespace {

using ::testing::HasSubstr;
using testing::StoreConformance;

std::string endpoint() {
  const char* e = std::getenv("CRUCIBLE_TEST_S3_ENDPOINT");
  return e == nullptr ? "" : e;
}

S3Credentials tester() { return {"TESTKEY", Secret("TESTSECRET"), ""}; }

S3Options options_for(const std::string& prefix) {
  S3Options o;
  o.bucket = "crucible-test";
  o.prefix = prefix;
  o.endpoint = endpoint();
  o.read = tester();
  o.write = tester();
  o.multipart_threshold = 6ull << 20;
  o.part_size = 5ull << 20;
  return o;
}

RetryPolicy quick() {
  RetryPolicy p;
  p.backoff_initial = std::chrono::milliseconds(20);
  p.deadline = std::chrono::milliseconds(10'000);
  return p;
}

std::string unique_prefix() {
  static std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("t{:016x}", rng());
}

std::shared_ptr<ObjectStore> make_s3() {
  if (endpoint().empty()) {
    ADD_FAILURE()
        << "CRUCIBLE_TEST_S3_ENDPOINT is not set: run through ctest (fixture s3) or start scripts/s3/start_s3.sh";
    return nullptr;
  }
  auto store = S3Store::open(options_for(unique_prefix()), quick());
  if (!store.is_ok()) {
    ADD_FAILURE() << store.status();
    return nullptr;
  }
  Status created = (*store)->create_bucket();
  if (!created.is_ok()) ADD_FAILURE() << created;
  return std::shared_ptr<ObjectStore>(std::move(*store));
}

INSTANTIATE_TEST_SUITE_P(S3, StoreConformance, ::testing::Values(testing::StoreFactory{"s3", make_s3}),
                         [](const auto& info) { return info.param.name; });

struct S3Test : ::testing::Test {
  void SetUp() override {
    ASSERT_FALSE(endpoint().empty()) << "CRUCIBLE_TEST_S3_ENDPOINT is not set";
    auto s = S3Store::open(options_for(unique_prefix()), quick());
    ASSERT_TRUE(s.is_ok()) << s.status();
    store = std::move(*s);
    ASSERT_TRUE(store->create_bucket().is_ok());
  }
  std::unique_ptr<S3Store> store;
};

Bytes pattern(std::size_t n) {
  Bytes b(n);
  std::mt19937_64 rng(99);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

// The local addresses of this process's open TCP sockets to `port` of
// 127.0.0.1 (its socket inodes, from /proc/self/fd, looked up in
// /proc/net/tcp): other processes talking to the same server (tests run in
// parallel) do not count.
std::set<std::string> own_sockets_to(std::uint16_t port) {
  std::set<std::string> inodes;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::set<std::string> out;
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  const std::string remote = fmt::format("0100007F:{:04X}", port);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, rem, state, queues, timer, retransmits, uid, timeout, inode;
    f >> slot >> local >> rem >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (rem == remote && state == "01" && inodes.count(inode)) out.insert(local);  // 01: established
  }
  return out;
}

// A store polled again and again (the observer reads every peer's
// commitment each second) keeps its connection: one connection, open
// between requests, serves them all, rather than one opened (and closed)
// per request.
TEST_F(S3Test, RequestsReuseTheStoresConnections) {
  const auto port_at = endpoint().rfind(':');
  ASSERT_NE(port_at, std::string::npos);
  const auto port = static_cast<std::uint16_t>(std::stoi(endpoint().substr(port_at + 1)));
  ASSERT_TRUE(store->put("polled", as_bytes(std::string("x"))).is_ok());
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(store->head("polled").is_ok());
    ASSERT_TRUE(store->get("polled", 16).is_ok());
    const auto open = own_sockets_to(port);
    EXPECT_EQ(open.size(), 1u) << "after request pair " << i << ": no connection kept open";
    seen.insert(open.begin(), open.end());
  }
  EXPECT_EQ(seen.size(), 1u) << "40 sequential requests went over " << seen.size() << " connections";
}

TEST_F(S3Test, LargeObjectsGoThroughMultipartAndParallelRanges) {
  Bytes data = pattern(13u << 20);  // 3 parts of 5 MiB, the last short
  ASSERT_TRUE(store->put("big/model.safetensors", data).is_ok());
  auto info = store->head("big/model.safetensors");
  ASSERT_TRUE(info.is_ok()) << info.status();
  EXPECT_EQ(info->size, data.size());
  EXPECT_THAT(info->etag, HasSubstr("-3"));  // a multipart ETag: the upload really was in 3 parts
  ASSERT_TRUE(info->sha256.has_value());
  EXPECT_EQ(*info->sha256, sha256_of(data));
  auto got = store->get("big/model.safetensors", 64u << 20);
  ASSERT_TRUE(got.is_ok()) << got.status();
  EXPECT_TRUE(got->data == data);
  auto range = store->get_range("big/model.safetensors", (5u << 20) - 10, 20);
  ASSERT_TRUE(range.is_ok()) << range.status();
  EXPECT_EQ(*range, Bytes(data.begin() + (5 << 20) - 10, data.begin() + (5 << 20) + 10));
  EXPECT_EQ(store->get("big/model.safetensors", 1u << 20).status().code(), StatusCode::kResourceExhausted);
}

TEST(S3Auth, WrongSecretIsAnAuthErrorNotARetryLoop) {
  auto o = options_for(unique_prefix());
  o.read = o.write = {"TESTKEY", Secret("not-the-secret"), ""};
  RetryPolicy p;  // the defaults: 5 attempts, 100 ms backoff
  auto store = S3Store::open(o, p).value();
  auto start = std::chrono::steady_clock::now();
  Status put = store->put("x", Bytes{1});
  EXPECT_EQ(put.code(), StatusCode::kUnauthenticated) << put;
  EXPECT_THAT(put.message(), HasSubstr("SignatureDoesNotMatch"));
  EXPECT_EQ(store->get("x", 10).status().code(), StatusCode::kUnauthenticated);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));  // no backoff rounds
  o.read = o.write = {"NOSUCHKEY", Secret("x"), ""};
  // (A HEAD reply has no body to name the reason, so get() is the call that can tell.)
  EXPECT_EQ(S3Store::open(o, p).value()->get("x", 10).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(S3Test, ReadAndWriteCredentialsAreSeparate) {
  auto o = options_for(unique_prefix());
  o.read = {"OTHERKEY", Secret("OTHERSECRET"), ""};  // a valid user without access to the bucket
  auto split = S3Store::open(o, quick()).value();
  ASSERT_TRUE(split->put("obj", Bytes{1, 2}).is_ok());  // written with the owner's key
  auto r = split->get("obj", 10);                       // read with the other user's
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status();
}

TEST(S3Down, ServerDownIsAnErrorWithinTheDeadline) {
  auto o = options_for("x");
  o.endpoint = "http://127.0.0.1:1";  // nothing listens there
  o.connect_timeout = std::chrono::milliseconds(500);
  RetryPolicy p;
  p.deadline = std::chrono::milliseconds(1500);
  p.backoff_initial = std::chrono::milliseconds(50);
  auto store = S3Store::open(o, p).value();
  auto start = std::chrono::steady_clock::now();
  Status st = store->put("k", Bytes{1});
  EXPECT_TRUE(st.is_transient()) << st;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(4000));
}

TEST(S3Options, BadOptionsAreRefused) {
  S3Options o;
  EXPECT_EQ(S3Store::open(o).status().code(), StatusCode::kInvalidArgument);  // no bucket
  o.bucket = "b";
  o.endpoint = "127.0.0.1:7480";
  EXPECT_EQ(S3Store::open(o).status().code(), StatusCode::kInvalidArgument);  // no scheme
  o.endpoint = "http://h";
  o.part_size = 1 << 20;
  EXPECT_EQ(S3Store::open(o).status().code(), StatusCode::kInvalidArgument);  // part below 5 MiB
}

TEST(S3Url, OpenStoreFromAUrlReachesTheServer) {
  auto store = open_store("s3://crucible-test/" + unique_prefix() + "?endpoint=" + endpoint() + "&region=us-east-1",
                          tester(), tester(), quick());
  ASSERT_TRUE(store.is_ok()) << store.status();
  ASSERT_TRUE((*store)->put("via/url", Bytes{9}).is_ok());
  EXPECT_EQ((*store)->get("via/url", 10).value().data, Bytes{9});
}

TEST(HttpDates, Parse) {
  EXPECT_EQ(parse_http_date("Thu, 01 Jan 1970 00:00:01 GMT").value(), 1000);
  EXPECT_EQ(parse_http_date("2026-12-02T13:05:11.123Z").value(), 1'796'216'711'123);
  EXPECT_EQ(parse_http_date("2026-12-02T13:05:11Z").value(), 1'796'216'711'000);
  EXPECT_FALSE(parse_http_date("yesterday").is_ok());
}

}  // namespace
}  // namespace crucible::storage
