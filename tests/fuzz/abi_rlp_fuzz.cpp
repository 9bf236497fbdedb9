// libFuzzer target for what a JSON-RPC node returns (chain/): the ABI
// decoder (eth_call results, revert data) and the RLP decoder. The first
// byte picks the decoder and, for ABI, a type list (the chain's own and a
// few harder shapes); the rest is the input. Each must refuse bad input
// with a Status, never throw or crash, and what it accepts must encode back
// to bytes that decode to the same again.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "crucible/chain/abi.h"
#include "crucible/chain/rlp.h"

using namespace crucible;
using namespace crucible::chain;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

constexpr std::array<std::string_view, 10> kTypes = {
    "uint256",
    "bool",
    "bytes",
    "string",
    "uint16[]",
    "address,uint256,bool",
    "(uint16,bytes32)",
    "bytes32[],uint64",
    "(uint16[],uint16[])[]",
    "uint64,string,(bytes,int8[])",
};

void abi_case(std::uint8_t pick, ByteSpan data) {
  auto types = abi::parse_types(kTypes[pick % kTypes.size()]);
  check(types.is_ok());
  auto values = abi::decode(*types, data);
  if (!values.is_ok()) return;
  auto bytes = abi::encode(*types, *values);
  check(bytes.is_ok());
  auto again = abi::decode(*types, *bytes);
  check(again.is_ok());
  auto bytes2 = abi::encode(*types, *again);
  check(bytes2.is_ok() && *bytes2 == *bytes);
}

Bytes encode_item(const rlp::Item& item) {
  if (!item.is_list) return rlp::encode_bytes(item.bytes);
  std::vector<Bytes> parts;
  for (const auto& i : item.items) parts.push_back(encode_item(i));
  return rlp::encode_list(parts);
}

bool same(const rlp::Item& a, const rlp::Item& b) {
  if (a.is_list != b.is_list || a.bytes != b.bytes || a.items.size() != b.items.size()) return false;
  for (std::size_t i = 0; i < a.items.size(); ++i)
    if (!same(a.items[i], b.items[i])) return false;
  return true;
}

void rlp_case(ByteSpan data) {
  auto item = rlp::decode(data);
  if (!item.is_ok()) return;
  auto again = rlp::decode(encode_item(*item));
  check(again.is_ok() && same(*again, *item));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const ByteSpan rest(data + 1, size - 1);
  if (data[0] == 0xff) {
    rlp_case(rest);
  } else {
    abi_case(data[0], rest);
  }
  return 0;
}
