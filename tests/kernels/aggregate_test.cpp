#include "crucible/kernels/aggregate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace crucible::kernels {
namespace {

// A hand-made compressed tensor of shape [8] (one block, k = 2) whose two
// kept values decode exactly to `a` and `b` (codes 3 and 0 of a chosen lookup).
CompressedTensor make(std::uint16_t i0, float a, std::uint16_t i1, float b) {
  CompressedTensor c;
  std::int64_t shape[] = {8};
  c.layout = layout_for(shape).value();
  c.indices = {i0, i1};
  c.codes = {3, 0};
  c.quant.shift = 0;
  c.quant.lookup = {b, 0, 0, a};
  return c;
}

TEST(Aggregate, MedianOfNorms) {
  EXPECT_EQ(median_of({3, 1, 2}), 2);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median_of({}), 0);
}

TEST(Aggregate, HandComputedClipAndMeanOnCollision) {
  // Norms: uid 1 -> 5 (3, 4), uid 2 -> 10 (6, 8), uid 3 -> 5 (5, 0); median 5:
  // uid 2 is scaled by 0.5; the others keep their values.
  CompressedTensor u1 = make(0, 3, 1, 4);
  CompressedTensor u2 = make(1, 6, 2, 8);
  CompressedTensor u3 = make(3, 5, 4, 0);
  std::vector<float> out(8);
  ASSERT_TRUE(aggregate({{2, &u2}, {3, &u3}, {1, &u1}}, out).is_ok());
  EXPECT_FLOAT_EQ(out[0], 3.0f);               // uid 1 alone
  EXPECT_FLOAT_EQ(out[1], (4.0f + 3.0f) / 2);  // uid 1 (4) and uid 2 (6 * 0.5): the mean, not the sum
  EXPECT_FLOAT_EQ(out[2], 4.0f);               // uid 2: 8 * 0.5
  EXPECT_FLOAT_EQ(out[3], 5.0f);               // uid 3
  EXPECT_FLOAT_EQ(out[4], 0.0f);
  EXPECT_FLOAT_EQ(out[7], 0.0f);  // nobody
}

TEST(Aggregate, InputOrderDoesNotMatter) {
  CompressedTensor a = make(0, 0.3f, 5, -0.7f), b = make(0, 0.1f, 2, 0.2f), c = make(5, 1.3f, 7, 0.9f);
  std::vector<float> x(8), y(8);
  ASSERT_TRUE(aggregate({{1, &a}, {2, &b}, {3, &c}}, x).is_ok());
  ASSERT_TRUE(aggregate({{3, &c}, {1, &a}, {2, &b}}, y).is_ok());
  EXPECT_EQ(x, y);  // bit-identical
}

TEST(Aggregate, RefusesBadPeers) {
  CompressedTensor a = make(0, 1, 1, 1);
  std::vector<float> out(8);
  EXPECT_EQ(aggregate({{1, &a}, {1, &a}}, out).code(), StatusCode::kInvalidArgument);  // duplicate uid
  CompressedTensor bad = make(0, 1, 9, 1);                                             // index outside the block
  EXPECT_EQ(aggregate({{1, &bad}}, out).code(), StatusCode::kDataLoss);
  CompressedTensor nan = make(0, std::nanf(""), 1, 1);
  EXPECT_EQ(aggregate({{1, &nan}}, out).code(), StatusCode::kInvalidArgument);
  std::vector<float> small(4);
  EXPECT_EQ(aggregate({{1, &a}}, small).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(aggregate({}, out).is_ok());
}

}  // namespace
}  // namespace crucible::kernels
