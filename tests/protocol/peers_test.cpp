// Peer lookup, joining and fetch_and_merge, in process: a FakeChain and
// LocalStores on disk.
#include "crucible/protocol/peers.h"

#include <gtest/gtest.h>

#include "crucible/chain/packet_signing.h"
#include "crucible/protocol/node_io.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/storage/local_store.h"
#include "support/fake_chain.h"
#include "support/in_process.h"
#include "support/temp_dir.h"
#include "test_util.h"

namespace crucible::protocol {
namespace {

chain::PrivateKey key_of(std::uint8_t n) {
  std::array<std::uint8_t, 32> b{};
  b[31] = n;
  return *chain::PrivateKey::from_bytes(b);
}

storage::StorageOptions store_options(const std::filesystem::path& dir) {
  storage::StorageOptions o;
  o.url = "file://" + dir.string();
  return o;
}

class PeersTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  testing::FakeChain fake_;
};

TEST_F(PeersTest, JoinFindsTheUidAndPublishesTheLocationOnce) {
  const auto key = key_of(1);
  auto chain = fake_.as(key);
  EXPECT_EQ(join_subnet(*chain, fake_.netuid(), key, store_options(dir_.path() / "a")).status().code(),
            StatusCode::kFailedPrecondition);  // not registered
  const std::uint16_t uid = fake_.add_neuron(key_of(9));
  EXPECT_EQ(uid, 0);
  EXPECT_EQ(fake_.add_neuron(key), 1);
  auto joined = join_subnet(*chain, fake_.netuid(), key, store_options(dir_.path() / "a"));
  ASSERT_TRUE(joined.is_ok()) << joined.status();
  EXPECT_EQ(*joined, 1);
  auto committed = chain->commitment(fake_.netuid(), 1);
  ASSERT_TRUE(committed.is_ok() && committed->has_value());
  EXPECT_EQ(**committed, storage::encode_location(store_options(dir_.path() / "a")));
}

TEST_F(PeersTest, DirectoryOpensCommittedStoresAndRefusesBadLocations) {
  const auto key = key_of(2);
  const std::uint16_t uid = fake_.add_neuron(key);
  auto chain = fake_.as(key);  // PeerDirectory keeps a reference
  PeerDirectory peers(*chain, fake_.netuid(), default_store_opener(testing::local_peers()));
  EXPECT_EQ(peers.store_of(uid).status().code(), StatusCode::kNotFound);  // nothing committed
  fake_.set_commitment_of(uid, "{\"v\":1,\"url\":5}");
  EXPECT_FALSE(peers.store_of(uid).is_ok());
  fake_.set_commitment_of(uid, "not json at all");
  EXPECT_FALSE(peers.store_of(uid).is_ok());
  int opened = 0;
  PeerDirectory counting(*chain, fake_.netuid(), [&](const storage::PeerLocation& l) {
    ++opened;
    return default_store_opener(testing::local_peers())(l);
  });
  fake_.set_commitment_of(uid, storage::encode_location(store_options(dir_.path() / "s")));
  EXPECT_EQ(counting.store_of(uid).status().code(), StatusCode::kNotFound);  // no such folder: none is made
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "s"));
  std::filesystem::create_directories(dir_.path() / "s");
  ASSERT_TRUE(counting.store_of(uid).is_ok());
  ASSERT_TRUE(counting.store_of(uid).is_ok());
  EXPECT_EQ(opened, 2);  // the failed open, then one open cached by location
}

TEST_F(PeersTest, ASetIsAppliedFromTheLeadsCopiesWhateverMembersDo) {
  std::vector<TensorSpec> specs{{"a", {64, 64}}, {"b", {32}}};
  const auto k1 = key_of(3), k2 = key_of(4);
  const std::uint16_t u1 = fake_.add_neuron(k1), u2 = fake_.add_neuron(k2);
  AggregationSet set{5, std::nullopt, {}, {}};
  std::vector<PeerTensors> expected;
  std::vector<Bytes> sealed_packets;
  for (auto [uid, key, scale] : {std::tuple{u1, k1, 1.0f}, std::tuple{u2, k2, 2.0f}}) {
    packet::Packet p = test::packet_for(specs, scale);
    p.window = 5;
    p.uid = uid;
    expected.push_back({uid, *decode_update(p, specs)});
    auto sealed = chain::seal_packet(p, key);
    ASSERT_TRUE(sealed.is_ok());
    set.uids.push_back(uid);
    set.digests.push_back(chain::open_packet(*sealed)->digest);
    sealed_packets.push_back(*sealed);
  }
  auto lead = storage::LocalStore::open(dir_.path() / "lead");
  ASSERT_TRUE(lead.is_ok());
  auto host = kernels::cpu_backend(1);
  EXPECT_FALSE(store_set_packets(set, {sealed_packets[0]}, **lead).is_ok());  // one packet per member
  ASSERT_TRUE(store_set_packets(set, {sealed_packets[0], sealed_packets[1]}, **lead).is_ok());
  // The members' own buckets play no part: they may withdraw their packets.
  auto merged = fetch_and_merge(set, **lead, specs, 1 << 20, *host);
  ASSERT_TRUE(merged.is_ok()) << merged.status();
  EXPECT_EQ(*merged, *merge_updates(expected, specs, *host));
  auto wrong = set;
  wrong.digests[1] = test::h(7);  // another packet than the set names
  auto refused = fetch_and_merge(wrong, **lead, specs, 1 << 20, *host);
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("uid " + std::to_string(u2)), std::string::npos);
  EXPECT_FALSE(fetch_and_merge(set, **lead, specs, 100, *host).is_ok());  // over the size cap
  ASSERT_TRUE((*lead)->remove(keys::set_packet(5, u1)).is_ok());
  auto missing = fetch_and_merge(set, **lead, specs, 1 << 20, *host);
  EXPECT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("uid " + std::to_string(u1)), std::string::npos);
}

TEST(NodeIo, CheckNamesWhatIsMissing) {
  NodeIo io;
  EXPECT_EQ(check(io).code(), StatusCode::kInvalidArgument);
  testing::FakeChain fake;
  io.chain = fake.as(key_of(5));
  EXPECT_NE(check(io).message().find("store"), std::string::npos);
}

}  // namespace
}  // namespace crucible::protocol
