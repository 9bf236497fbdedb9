#include "crucible/chain/keys.h"

#include <gtest/gtest.h>

namespace crucible::chain {
namespace {

PrivateKey key46() { return PrivateKey::from_bytes(Bytes(32, 0x46)).value(); }

TEST(Keys, AddressOfChainMdKey) {
  EXPECT_EQ(key46().address().checksum(), "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F");
}

TEST(Keys, Eip55Checksums) {
  // EIP-55's own examples.
  for (const char* a : {"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
                        "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB", "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb"}) {
    auto parsed = Address::parse(a);
    ASSERT_TRUE(parsed.is_ok()) << a;
    EXPECT_EQ(parsed->checksum(), a);
  }
  EXPECT_TRUE(Address::parse("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed").is_ok());   // all lower: no checksum
  EXPECT_FALSE(Address::parse("0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed").is_ok());  // one case flipped
  EXPECT_FALSE(Address::parse("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeA").is_ok());    // short
  EXPECT_EQ(Address::from_low_u64(0x804).hex(), "0x0000000000000000000000000000000000000804");
}

TEST(Keys, SignIsDeterministicAndRecovers) {
  PrivateKey k = key46();
  Hash32 digest = keccak256(as_bytes("crucible"));
  Signature a = k.sign(digest), b = k.sign(digest);
  EXPECT_EQ(a.r, b.r);
  EXPECT_EQ(a.s, b.s);
  EXPECT_EQ(a.s[0] & 0x80, 0);  // low-S
  auto who = recover_address(digest, a);
  ASSERT_TRUE(who.is_ok()) << who.status();
  EXPECT_EQ(*who, k.address());
  auto rsv = a.to_rsv();
  auto back = Signature::from_rsv(rsv);
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(recover_address(digest, *back).value(), k.address());
}

TEST(Keys, TamperedSignaturesFail) {
  PrivateKey k = key46();
  Hash32 digest = keccak256(as_bytes("crucible"));
  Signature sig = k.sign(digest);
  Hash32 other = keccak256(as_bytes("crucible!"));
  auto wrong = recover_address(other, sig);
  EXPECT_TRUE(!wrong.is_ok() || *wrong != k.address());
  Signature zero = sig;
  zero.r.fill(0);
  EXPECT_EQ(recover_address(digest, zero).status().code(), StatusCode::kUnauthenticated);
  Signature bad_v = sig;
  bad_v.recid = 3;
  EXPECT_EQ(recover_address(digest, bad_v).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(Signature::from_rsv(Bytes(64, 1)).status().code(), StatusCode::kUnauthenticated);
  auto rsv = sig.to_rsv();
  rsv[64] = 29;
  EXPECT_EQ(Signature::from_rsv(rsv).status().code(), StatusCode::kUnauthenticated);
}

TEST(Keys, HighSIsRefused) {
  // s' = n - s is the malleated twin of a valid signature.
  static const std::array<std::uint8_t, 32> n =
      from_hex_fixed<32>("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141").value();
  PrivateKey k = key46();
  Hash32 digest = keccak256(as_bytes("x"));
  Signature sig = k.sign(digest);
  Signature high = sig;
  int borrow = 0;
  for (int i = 31; i >= 0; --i) {
    int d = n[i] - sig.s[i] - borrow;
    borrow = d < 0;
    high.s[i] = static_cast<std::uint8_t>(d + (borrow ? 256 : 0));
  }
  high.recid ^= 1;
  EXPECT_EQ(recover_address(digest, high).status().code(), StatusCode::kUnauthenticated);
}

TEST(Keys, InvalidPrivateKeys) {
  EXPECT_FALSE(PrivateKey::from_bytes(Bytes(32, 0)).is_ok());
  EXPECT_FALSE(PrivateKey::from_bytes(Bytes(32, 0xff)).is_ok());  // >= n
  EXPECT_FALSE(PrivateKey::from_bytes(Bytes(31, 1)).is_ok());
}

TEST(Keys, GeneratedKeysAreDistinctAndValid) {
  auto a = PrivateKey::generate(), b = PrivateKey::generate();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NE(a->secret_bytes(), b->secret_bytes());
  EXPECT_NE(a->address(), b->address());
}

}  // namespace
}  // namespace crucible::chain
