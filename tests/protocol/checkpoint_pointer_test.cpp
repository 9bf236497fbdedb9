#include "crucible/protocol/checkpoint_pointer.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace crucible::protocol
