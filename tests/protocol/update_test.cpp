#include "crucible/protocol/update.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace crucible::protocol {
namespace {

using test::packet_for;

TEST(DecodeUpdate, ChecksTensorsAgainstTheModel) {
  std::vector<TensorSpec> specs{{"a", {64, 64}}, {"b", {32}}};
  packet::Packet p = packet_for(specs, 1);
  EXPECT_TRUE(decode_update(p, specs).is_ok());
  std::vector<TensorSpec> renamed{{"a", {64, 64}}, {"c", {32}}};
  EXPECT_EQ(decode_update(p, renamed).status().code(), StatusCode::kInvalidArgument);
  std::vector<TensorSpec> reshaped{{"a", {32, 128}}, {"b", {32}}};
  EXPECT_EQ(decode_update(p, reshaped).status().code(), StatusCode::kInvalidArgument);
  std::vector<TensorSpec> fewer{{"a", {64, 64}}};
  EXPECT_EQ(decode_update(p, fewer).status().code(), StatusCode::kInvalidArgument);
}

TEST(MergeUpdates, IsIndependentOfPeerOrderAndMatchesTheKernel) {
  std::vector<TensorSpec> specs{{"a", {64, 64}}, {"b", {32}}};
  PeerTensors one{3, *decode_update(packet_for(specs, 1), specs)};
  PeerTensors two{1, *decode_update(packet_for(specs, 3), specs)};
  auto host = kernels::cpu_backend(1);
  auto ab = merge_updates({one, two}, specs, *host);
  auto ba = merge_updates({two, one}, specs, *host);
  ASSERT_TRUE(ab.is_ok() && ba.is_ok());
  EXPECT_EQ(*ab, *ba);  // bit for bit
  // Alone, a peer's merge is its own decoded update (the median norm is its own).
  auto solo = merge_updates({one}, specs, *host);
  std::vector<float> dense(64 * 64);
  ASSERT_TRUE(kernels::decompress(one.tensors[0], dense).is_ok());
  EXPECT_EQ((*solo)[0], dense);
  PeerTensors short_one{4, {one.tensors[0]}};
  EXPECT_EQ(merge_updates({one, short_one}, specs, *host).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crucible::protocol
