// Store locations come from the chain: anything a peer commits must be
// refused cleanly, never thrown on.
#include "crucible/storage/peer_location.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/scripted_http.h"
#include "support/temp_dir.h"

namespace crucible::storage {
namespace {

TEST(PeerLocation, RoundTrips) {
  StorageOptions o;
  o.url = "s3://bucket/prefix?endpoint=https://s3.example.com&region=auto";
  o.read_access_key_id = "rk";
  o.read_secret_access_key = "rs";
  auto back = decode_location(encode_location(o));
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->url, o.url);
  EXPECT_EQ(back->read.access_key_id, "rk");
  EXPECT_EQ(back->read.secret_access_key.reveal(), "rs");
  EXPECT_EQ(encode_location(o), "v2 " + o.url + " rk rs");  // the compact form that goes on chain
  // The version-1 JSON form is still read.
  auto v1 = decode_location(R"({"v":1,"url":"file:///tmp/x","read_key_id":"a","read_secret":"b"})");
  ASSERT_TRUE(v1.is_ok()) << v1.status();
  EXPECT_EQ(v1->url, "file:///tmp/x");
  EXPECT_EQ(v1->read.access_key_id, "a");
}

// What fits the Commitments pallet (3 Raw fields of 128 bytes) goes on
// chain; a longer location is refused with the limit and the parts' sizes.
TEST(PeerLocation, ALocationLongerThanTheCommitmentLimitIsRefusedByName) {
  StorageOptions o;
  o.url = "s3://" + std::string(300, 'b') + "/p?endpoint=https://s3.example.com";
  o.read_access_key_id = std::string(32, 'k');
  o.read_secret_access_key = std::string(64, 's');
  auto text = encode_location_checked(o);
  ASSERT_FALSE(text.is_ok());
  EXPECT_NE(text.status().message().find("at most 384"), std::string::npos) << text.status();
  EXPECT_NE(text.status().message().find("read secret 64"), std::string::npos) << text.status();
  o.url = "s3://bucket/p?endpoint=https://" + std::string(32, 'a') + ".r2.cloudflarestorage.com&region=auto";
  text = encode_location_checked(o);
  ASSERT_TRUE(text.is_ok()) << text.status();
  EXPECT_LE(text->size(), kMaxLocationBytes);
}

TEST(PeerLocation, RefusesMalformedCommitmentsWithoutThrowing) {
  for (const char* text :
       {"", "null", "[]", "{", R"({"v":"1","url":"file:///tmp/x"})", R"({"v":[1],"url":"file:///tmp/x"})",
        R"({"v":2,"url":"file:///tmp/x"})", R"({"v":1})", R"({"v":1,"url":7})", R"({"v":1,"url":"ftp://x"})",
        R"({"v":1,"url":"file:///tmp/x","read_key_id":5})", R"({"v":1,"url":"file:///tmp/x","read_key_id":"a"})",
        R"({"v":1,"url":"file:///tmp/x","read_key_id":"a","read_secret":{}})",
        // What a v2 line cannot carry is refused in either form, so an accepted location encodes back the same.
        R"({"v":1,"url":"file:///tmp/x y"})", R"({"v":1,"url":"file:///tmp/x","read_key_id":"a b","read_secret":"c"})",
        R"({"v":1,"url":"file:///tmp/x","read_key_id":"","read_secret":"c"})", "v2", "v2 ", "v2 file:///tmp/x k",
        "v2 file:///tmp/x k s extra", "v2  file:///tmp/x", "v2 file:///tmp/\x01"}) {
    EXPECT_FALSE(decode_location(text).is_ok()) << text;
  }
  EXPECT_FALSE(decode_location(std::string(kMaxLocationBytes + 1, ' ')).is_ok());
}

}  // namespace
}  // namespace crucible::storage

namespace crucible::storage {
namespace {

TEST(PeerLocation, PrivateHostsAreRecognised) {
  for (const char* h : {"localhost", "api.localhost", "127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1",
                        "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "[::1]", "::1",
                        "fe80::1", "fd00::5", "::ffff:127.0.0.1", "LOCALHOST"}) {
    EXPECT_TRUE(is_private_host(h)) << h;
  }
  for (const char* h : {"s3.amazonaws.com", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1", "example.com"}) {
    EXPECT_FALSE(is_private_host(h)) << h;
  }
}

PeerPolicy allow(bool file, bool private_endpoints) {
  PeerPolicy p;
  p.allow_file = file;
  p.allow_private_endpoints = private_endpoints;
  return p;
}

TEST(PeerLocation, OpenRefusesWhatThePolicyDoesNotAllow) {
  crucible::testing::TempDir dir;
  PeerLocation file{"file://" + (dir.path() / "peer").string(), {}};
  EXPECT_EQ(open_peer_store(file, {}).status().code(), StatusCode::kPermissionDenied);
  // Allowed, but nothing is created where the peer says.
  EXPECT_EQ(open_peer_store(file, allow(true, false)).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "peer"));
  std::filesystem::create_directories(dir.path() / "peer");
  EXPECT_TRUE(open_peer_store(file, allow(true, false)).is_ok());
  for (const char* url : {"s3://b/p?endpoint=http://127.0.0.1:7480", "s3://b/p?endpoint=http://169.254.169.254",
                          "s3://b/p?endpoint=http://[::1]:9000", "s3://b/p?endpoint=http://localhost:9000"}) {
    PeerLocation s3{url, {}};
    EXPECT_EQ(open_peer_store(s3, {}).status().code(), StatusCode::kPermissionDenied) << url;
    EXPECT_TRUE(open_peer_store(s3, allow(false, true)).is_ok()) << url;
  }
  EXPECT_TRUE(open_peer_store({"s3://b/p?endpoint=https://s3.example.com", {}}, {}).is_ok());
}

}  // namespace
}  // namespace crucible::storage

namespace crucible::storage {
namespace {

// Names the literal check cannot see through: "127.1" and 2130706433 are
// 127.0.0.1 to the resolver, and localhost.localdomain is one in /etc/hosts
// on most machines. A server listens there; the peer's store must be refused
// at connect time and the server never reached.
TEST(PeerLocation, NamesThatResolveToPrivateAddressesAreRefusedAtConnect) {
  crucible::testing::ScriptedHttpServer server({{200, "x"}, {200, "x"}, {200, "x"}, {200, "x"}});
  const std::string port = server.url().substr(server.url().rfind(':') + 1);
  PeerPolicy policy;
  policy.retry.deadline = std::chrono::seconds(5);
  for (const std::string host : {"127.1", "2130706433", "0x7f000001"}) {
    ASSERT_FALSE(is_private_host(host)) << host << " is caught earlier; the test needs a name it cannot see through";
    PeerLocation s3{"s3://b/p?endpoint=http://" + host + ":" + port, {}};
    auto store = open_peer_store(s3, policy);
    ASSERT_TRUE(store.is_ok()) << host << ": " << store.status();
    auto got = (*store)->get("k", 1 << 20);
    EXPECT_EQ(got.status().code(), StatusCode::kPermissionDenied) << host << ": " << got.status();
  }
  EXPECT_EQ(server.requests(), 0);
  // Allowed by the policy, the same store is reached.
  policy.allow_private_endpoints = true;
  auto store = open_peer_store({"s3://b/p?endpoint=http://127.1:" + port, {}}, policy);
  ASSERT_TRUE(store.is_ok());
  (void)(*store)->get("k", 1 << 20);
  EXPECT_GE(server.requests(), 1);
}

TEST(PeerLocation, EndpointHostIsTheHostPart) {
  EXPECT_EQ(endpoint_host("http://user@[::1]:9000/x"), "[::1]");
  EXPECT_EQ(endpoint_host("https://s3.example.com"), "s3.example.com");
  EXPECT_EQ(endpoint_host("http://10.0.0.1:80"), "10.0.0.1");
  EXPECT_EQ(endpoint_host(""), "");
}

}  // namespace
}  // namespace crucible::storage
