// Vectors computed with an independent Python implementation of the same
// specification (docs/protocol.md §2).
#include "crucible/common/sampler.h"

#include <gtest/gtest.h>

#include <set>

namespace crucible {
namespace {

TEST(SplitMix64, ReferenceOutputsForSeedZero) {
  SplitMix64 g(0);
  EXPECT_EQ(g.next(), 0xe220a8397b1dcdafULL);  // the published first output
  EXPECT_EQ(g.next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(g.next(), 0x06c45d188009454fULL);
}

TEST(Sampler, SeedFormula) {
  EXPECT_EQ(assignment_seed(7, 12), 7'000'025u);
  EXPECT_EQ(assignment_seed(5000, 123456), 705'154'776u);
}

TEST(Sampler, Vectors) {
  EXPECT_EQ(assign_samples(7, 12, 1000, 8).value(), (std::vector<std::uint64_t>{67, 19, 824, 843, 906, 854, 876, 363}));
  EXPECT_EQ(assign_samples(0, 0, 10, 10).value(), (std::vector<std::uint64_t>{5, 1, 9, 7, 0, 4, 3, 2, 6, 8}));
  EXPECT_EQ(assign_samples(5000, 123456, std::uint64_t{1} << 40, 5).value(),
            (std::vector<std::uint64_t>{748796533609, 686955270019, 766439048096, 874447432213, 924426300550}));
}

TEST(Sampler, DistinctInRangeAndDifferentPerUidAndWindow) {
  auto a = assign_samples(3, 40, 5000, 512).value();
  std::set<std::uint64_t> unique(a.begin(), a.end());
  EXPECT_EQ(unique.size(), a.size());
  EXPECT_LT(*unique.rbegin(), 5000u);
  EXPECT_NE(a, assign_samples(4, 40, 5000, 512).value());
  EXPECT_NE(a, assign_samples(3, 41, 5000, 512).value());
  EXPECT_EQ(a, assign_samples(3, 40, 5000, 512).value());
}

TEST(Sampler, BadRequests) {
  EXPECT_EQ(assign_samples(1, 1, 0, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(assign_samples(1, 1, 10, 11).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(assign_samples(1, 1, std::uint64_t{1} << 40, std::uint64_t{1} << 30).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crucible
