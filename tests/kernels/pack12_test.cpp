#include "crucible/kernels/pack12.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace crucible::kernels {
namespace {

TEST(Pack12, ProtocolVector) {
  // protocol.md §4 / reference/vectors.md
  std::vector<std::uint16_t> idx = {0x123, 0xABC, 4095, 0};
  std::vector<std::uint8_t> out(packed12_size(idx.size()));
  ASSERT_TRUE(pack_indices12(idx, out).is_ok());
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0x23, 0xC1, 0xAB, 0xFF, 0x0F, 0x00}));
  std::vector<std::uint16_t> back(idx.size());
  ASSERT_TRUE(unpack_indices12(out, back).is_ok());
  EXPECT_EQ(back, idx);
}

TEST(Pack12, RandomRoundTripIncludingOddCounts) {
  std::mt19937 rng(7);
  for (std::size_t n : {0u, 1u, 2u, 3u, 63u, 64u, 4095u}) {
    std::vector<std::uint16_t> idx(n);
    for (auto& i : idx) i = static_cast<std::uint16_t>(rng() % 4096);
    std::vector<std::uint8_t> out(packed12_size(n));
    ASSERT_TRUE(pack_indices12(idx, out).is_ok());
    std::vector<std::uint16_t> back(n);
    ASSERT_TRUE(unpack_indices12(out, back).is_ok());
    EXPECT_EQ(back, idx) << n;
  }
}

TEST(Pack12, RejectsIndexAbove4095) {
  std::vector<std::uint16_t> idx = {1, 4096};
  std::vector<std::uint8_t> out(3);
  Status s = pack_indices12(idx, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("4096"), std::string::npos);
}

TEST(Pack12, RejectsWrongSizes) {
  std::vector<std::uint16_t> idx = {1, 2};
  std::vector<std::uint8_t> small(2);
  EXPECT_EQ(pack_indices12(idx, small).code(), StatusCode::kInvalidArgument);
  std::vector<std::uint8_t> truncated = {0x01, 0x20};
  std::vector<std::uint16_t> back(2);
  EXPECT_EQ(unpack_indices12(truncated, back).code(), StatusCode::kDataLoss);
}

TEST(Pack12, RejectsNonZeroPadding) {
  std::vector<std::uint8_t> bytes = {0x01, 0x10, 0x00};  // one index, pad nibble 1
  std::vector<std::uint16_t> back(1);
  EXPECT_EQ(unpack_indices12(bytes, back).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace crucible::kernels
