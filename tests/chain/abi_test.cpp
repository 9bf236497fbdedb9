#include "crucible/chain/abi.h"

#include <gtest/gtest.h>

namespace crucible::chain::abi {
namespace {

std::vector<Type> types(std::string_view list) { return parse_types(list).value(); }

// Solidity ABI spec, "Examples": sam(bytes,bool,uint256[]) with ("dave", true, [1,2,3]).
constexpr const char* kSam =
    "a5643bf2"
    "0000000000000000000000000000000000000000000000000000000000000060"
    "0000000000000000000000000000000000000000000000000000000000000001"
    "00000000000000000000000000000000000000000000000000000000000000a0"
    "0000000000000000000000000000000000000000000000000000000000000004"
    "6461766500000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000003"
    "0000000000000000000000000000000000000000000000000000000000000001"
    "0000000000000000000000000000000000000000000000000000000000000002"
    "0000000000000000000000000000000000000000000000000000000000000003";

// Solidity ABI spec, "Use of Dynamic Types": f(uint256,uint32[],bytes10,bytes).
constexpr const char* kF =
    "8be65246"
    "0000000000000000000000000000000000000000000000000000000000000123"
    "0000000000000000000000000000000000000000000000000000000000000080"
    "3132333435363738393000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000e0"
    "0000000000000000000000000000000000000000000000000000000000000002"
    "0000000000000000000000000000000000000000000000000000000000000456"
    "0000000000000000000000000000000000000000000000000000000000000789"
    "000000000000000000000000000000000000000000000000000000000000000d"
    "48656c6c6f2c20776f726c642100000000000000000000000000000000000000";

TEST(Abi, SpecExampleSam) {
  auto call = encode_call("sam(bytes,bool,uint256[])", {Value::string("dave"), Value::boolean(true),
                                                        Value::list({Value::uint(1), Value::uint(2), Value::uint(3)})});
  ASSERT_TRUE(call.is_ok()) << call.status();
  EXPECT_EQ(to_hex(*call, false), kSam);
}

TEST(Abi, SpecExampleF) {
  auto call = encode_call(
      "f(uint256,uint32[],bytes10,bytes)",
      {Value::uint(0x123), Value::list({Value::uint(0x456), Value::uint(0x789)}),
       Value::fixed_bytes(Bytes{'1', '2', '3', '4', '5', '6', '7', '8', '9', '0'}), Value::string("Hello, world!")});
  ASSERT_TRUE(call.is_ok()) << call.status();
  EXPECT_EQ(to_hex(*call, false), kF);
}

TEST(Abi, SetWeightsEmptyFromChainMd) {
  auto call = encode_call("setWeights(uint16,uint16[],uint16[],uint64)",
                          {Value::uint(1), Value::list({}), Value::list({}), Value::uint(0)});
  ASSERT_TRUE(call.is_ok());
  std::string w0(64, '0');
  auto word = [&](std::string_view tail) { return w0.substr(0, 64 - tail.size()) + std::string(tail); };
  EXPECT_EQ(to_hex(*call, false), "34af16d6" + word("1") + word("80") + word("a0") + word("0") + word("0") + word("0"));
}

TEST(Abi, TuplesAndSignedIntsMatchEthers) {
  // ethers 6.17 AbiCoder.encode(["(uint16,bool)","(uint16,string)","int8","int256"], [[7,true],[9,"hi"],-1,-300])
  const char* want =
      "0000000000000000000000000000000000000000000000000000000000000007"
      "0000000000000000000000000000000000000000000000000000000000000001"
      "00000000000000000000000000000000000000000000000000000000000000a0"
      "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
      "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffed4"
      "0000000000000000000000000000000000000000000000000000000000000009"
      "0000000000000000000000000000000000000000000000000000000000000040"
      "0000000000000000000000000000000000000000000000000000000000000002"
      "6869000000000000000000000000000000000000000000000000000000000000";
  auto t = types("(uint16,bool),(uint16,string),int8,int256");
  std::vector<Value> v = {Value::list({Value::uint(7), Value::boolean(true)}),
                          Value::list({Value::uint(9), Value::string("hi")}), Value::integer(-1), Value::integer(-300)};
  auto enc = encode(t, v);
  ASSERT_TRUE(enc.is_ok()) << enc.status();
  EXPECT_EQ(to_hex(*enc, false), want);
  auto dec = decode(t, *enc);
  ASSERT_TRUE(dec.is_ok()) << dec.status();
  EXPECT_EQ((*dec)[1].items()[1].as_string(), "hi");
  EXPECT_TRUE((*dec)[0].items()[1].as_bool().value());
  EXPECT_EQ((*dec)[3].word(), Value::integer(-300).word());
}

TEST(Abi, NestedDynamicArraysRoundTrip) {
  auto t = types("uint16[][],string[]");
  std::vector<Value> v = {Value::list({Value::uint16_array({1, 2}), Value::uint16_array({}), Value::uint16_array({3})}),
                          Value::list({Value::string("a"), Value::string("bc")})};
  auto enc = encode(t, v);
  ASSERT_TRUE(enc.is_ok());
  // ethers 6.17 gives the same 0x...40, 0x...180 heads.
  EXPECT_EQ(to_hex(Bytes(enc->begin() + 32, enc->begin() + 64), false).substr(60), "0180");
  auto dec = decode(t, *enc);
  ASSERT_TRUE(dec.is_ok()) << dec.status();
  ASSERT_EQ((*dec)[0].items().size(), 3u);
  EXPECT_EQ((*dec)[0].items()[0].items()[1].as_u64().value(), 2u);
  EXPECT_TRUE((*dec)[0].items()[1].items().empty());
  EXPECT_EQ((*dec)[1].items()[1].as_string(), "bc");
}

TEST(Abi, DecodesSpecExampleBack) {
  Bytes data = from_hex(kF).value();
  auto dec = decode(types("uint256,uint32[],bytes10,bytes"), ByteSpan(data).subspan(4));
  ASSERT_TRUE(dec.is_ok()) << dec.status();
  EXPECT_EQ((*dec)[0].as_u64().value(), 0x123u);
  EXPECT_EQ((*dec)[1].items()[1].as_u64().value(), 0x789u);
  EXPECT_EQ(std::string((*dec)[2].data().begin(), (*dec)[2].data().end()), "1234567890");
  EXPECT_EQ((*dec)[3].as_string(), "Hello, world!");
}

TEST(Abi, EncodingChecksRanges) {
  EXPECT_EQ(encode(types("uint8"), {Value::uint(256)}).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(encode(types("int8"), {Value::integer(-129)}).status().code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(encode(types("int8"), {Value::integer(-128)}).is_ok());
  EXPECT_EQ(encode(types("uint16,bool"), {Value::uint(1)}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Abi, DecodingRefusesHostileData) {
  auto t = types("uint16[]");
  // Offset far beyond the data.
  Bytes bad_offset = from_hex(std::string(62, '0') + "ff").value();
  EXPECT_EQ(decode(t, bad_offset).status().code(), StatusCode::kDataLoss);
  // A length of 2^64 with no data behind it: refused before allocating.
  Bytes huge = from_hex(std::string(62, '0') + "20" + std::string(48, '0') + "ffffffffffffffff").value();
  EXPECT_EQ(decode(t, huge).status().code(), StatusCode::kDataLoss);
  // Dirty high bits in a uint16.
  Bytes dirty = from_hex(std::string(60, '0') + "1000").value();
  dirty[0] = 1;
  EXPECT_EQ(decode(types("uint16"), dirty).status().code(), StatusCode::kOutOfRange);
  // bool must be 0 or 1.
  EXPECT_EQ(decode(types("bool"), from_hex(std::string(63, '0') + "2").value()).status().code(),
            StatusCode::kOutOfRange);
  // Truncated.
  EXPECT_EQ(decode(types("uint256,uint256"), Bytes(40, 0)).status().code(), StatusCode::kDataLoss);
}

TEST(Abi, OffsetAliasingCannotAmplify) {
  // 2000 offsets all pointing at one array of 2000 words: 4M values from 128 KB.
  const std::size_t n = 2000;
  Bytes data;
  auto word = [&](std::uint64_t v) {
    U256 w(v);
    data.insert(data.end(), w.be().begin(), w.be().end());
  };
  word(32);                                          // offset of the outer array
  word(n);                                           // outer length
  for (std::size_t i = 0; i < n; ++i) word(32 * n);  // every element -> the same inner array
  word(n);                                           // inner length
  for (std::size_t i = 0; i < n; ++i) word(i);
  auto dec = decode(types("uint256[][]"), data);
  EXPECT_EQ(dec.status().code(), StatusCode::kDataLoss);
}

TEST(Abi, TypeParsing) {
  EXPECT_EQ(parse_type("uint").value().canonical(), "uint256");
  EXPECT_EQ(parse_type("(uint16,(bool,bytes32))[]").value().canonical(), "(uint16,(bool,bytes32))[]");
  EXPECT_TRUE(parse_type("(uint16,string)").value().is_dynamic());
  EXPECT_FALSE(parse_type("(uint16,bytes32)").value().is_dynamic());
  EXPECT_FALSE(parse_type("uint7").is_ok());
  EXPECT_FALSE(parse_type("bytes33").is_ok());
  EXPECT_FALSE(parse_type("float").is_ok());
  EXPECT_EQ(parse_type("uint8[3]").status().code(), StatusCode::kUnimplemented);
}

TEST(Abi, RevertReasons) {
  auto data = encode_call("Error(string)", {Value::string("not registered")}).value();
  EXPECT_EQ(describe_revert(data), "not registered");
  auto panic = encode_call("Panic(uint256)", {Value::uint(0x11)}).value();
  EXPECT_EQ(describe_revert(panic), "panic 0x11 (arithmetic overflow)");
  EXPECT_EQ(describe_revert({}), "reverted without a reason");
  EXPECT_EQ(describe_revert(Bytes{0xde, 0xad, 0xbe, 0xef, 1}), "custom error 0xdeadbeef with 1 bytes of data");
}

}  // namespace
}  // namespace crucible::chain::abi
