// Solidity ABI encoding and decoding (contract ABI spec, v2 coder): uint<M>,
// int<M>, bool, address, bytes<M>, bytes, string, dynamic arrays T[] and
// tuples. Decoding validates every offset and length against the data and
// refuses dirty padding in static values, since return data is untrusted.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "crucible/chain/keys.h"
#include "crucible/chain/uint256.h"
#include "crucible/common/bytes.h"

namespace crucible::chain::abi {

struct Type {
  enum class Kind : std::uint8_t { kUint, kInt, kBool, kAddress, kFixedBytes, kBytes, kString, kArray, kTuple };
  Kind kind = Kind::kUint;
  int size = 256;              // bits for uint/int, bytes for fixed bytes
  std::vector<Type> children;  // array: the element type; tuple: the members

  bool is_dynamic() const;
  std::string canonical() const;  // "uint256", "uint16[]", "(address,bool)"
};

// One type ("uint16[]", "(uint16,bytes32)", "uint" = uint256), or a comma list.
Result<Type> parse_type(std::string_view text);
Result<std::vector<Type>> parse_types(std::string_view comma_list);

class Value {
 public:
  static Value uint(std::uint64_t v) { return word_value(U256(v)); }
  static Value uint(const U256& v) { return word_value(v); }
  static Value integer(std::int64_t v);  // two's complement
  static Value boolean(bool v) { return word_value(U256(v ? 1 : 0)); }
  static Value address(const Address& a);
  static Value word(const std::array<std::uint8_t, 32>& w) { return word_value(U256::from_be(w)); }
  static Value fixed_bytes(Bytes b);  // bytes<M>: M bytes, left-aligned
  static Value bytes(Bytes b);
  static Value string(std::string_view s);
  static Value list(std::vector<Value> items);  // array or tuple
  static Value uint16_array(const std::vector<std::uint16_t>& v);

  const U256& word() const noexcept { return word_; }
  const Bytes& data() const noexcept { return data_; }
  const std::vector<Value>& items() const noexcept { return items_; }

  Result<std::uint64_t> as_u64() const;  // out_of_range when above 2^64-1
  Result<bool> as_bool() const;
  std::string as_string() const { return {data_.begin(), data_.end()}; }

 private:
  static Value word_value(const U256& w) {
    Value v;
    v.word_ = w;
    return v;
  }
  U256 word_;
  Bytes data_;
  std::vector<Value> items_;
};

Result<Bytes> encode(const std::vector<Type>& types, const std::vector<Value>& values);
Result<std::vector<Value>> decode(const std::vector<Type>& types, ByteSpan data);

// keccak256(signature)[0..4], e.g. selector("setWeights(uint16,uint16[],uint16[],uint64)") = 34af16d6.
std::array<std::uint8_t, 4> selector(std::string_view signature);

// selector(signature) || encode(argument types of signature, args).
Result<Bytes> encode_call(std::string_view signature, const std::vector<Value>& args);

// Revert data as a person reads it: Error(string) -> its reason, Panic(uint256)
// -> "panic 0x11 (arithmetic overflow)", custom errors -> their selector and length.
std::string describe_revert(ByteSpan data);

}  // namespace crucible::chain::abi
