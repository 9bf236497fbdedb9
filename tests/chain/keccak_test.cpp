#include "crucible/chain/keccak.h"

#include <gtest/gtest.h>

#include <string>

namespace crucible::chain {
namespace {

std::string hex_of(std::string_view s) { return to_hex(keccak256(as_bytes(s)), false); }

TEST(Keccak256, PublishedVectors) {
  // chain.md; the first two are the well-known Ethereum values.
  EXPECT_EQ(hex_of(""), "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
  EXPECT_EQ(hex_of("abc"), "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45");
  // The Solidity ABI spec's selector examples.
  EXPECT_EQ(hex_of("baz(uint32,bool)").substr(0, 8), "cdcd77c0");
  EXPECT_EQ(hex_of("transfer(address,uint256)").substr(0, 8), "a9059cbb");
}

TEST(Keccak256, IncrementalEqualsOneShotAcrossBlockBoundaries) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 7);
  for (std::size_t len : {0u, 1u, 135u, 136u, 137u, 272u, 999u}) {
    std::string_view part(data.data(), len);
    Keccak256 h;
    for (std::size_t i = 0; i < len; i += 13) h.update(as_bytes(part.substr(i, 13)));
    EXPECT_EQ(h.finish(), keccak256(as_bytes(part))) << len;
  }
}

TEST(Keccak256, RateSizedInputsDiffer) {
  // 135 bytes puts the 0x01 and 0x80 padding bits in the same byte.
  EXPECT_NE(keccak256(Bytes(135, 0)), keccak256(Bytes(136, 0)));
  EXPECT_EQ(to_hex(keccak256(Bytes(135, 0)), false).size(), 64u);
}

}  // namespace
}  // namespace crucible::chain
