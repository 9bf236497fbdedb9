// The codec's CPU fast path against the vectors of protocol.md /
// reference/vectors.md and hand-checked cases.
#include "crucible/kernels/codec.h"

#include <gtest/gtest.h>

#include <random>

namespace crucible::kernels {
namespace {

TEST(Chunking, LargestDivisorUpTo64) {
  // reference/vectors.md
  const std::pair<std::int64_t, std::int64_t> cases[] = {{8, 8},     {7, 7},      {100, 50},    {16, 16},
                                                         {2048, 64}, {32000, 64}, {262208, 64}, {1000, 50}};
  for (auto [dim, want] : cases) EXPECT_EQ(chunk_size(dim), want) << dim;
  EXPECT_EQ(chunk_size(1), 1);
  EXPECT_EQ(chunk_size(67), 1);  // a prime above 64: one-element chunks
}

TEST(Chunking, TopKScalesWithBlockSize) {
  EXPECT_EQ(topk_for_block(4096), 64);
  EXPECT_EQ(topk_for_block(64 * 50), 50);
  EXPECT_EQ(topk_for_block(64), 2);  // clamped up to 2
  EXPECT_EQ(topk_for_block(2048), 32);
  EXPECT_EQ(topk_for_block(3), 2);
  for (std::int64_t e : {5, 100, 777, 4096}) EXPECT_EQ(topk_for_block(e) % 2, 0) << e;
}

TEST(Chunking, Layouts) {
  std::int64_t s2[] = {128, 100};
  auto l = layout_for(s2).value();
  EXPECT_EQ(l.block_rows, 64);
  EXPECT_EQ(l.block_cols, 50);
  EXPECT_EQ(l.num_blocks(), 4);
  EXPECT_EQ(l.k, 50);
  std::int64_t s1[] = {4096};
  auto v = layout_for(s1).value();
  EXPECT_EQ(v.rows, 1);
  EXPECT_EQ(v.block_cols, 64);
  EXPECT_EQ(v.num_blocks(), 64);
  EXPECT_EQ(v.k, 2);
  std::int64_t s3[] = {2, 3, 8};
  EXPECT_EQ(layout_for(s3).value().rows, 6);
  std::int64_t bad[] = {4, 0};
  EXPECT_FALSE(layout_for(bad).is_ok());
  EXPECT_FALSE(layout_for({}).is_ok());
}

TEST(Quant2, VectorFromReference) {
  std::vector<float> v = {0.5f, -1.25f, 2.0f, 0.1f, -0.3f, 0.0f, 1.1f, -2.2f};
  std::vector<std::uint8_t> codes(v.size());
  Quant2 q = quantize2(v, codes, 0);
  EXPECT_NEAR(q.shift, -0.006250, 1e-6);
  EXPECT_NEAR(q.scale, 1.960864, 1e-6);
  EXPECT_EQ(codes, (std::vector<std::uint8_t>{2, 1, 3, 2, 2, 2, 3, 1}));
  EXPECT_EQ(q.lookup[0], 0.0f);  // empty bin
  EXPECT_NEAR(q.lookup[1], -1.718750, 1e-6);
  EXPECT_NEAR(q.lookup[2], 0.081250, 1e-6);
  EXPECT_NEAR(q.lookup[3], 1.556250, 1e-6);
  std::vector<float> back(v.size());
  dequantize2(q, codes, back);
  const float want[] = {0.075f, -1.725f, 1.55f, 0.075f, 0.075f, 0.075f, 1.55f, -1.725f};
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(back[i], want[i], 1e-6) << i;
}

TEST(Pack2, LayoutAndPadding) {
  std::vector<std::uint8_t> codes = {1, 2, 3, 0, 3};
  std::vector<std::uint8_t> packed(packed2_size(codes.size()));
  ASSERT_TRUE(pack_codes2(codes, packed).is_ok());
  EXPECT_EQ(packed, (std::vector<std::uint8_t>{0x39, 0x03}));  // 1 | 2<<2 | 3<<4 | 0<<6 ; 3
  std::vector<std::uint8_t> back(codes.size());
  ASSERT_TRUE(unpack_codes2(packed, back).is_ok());
  EXPECT_EQ(back, codes);
  packed[1] |= 0x40;  // a bit in the padding
  EXPECT_EQ(unpack_codes2(packed, back).code(), StatusCode::kDataLoss);
  EXPECT_EQ(unpack_codes2(std::vector<std::uint8_t>{1}, back).code(), StatusCode::kDataLoss);
  std::vector<std::uint8_t> bad = {4};
  std::vector<std::uint8_t> out(1);
  EXPECT_EQ(pack_codes2(bad, out).code(), StatusCode::kInvalidArgument);
}

TEST(TopK, HandCheckedBlockAndTies) {
  // One 1x8 tensor: block of 8, k = 2.
  std::int64_t shape[] = {8};
  auto l = layout_for(shape).value();
  ASSERT_EQ(l.k, 2);
  std::vector<float> x = {0.1f, -3.0f, 2.0f, 3.0f, 0.0f, -0.5f, 1.0f, 0.2f};
  std::vector<std::uint16_t> idx(2);
  std::vector<float> val(2);
  ASSERT_TRUE(select_topk(x, l, idx, val).is_ok());
  EXPECT_EQ(idx, (std::vector<std::uint16_t>{1, 3}));  // |-3| ties |3|: both kept, ascending
  EXPECT_EQ(val, (std::vector<float>{-3.0f, 3.0f}));
  std::vector<float> ties = {1, 1, 1, 1, 1, 1, 1, 1};
  ASSERT_TRUE(select_topk(ties, l, idx, val).is_ok());
  EXPECT_EQ(idx, (std::vector<std::uint16_t>{0, 1}));  // equal magnitudes: lower indices win
}

TEST(TopK, DeterministicAcrossThreadCountsAndDecodes) {
  std::int64_t shape[] = {256, 192};
  auto l = layout_for(shape).value();
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<std::size_t>(l.rows * l.cols));
  for (auto& v : x) v = nd(rng);
  std::vector<std::uint16_t> i1(static_cast<std::size_t>(l.kept())), i4(i1.size());
  std::vector<float> v1(i1.size()), v4(i1.size());
  ASSERT_TRUE(select_topk(x, l, i1, v1, 1).is_ok());
  ASSERT_TRUE(select_topk(x, l, i4, v4, 4).is_ok());
  EXPECT_EQ(i1, i4);
  EXPECT_EQ(v1, v4);
  std::vector<float> dense(x.size());
  ASSERT_TRUE(decode_dense(l, i1, v1, dense).is_ok());
  std::size_t nonzero = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    if (dense[j] != 0) {
      ++nonzero;
      EXPECT_EQ(dense[j], x[j]);
    }
  }
  EXPECT_EQ(nonzero, i1.size());
  i1[5] = static_cast<std::uint16_t>(l.block_elems());  // one past the end of its block
  EXPECT_EQ(decode_dense(l, i1, v1, dense).code(), StatusCode::kDataLoss);
}

TEST(TopK, RejectsMismatchedBuffers) {
  std::int64_t shape[] = {64};
  auto l = layout_for(shape).value();
  std::vector<float> x(63);
  std::vector<std::uint16_t> idx(static_cast<std::size_t>(l.kept()));
  std::vector<float> val(idx.size());
  EXPECT_EQ(select_topk(x, l, idx, val).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crucible::kernels
