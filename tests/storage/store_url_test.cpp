#include "crucible/storage/store_url.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace crucible::storage {
namespace {

using ::testing::HasSubstr;

TEST(StoreUrl, File) {
  auto u = parse_store_url("file:///var/lib/crucible/store");
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->kind, StoreUrl::Kind::kFile);
  EXPECT_EQ(u->path, "/var/lib/crucible/store");
  EXPECT_FALSE(parse_store_url("file://relative").is_ok());
}

TEST(StoreUrl, S3WithEndpointRegionStyle) {
  auto u = parse_store_url("s3://grads/miner-7/v1?endpoint=http%3A%2F%2F127.0.0.1%3A7480&region=auto&style=path");
  ASSERT_TRUE(u.is_ok()) << u.status();
  EXPECT_EQ(u->kind, StoreUrl::Kind::kS3);
  EXPECT_EQ(u->s3.bucket, "grads");
  EXPECT_EQ(u->s3.prefix, "miner-7/v1");
  EXPECT_EQ(u->s3.endpoint, "http://127.0.0.1:7480");
  EXPECT_EQ(u->s3.region, "auto");
  EXPECT_TRUE(u->s3.path_style);
  auto aws = parse_store_url("s3://bucket?region=eu-west-1");
  ASSERT_TRUE(aws.is_ok());
  EXPECT_FALSE(aws->s3.path_style);  // AWS: virtual-host style
  EXPECT_TRUE(aws->s3.prefix.empty());
}

TEST(StoreUrl, BadUrlsNameTheProblem) {
  EXPECT_THAT(parse_store_url("gs://x").status().message(), HasSubstr("expected file:///path or s3://"));
  EXPECT_THAT(parse_store_url("s3:///prefix").status().message(), HasSubstr("no bucket"));
  EXPECT_THAT(parse_store_url("s3://b?endpont=x").status().message(), HasSubstr("unknown parameter 'endpont'"));
  EXPECT_THAT(parse_store_url("s3://b?style=weird").status().message(), HasSubstr("style"));
  EXPECT_FALSE(parse_store_url("s3://b?endpoint=%zz").is_ok());
}

TEST(StoreUrl, OpensALocalStore) {
  crucible::testing::TempDir dir;
  auto store = open_store("file://" + dir.path().string() + "/s", {}, {});
  ASSERT_TRUE(store.is_ok()) << store.status();
  ASSERT_TRUE((*store)->put("k", Bytes{1, 2, 3}).is_ok());
  EXPECT_EQ((*store)->get("k", 10).value().data, (Bytes{1, 2, 3}));
  EXPECT_THAT((*store)->describe(), HasSubstr("file://"));
}

}  // namespace
}  // namespace crucible::storage
