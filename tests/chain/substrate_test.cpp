#include "crucible/chain/substrate.h"

#include <gtest/gtest.h>

namespace crucible::chain::substrate {
namespace {

TEST(Substrate, MirrorAccountVectorFromChainMd) {
  Address a = Address::parse("0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F").value();
  EXPECT_EQ(to_hex(mirror_account(a)), "0x07ffff11c930a959f6986bdea8782210a0df1e90277e8359133b54d1783743bf");
}

TEST(Substrate, Ss58) {
  // Alice, the well-known Substrate dev account.
  auto alice = from_hex_fixed<32>("d43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d").value();
  EXPECT_EQ(ss58(alice), "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY");
  // The mirror of chain.md's address (ethers base58 + noble blake2b).
  Address a = Address::parse("0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F").value();
  EXPECT_EQ(ss58(mirror_account(a)), "5CFCEpnJNkQAaRs4YjdSmbxd4ju666hn8WrFDE9KmNUJeetW");
}

TEST(Substrate, Blake2bMatchesNobleHashes) {
  // @noble/hashes blake2b(dkLen 32)
  EXPECT_EQ(to_hex(blake2b_256({}), false), "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
  Bytes long_input(300);
  for (int i = 0; i < 300; ++i) long_input[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(to_hex(blake2b_256(long_input), false), "3a486e3fe3ee414853000269ac020030aeef748cb05cd62ba85939ec298ef25c");
}

TEST(Substrate, WeightsCommitHashMatchesNobleHashes) {
  AccountId who{};
  who.fill(0x11);
  Hash32 h = weights_commit_hash(who, 1, {0, 1, 2}, {65535, 32768, 0}, {1, 2, 3, 4, 5, 6, 7, 8}, 7);
  EXPECT_EQ(to_hex(h, false), "b069849fbaaee5aba47c7574ff3bf33fd312bad8edfdd8af6f288bb46608a4a9");
}

TEST(Substrate, TwoxHashersMatchKnownStoragePrefixes) {
  // The well-known prefix of System.Account storage keys.
  EXPECT_EQ(to_hex(twox128(as_bytes("System")), false), "26aa394eea5630e07c48ae0c9558cef7");
  EXPECT_EQ(to_hex(twox128(as_bytes("Account")), false), "b99d880ec681799c0cf30e8886371da9");
}

TEST(Substrate, CompactEncoding) {
  EXPECT_EQ(to_hex(compact(0), false), "00");
  EXPECT_EQ(to_hex(compact(1), false), "04");
  EXPECT_EQ(to_hex(compact(63), false), "fc");
  EXPECT_EQ(to_hex(compact(64), false), "0101");
  EXPECT_EQ(to_hex(compact(16383), false), "fdff");
  EXPECT_EQ(to_hex(compact(16384), false), "02000100");
}

TEST(Substrate, CommitmentStorageKeyLayout) {
  AccountId acct{};
  acct.fill(0xAB);
  Bytes key = commitment_storage_key(3, acct);
  ASSERT_EQ(key.size(), 16u + 16u + 2u + 8u + 32u);
  EXPECT_EQ(Bytes(key.begin(), key.begin() + 16), twox128(as_bytes("Commitments")));
  EXPECT_EQ(key[32], 3);
  EXPECT_EQ(key[33], 0);
  EXPECT_EQ(Bytes(key.end() - 32, key.end()), Bytes(acct.begin(), acct.end()));
}

void append(Bytes& out, const Bytes& more) {
  for (auto b : more) out.push_back(b);
}

Bytes registration(std::initializer_list<Bytes> fields) {
  Bytes out(8, 0);               // deposit
  append(out, {0x10, 0, 0, 0});  // block 16
  append(out, compact(fields.size()));
  for (const auto& f : fields) append(out, f);
  return out;
}

Bytes raw(std::string_view s) {
  Bytes out;
  out.push_back(static_cast<std::uint8_t>(s.size() + 1));
  for (char c : s) out.push_back(static_cast<std::uint8_t>(c));
  return out;
}

TEST(Substrate, DecodesCommitmentRawFields) {
  Bytes hash_field(33, 0x77);
  hash_field[0] = 130;  // BlakeTwo256
  auto text = decode_commitment(registration({raw("s3://bucket/"), Bytes{0}, hash_field, raw("prefix")}));
  ASSERT_TRUE(text.is_ok()) << text.status();
  EXPECT_EQ(*text, "s3://bucket/prefix");
}

TEST(Substrate, RejectsMalformedCommitments) {
  EXPECT_EQ(decode_commitment(Bytes(5, 0)).status().code(), StatusCode::kDataLoss);
  Bytes truncated = registration({raw("abcdef")});
  truncated.pop_back();
  EXPECT_EQ(decode_commitment(truncated).status().code(), StatusCode::kDataLoss);
  Bytes trailing = registration({raw("a")});
  trailing.push_back(0);
  EXPECT_EQ(decode_commitment(trailing).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(decode_commitment(registration({Bytes{200}})).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace crucible::chain::substrate
