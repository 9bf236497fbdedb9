#include "crucible/chain/rlp.h"

#include <gtest/gtest.h>

namespace crucible::chain::rlp {
namespace {

std::string h(const Bytes& b) { return to_hex(b, false); }
Bytes str(std::string_view s) { return Bytes(s.begin(), s.end()); }

TEST(Rlp, EncodesChainMdVectors) {
  EXPECT_EQ(h(encode_bytes(str("dog"))), "83646f67");
  EXPECT_EQ(h(encode_list({encode_bytes(str("cat")), encode_bytes(str("dog"))})), "c88363617483646f67");
  EXPECT_EQ(h(encode_bytes({})), "80");
  EXPECT_EQ(h(encode_list({})), "c0");
  EXPECT_EQ(h(encode_uint(0)), "80");
  EXPECT_EQ(h(encode_uint(15)), "0f");
  EXPECT_EQ(h(encode_uint(1024)), "820400");
  // [ [], [[]], [ [], [[]] ] ]
  Bytes empty = encode_list({});
  Bytes one = encode_list({empty});
  EXPECT_EQ(h(encode_list({empty, one, encode_list({empty, one})})), "c7c0c1c0c3c0c1c0");
}

TEST(Rlp, LongStringsAndLists) {
  std::string lorem = "Lorem ipsum dolor sit amet, consectetur adipisicing elit";  // 56 bytes
  Bytes enc = encode_bytes(str(lorem));
  EXPECT_EQ(h(Bytes(enc.begin(), enc.begin() + 2)), "b838");
  auto item = decode(enc);
  ASSERT_TRUE(item.is_ok());
  EXPECT_EQ(item->bytes, str(lorem));
  EXPECT_EQ(h(encode_uint(U256::parse("0x0100000000000000000000000000000000000000000000000000000000000000").value())),
            "a00100000000000000000000000000000000000000000000000000000000000000");
}

TEST(Rlp, DecodeRoundTrip) {
  Bytes enc = encode_list({encode_bytes(str("cat")), encode_list({encode_uint(1024)}), encode_bytes({})});
  auto item = decode(enc);
  ASSERT_TRUE(item.is_ok()) << item.status();
  ASSERT_TRUE(item->is_list);
  ASSERT_EQ(item->items.size(), 3u);
  EXPECT_EQ(item->items[0].bytes, str("cat"));
  EXPECT_EQ(to_uint64(item->items[1].items[0]).value(), 1024u);
  EXPECT_TRUE(item->items[2].bytes.empty());
}

TEST(Rlp, RejectsMalformedInput) {
  auto bad = [](std::string_view hex) { return decode(from_hex(hex).value()).status().code(); };
  EXPECT_EQ(bad(""), StatusCode::kDataLoss);            // nothing
  EXPECT_EQ(bad("83646f"), StatusCode::kDataLoss);      // truncated string
  EXPECT_EQ(bad("83646f6700"), StatusCode::kDataLoss);  // trailing byte
  EXPECT_EQ(bad("8100"), StatusCode::kDataLoss);        // single byte < 0x80 must not be prefixed
  EXPECT_EQ(bad("b80100"), StatusCode::kDataLoss);      // long form for a short length
  EXPECT_EQ(bad("b90000"), StatusCode::kDataLoss);      // length with leading zero
  EXPECT_EQ(bad("bbffffffff"), StatusCode::kDataLoss);  // claims 4 GB
  EXPECT_EQ(bad("c3c0c0"), StatusCode::kDataLoss);      // list shorter than declared
  Bytes deep = encode_list({});
  for (int i = 0; i < kMaxDepth; ++i) deep = encode_list({deep});
  EXPECT_TRUE(decode(deep).is_ok());
  deep = encode_list({deep});
  Status s = decode(deep).status();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("nesting"), std::string::npos) << s;
}

TEST(Rlp, IntegersAreCanonical) {
  Item leading_zero{false, {0x00, 0x01}, {}};
  EXPECT_EQ(to_uint64(leading_zero).status().code(), StatusCode::kDataLoss);
  Item too_big{false, Bytes(9, 1), {}};
  EXPECT_EQ(to_uint64(too_big).status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace crucible::chain::rlp
