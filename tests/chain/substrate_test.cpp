#include "crucible/chain/substrate.h"

#include <gmock/gmock.h>
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
  auto text = decode_commitment(registration({raw("s3://bucket/"), hash_field, raw("prefix")}));
  ASSERT_TRUE(text.is_ok()) << text.status();
  EXPECT_EQ(*text, "s3://bucket/prefix");
}

// types.rs at opentensor/subtensor 14bc6f9: 134 TimelockEncrypted { Vec<u8>,
// u64 }, 135 ResetBondsFlag, 136 BigRaw (Vec<u8> <= 512).
TEST(Substrate, DecodesTheNewerFieldTypes) {
  Bytes big = {136};
  append(big, compact(300));
  big.resize(big.size() + 300, 'b');
  Bytes timelocked = {134};
  append(timelocked, compact(5));
  for (int i = 0; i < 5 + 8; ++i) timelocked.push_back(0x42);  // ciphertext, then reveal_round
  auto text = decode_commitment(registration({timelocked, Bytes{135}, big}));
  ASSERT_TRUE(text.is_ok()) << text.status();
  EXPECT_EQ(*text, std::string(300, 'b'));  // the ciphertext is not text yet; the flag carries none
  Bytes too_big = {136};
  append(too_big, compact(513));
  too_big.resize(too_big.size() + 513, 'b');
  EXPECT_EQ(decode_commitment(registration({too_big})).status().code(), StatusCode::kDataLoss);
}

TEST(Substrate, RejectsMalformedCommitments) {
  EXPECT_EQ(decode_commitment(Bytes(5, 0)).status().code(), StatusCode::kDataLoss);
  Bytes truncated = registration({raw("abcdef")});
  truncated.pop_back();
  EXPECT_EQ(decode_commitment(truncated).status().code(), StatusCode::kDataLoss);
  Bytes trailing = registration({raw("a")});
  trailing.push_back(0);
  EXPECT_EQ(decode_commitment(trailing).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(decode_commitment(registration({Bytes{137}})).status().code(), StatusCode::kDataLoss);
  // MaxFields is 3.
  EXPECT_EQ(decode_commitment(registration({raw("a"), raw("b"), raw("c"), raw("d")})).status().code(),
            StatusCode::kDataLoss);
}

// The call Proxy.proxy dispatches: Commitments (18) set_commitment (0),
// netuid u16le, compact(fields), Raw fields of <= 128 bytes. And the
// pallet's value decodes back to the same text.
TEST(Substrate, SetCommitmentCallBytes) {
  auto call = set_commitment_call(2, "abc");
  ASSERT_TRUE(call.is_ok());
  EXPECT_EQ(to_hex(*call),
            "0x1200020004"
            "04616263");
  const std::string text(300, 'z');
  call = set_commitment_call(513, text);
  ASSERT_TRUE(call.is_ok());
  ASSERT_EQ(call->size(), 5u + 3 + 300);
  EXPECT_EQ((*call)[4], 3u << 2);
  EXPECT_EQ((*call)[5], 129u);                          // Raw of 128 bytes
  EXPECT_EQ((*call)[5 + 129 + 129], 44 + 1);            // Raw of the last 44
  Bytes stored = {0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0};  // deposit, block
  stored.insert(stored.end(), call->begin() + 4, call->end());
  EXPECT_EQ(decode_commitment(stored).value(), text);
  EXPECT_THAT(set_commitment_call(1, std::string(385, 'a')).status().message(),
              ::testing::HasSubstr("at most 3 fields of 128 bytes"));
  EXPECT_EQ(set_commitment_call(1, "").status().code(), StatusCode::kInvalidArgument);
}

TEST(Substrate, SubtensorStorageKeysAndValues) {
  // twox128("SubtensorModule") is the first prefix StorageQuery authorises (precompiles/src/storage_query.rs).
  EXPECT_EQ(to_hex(subtensor_storage_key("Tempo", 1)),
            "0x658faa385070e074c85bf6b568cf05557641384bb339f3758acddfd7053d33170100");
  EXPECT_EQ(subtensor_storage_key("StakeThreshold").size(), 32u);
  EXPECT_EQ(decode_storage_uint(Bytes{0x68, 0x01}, 2, 0).value(), 360u);
  EXPECT_EQ(decode_storage_uint(Bytes{}, 2, 360).value(), 360u);  // absent: the item's default
  EXPECT_EQ(decode_storage_uint(Bytes{1, 2, 3}, 2, 0).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace crucible::chain::substrate
