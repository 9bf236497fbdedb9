#include "crucible/protocol/object_keys.h"

#include <gtest/gtest.h>

#include "crucible/storage/object_store.h"

namespace crucible::protocol {
namespace {

TEST(ObjectKeys, AreVersionedAndValidStoreKeys) {
  EXPECT_EQ(keys::gradient(7), "v1/gradient/7.crg");
  EXPECT_EQ(keys::fingerprint(7), "v1/fingerprint/7.json");
  EXPECT_EQ(keys::aggregate(7), "v1/aggregate/7.json");
  EXPECT_EQ(keys::checkpoint(3), "v1/checkpoint/3/model.safetensors");
  EXPECT_EQ(keys::checkpoint_latest(), "v1/checkpoint/LATEST.json");
  for (const auto& k :
       {keys::gradient(0), keys::fingerprint(1), keys::aggregate(2), keys::checkpoint(3), keys::checkpoint_latest()}) {
    EXPECT_TRUE(storage::validate_key(k).is_ok()) << k;
    EXPECT_TRUE(k.starts_with(keys::prefix()));
  }
}

TEST(ObjectKeys, AggregateWindowParsesOnlyWellFormedKeys) {
  EXPECT_EQ(keys::aggregate_window(keys::aggregate(0)), 0u);
  EXPECT_EQ(keys::aggregate_window(keys::aggregate(18446744073709551615ull)), 18446744073709551615ull);
  EXPECT_FALSE(keys::aggregate_window("v1/aggregate/18446744073709551616.json"));  // overflow: no exception
  EXPECT_FALSE(keys::aggregate_window("v1/aggregate/99999999999999999999999.json"));
  EXPECT_FALSE(keys::aggregate_window("v1/aggregate/012.json"));
  EXPECT_FALSE(keys::aggregate_window("v1/aggregate/.json"));
  EXPECT_FALSE(keys::aggregate_window("v1/aggregate/1x.json"));
  EXPECT_FALSE(keys::aggregate_window("v1/aggregate/-1.json"));
  EXPECT_FALSE(keys::aggregate_window("v1/aggregate/12.jsonx"));
  EXPECT_FALSE(keys::aggregate_window("v1/gradient/12.json"));
  EXPECT_FALSE(keys::aggregate_window("v2/aggregate/12.json"));
}

}  // namespace
}  // namespace crucible::protocol
