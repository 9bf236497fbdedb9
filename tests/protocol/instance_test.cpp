// One running instance per key (protocol/instance.h), in process: LocalStores
// on disk, two state folders playing two copies of one node.
#include "crucible/protocol/instance.h"

#include <gtest/gtest.h>

#include "crucible/common/file_io.h"
#include "crucible/protocol/node_io.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/peers.h"
#include "crucible/storage/local_store.h"
#include "crucible/storage/peer_location.h"
#include "support/fake_chain.h"
#include "support/in_process.h"
#include "support/temp_dir.h"

namespace crucible::protocol {
namespace {

namespace fs = std::filesystem;

chain::PrivateKey key_of(std::uint8_t n) {
  std::array<std::uint8_t, 32> b{};
  b[31] = n;
  return *chain::PrivateKey::from_bytes(b);
}

InstanceRecord record_of(std::string hotkey, std::string model = "tiny") {
  return InstanceRecord{std::move(hotkey), "", 0, 0, std::move(model), "test"};
}

class InstanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = storage::LocalStore::open(dir_.path() / "store");
    ASSERT_TRUE(s.is_ok()) << s.status();
    store_ = std::move(*s);
  }
  testing::TempDir dir_;
  std::shared_ptr<storage::ObjectStore> store_;
};

TEST_F(InstanceTest, RecordsRoundTripAndMalformedOnesAreRefused) {
  InstanceRecord r{"0xab", std::string(32, 'c'), 7, 5, "m", "v"};
  auto back = decode_instance(as_bytes(encode_instance(r)));
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->instance, r.instance);
  EXPECT_EQ(back->window, 7u);
  EXPECT_EQ(back->started_window, 5u);
  EXPECT_EQ(back->model, "m");
  for (std::string bad :
       {R"({"v":2})", "[]", "not json",
        R"({"v":1,"hotkey":"0x","instance":"zz","window":1,"started_window":1,"model":"","version":""})",
        R"({"v":1,"hotkey":"0x","instance":"cccccccccccccccccccccccccccccccc","window":-1,)"
        R"("started_window":1,"model":"","version":""})"}) {
    EXPECT_EQ(decode_instance(as_bytes(bad)).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(decode_instance(as_bytes(std::string(kMaxInstanceBytes + 1, ' '))).is_ok());
}

TEST_F(InstanceTest, ARestartWithTheSameStateFolderIsTheSameInstance) {
  auto first = InstanceClaim::acquire(store_, dir_.path() / "state", record_of("0x01"), 10);
  ASSERT_TRUE(first.is_ok()) << first.status();
  auto again = InstanceClaim::acquire(store_, dir_.path() / "state", record_of("0x01"), 11);
  ASSERT_TRUE(again.is_ok()) << again.status();
  EXPECT_EQ(first->id(), again->id());
  auto stored = read_instance(*store_);
  ASSERT_TRUE(stored.is_ok() && *stored);
  EXPECT_EQ((*stored)->window, 11u);
  EXPECT_EQ((*stored)->hotkey, "0x01");
}

TEST_F(InstanceTest, ASecondCopyWithAnotherStateFolderIsRefusedWhileTheFirstIsLive) {
  auto a = InstanceClaim::acquire(store_, dir_.path() / "a", record_of("0x01"), 10);
  ASSERT_TRUE(a.is_ok()) << a.status();
  for (std::uint64_t now : {10u, 11u, 12u}) {
    auto b = InstanceClaim::acquire(store_, dir_.path() / "b", record_of("0x01"), now);
    ASSERT_EQ(b.status().code(), StatusCode::kAlreadyExists) << now;
    EXPECT_NE(b.status().message().find("another instance of this node"), std::string::npos) << b.status();
    EXPECT_NE(b.status().message().find("after window 12"), std::string::npos) << b.status();
  }
  // The refused copy wrote nothing: the first keeps its claim.
  EXPECT_TRUE(a->renew(12).is_ok());
  // A claim not renewed for more than kInstanceLiveWindows windows is a
  // stopped node's: a new copy takes the store over, and the old one, should
  // it come back, stops at its next renewal instead of posting.
  auto b = InstanceClaim::acquire(store_, dir_.path() / "b", record_of("0x01"), 15);
  ASSERT_TRUE(b.is_ok()) << b.status();
  Status old = a->renew(16);
  EXPECT_EQ(old.code(), StatusCode::kAlreadyExists) << old;
  EXPECT_NE(old.message().find(b->id()), std::string::npos) << old;
  EXPECT_TRUE(b->renew(16).is_ok());
}

TEST_F(InstanceTest, AnotherNodesLiveClaimOnTheStoreIsRefused) {
  ASSERT_TRUE(InstanceClaim::acquire(store_, dir_.path() / "a", record_of("0x01"), 10).is_ok());
  auto other = InstanceClaim::acquire(store_, dir_.path() / "b", record_of("0x02"), 11);
  ASSERT_EQ(other.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(other.status().message().find("in use by another node (hotkey 0x01"), std::string::npos) << other.status();
}

TEST_F(InstanceTest, AnUnreadableRecordIsReplacedAndABadIdFileIsNamed) {
  ASSERT_TRUE(store_->put(keys::instance(), as_bytes("garbage")).is_ok());
  auto a = InstanceClaim::acquire(store_, dir_.path() / "a", record_of("0x01"), 3);
  ASSERT_TRUE(a.is_ok()) << a.status();
  EXPECT_TRUE(read_instance(*store_).is_ok());
  ASSERT_TRUE(files::write_file_atomic(dir_.path() / "c" / "instance_id", as_bytes("xyz\n")).is_ok());
  auto c = InstanceClaim::acquire(store_, dir_.path() / "c", record_of("0x01"), 30);
  EXPECT_EQ(c.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(c.status().message().find("instance_id"), std::string::npos) << c.status();
}

TEST_F(InstanceTest, AFollowerWithAnotherModelThanTheLeadsIsRefused) {
  testing::FakeChain fake;
  chain::PrivateKey lead_key = key_of(1);
  chain::PrivateKey follower_key = key_of(2);
  const std::uint16_t lead = fake.add_neuron(lead_key, 1000, true);
  const std::uint16_t follower = fake.add_neuron(follower_key);
  auto chain = fake.as(follower_key);
  PeerDirectory peers(*chain, fake.netuid(), default_store_opener(testing::local_peers()));
  // No record yet (or no store): nothing to compare, the follower starts.
  EXPECT_TRUE(check_lead_model(*chain, peers, fake.netuid(), follower, "model-a").is_ok());
  storage::StorageOptions so;
  so.url = "file://" + (dir_.path() / "store").string();
  fake.set_commitment_of(lead, storage::encode_location(so));
  ASSERT_TRUE(InstanceClaim::acquire(store_, dir_.path() / "lead", record_of("0x01", "model-a"), 1).is_ok());
  EXPECT_TRUE(check_lead_model(*chain, peers, fake.netuid(), follower, "model-a").is_ok());
  Status other = check_lead_model(*chain, peers, fake.netuid(), follower, "model-b");
  EXPECT_EQ(other.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("model-a"), std::string::npos) << other;
  EXPECT_NE(other.message().find("model-b"), std::string::npos) << other;
  // The lead itself is not compared with itself.
  EXPECT_TRUE(check_lead_model(*chain, peers, fake.netuid(), lead, "model-b").is_ok());
}

}  // namespace
}  // namespace crucible::protocol
