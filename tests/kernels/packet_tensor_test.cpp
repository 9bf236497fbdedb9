#include "crucible/kernels/packet_tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace crucible::kernels {
namespace {

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = std::sin(static_cast<float>(i) * 0.37f) * (1.0f + static_cast<float>(i % 7));
  return v;
}

TEST(PacketTensor, RoundTripsACompressedTensor) {
  const std::vector<std::int64_t> shape{128, 96};
  auto x = ramp(128 * 96);
  auto c = compress(x, shape, 2);
  ASSERT_TRUE(c.is_ok()) << c.status();
  auto t = to_packet_tensor("w", shape, *c);
  ASSERT_TRUE(t.is_ok()) << t.status();
  EXPECT_EQ(t->indices.size(), c->indices.size() / 2 * 3);
  EXPECT_EQ(t->codes.size(), (c->codes.size() + 3) / 4);
  auto back = from_packet_tensor(*t);
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->indices, c->indices);
  EXPECT_EQ(back->codes, c->codes);
  EXPECT_EQ(back->quant.lookup, c->quant.lookup);
  std::vector<float> a(x.size()), b(x.size());
  ASSERT_TRUE(decompress(*c, a).is_ok());
  ASSERT_TRUE(decompress(*back, b).is_ok());
  EXPECT_EQ(a, b);
}

TEST(PacketTensor, RefusesLayoutsOtherThanTheProtocols) {
  const std::vector<std::int64_t> shape{64, 64};
  auto c = compress(ramp(4096), shape, 1);
  auto t = *to_packet_tensor("w", shape, *c);
  packet::Tensor more_k = t;
  more_k.k = 128;  // structurally fine, but not the protocol's k
  auto s = packet::tensor_sizes(more_k);
  more_k.indices.assign(s->index_bytes, 0);
  more_k.codes.assign(s->code_bytes, 0);
  EXPECT_EQ(from_packet_tensor(more_k).status().code(), StatusCode::kInvalidArgument);
}

TEST(PacketTensor, RefusesBadPayloads) {
  const std::vector<std::int64_t> shape{64, 64};
  auto c = compress(ramp(4096), shape, 1);
  auto t = *to_packet_tensor("w", shape, *c);

  packet::Tensor dup = t;  // first two indices equal: not strictly ascending
  dup.indices[0] = 0;
  dup.indices[1] = 0;
  dup.indices[2] = 0;
  EXPECT_EQ(from_packet_tensor(dup).status().code(), StatusCode::kDataLoss);

  packet::Tensor nan = t;
  nan.lookup[2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(from_packet_tensor(nan).status().code(), StatusCode::kOutOfRange);
  packet::Tensor inf = t;
  inf.scale = std::numeric_limits<float>::infinity();
  EXPECT_EQ(from_packet_tensor(inf).status().code(), StatusCode::kOutOfRange);

  // Each part finite, their sum not: the decoder would produce infinity.
  packet::Tensor overflow = t;
  overflow.shift = 3e38f;
  overflow.lookup[1] = 3e38f;
  auto refused = from_packet_tensor(overflow);
  EXPECT_EQ(refused.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(refused.status().message().find("overflows"), std::string::npos);

  packet::Tensor short_codes = t;
  short_codes.codes.pop_back();
  EXPECT_EQ(from_packet_tensor(short_codes).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace crucible::kernels
