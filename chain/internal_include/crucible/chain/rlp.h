// Recursive Length Prefix, Ethereum's serialisation for transactions.
// Decoding is strict (canonical lengths, no trailing bytes, bounded depth),
// since its input may come from anyone.
#pragma once

#include <cstdint>
#include <vector>

#include "crucible/chain/uint256.h"
#include "crucible/common/bytes.h"

namespace crucible::chain::rlp {

Bytes encode_bytes(ByteSpan bytes);
Bytes encode_uint(std::uint64_t v);  // big-endian without leading zeros; 0 -> 0x80
Bytes encode_uint(const U256& v);
// Wraps already-encoded items in a list header.
Bytes encode_list(const std::vector<Bytes>& encoded_items);

struct Item {
  bool is_list = false;
  Bytes bytes;              // when !is_list
  std::vector<Item> items;  // when is_list
};

inline constexpr int kMaxDepth = 32;

// One item that spans all of `data`.
Result<Item> decode(ByteSpan data);

// Reads a canonical unsigned integer (no leading zeros) of at most 8 bytes.
Result<std::uint64_t> to_uint64(const Item& item);

}  // namespace crucible::chain::rlp
