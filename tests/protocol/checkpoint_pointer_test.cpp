#include "crucible/protocol/checkpoint_pointer.h"

#include <gtest/gtest.h>

#include "crucible/protocol/object_keys.h"
#include "crucible/storage/local_store.h"
#include "support/temp_dir.h"
#include "test_util.h"

namespace crucible::protocol {
namespace {

TEST(CheckpointPointer, RoundTripsAndChecksTheKey) {
  CheckpointPointer p{7, 3, "v1/checkpoint/3/model.safetensors", "dim=1", test::h(2)};
  auto back = decode_checkpoint_pointer(encode_checkpoint_pointer(p));
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->window, 7u);
  EXPECT_EQ(back->global_step, 3u);
  EXPECT_EQ(back->key, p.key);
  EXPECT_EQ(back->model, p.model);
  EXPECT_EQ(back->basis, p.basis);
  p.key = "../../etc/passwd";
  EXPECT_FALSE(decode_checkpoint_pointer(encode_checkpoint_pointer(p)).is_ok());
}

TEST(CheckpointPointer, RefusesWrongTypesWithoutThrowing) {
  for (const char* text :
       {"", "[]", "null", R"({"v":1})", R"({"v":"1","window":1,"global_step":1,"key":"a","model":"m","basis":"0x00"})",
        R"({"v":1,"window":-1,"global_step":1,"key":"a","model":"m","basis":"0x00"})",
        R"({"v":1,"window":1,"global_step":1,"key":5,"model":"m","basis":"0x00"})",
        R"({"v":1,"window":1,"global_step":1,"key":"a","model":"m","basis":"0x00"})"}) {
    EXPECT_EQ(decode_checkpoint_pointer(std::string_view(text)).status().code(), StatusCode::kInvalidArgument) << text;
  }
  EXPECT_FALSE(decode_checkpoint_pointer(std::string(kMaxCheckpointPointerBytes + 1, ' ')).is_ok());
}

TEST(CheckpointPointer, FetchNewerTakesOnlyANewerCheckpointOfThisModel) {
  testing::TempDir dir;
  auto lead = storage::LocalStore::open(dir.path());
  ASSERT_TRUE(lead.is_ok());
  auto none = fetch_newer_checkpoint(**lead, std::nullopt, "dim=1", 1 << 20);
  ASSERT_TRUE(none.is_ok()) << none.status();
  EXPECT_FALSE(none->has_value());  // the lead has none yet
  const Bytes model{1, 2, 3};
  ASSERT_TRUE((*lead)->put(keys::checkpoint(3), model).is_ok());
  CheckpointPointer p{7, 3, keys::checkpoint(3), "dim=1", test::h(2)};
  ASSERT_TRUE((*lead)->put(keys::checkpoint_latest(), as_bytes(encode_checkpoint_pointer(p))).is_ok());
  auto fresh = fetch_newer_checkpoint(**lead, std::nullopt, "dim=1", 1 << 20);
  ASSERT_TRUE(fresh.is_ok() && fresh->has_value()) << fresh.status();
  EXPECT_EQ((*fresh)->pointer.window, 7u);
  EXPECT_EQ((*fresh)->model, model);
  auto behind = fetch_newer_checkpoint(**lead, 6, "dim=1", 1 << 20);
  ASSERT_TRUE(behind.is_ok());
  EXPECT_TRUE(behind->has_value());
  auto same = fetch_newer_checkpoint(**lead, 7, "dim=1", 1 << 20);
  ASSERT_TRUE(same.is_ok());
  EXPECT_FALSE(same->has_value());  // not past the model held
  EXPECT_EQ(fetch_newer_checkpoint(**lead, std::nullopt, "dim=2", 1 << 20).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fetch_newer_checkpoint(**lead, std::nullopt, "dim=1", 2).is_ok());  // over the size cap
}

}  // namespace
}  // namespace crucible::protocol
