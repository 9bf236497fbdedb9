#include "crucible/chain/transaction.h"

#include <algorithm>

#include "crucible/chain/rlp.h"

namespace crucible::chain {
namespace {

Bytes encode_to(const std::optional<Address>& to) {
  if (!to) return rlp::encode_bytes({});
  return rlp::encode_bytes(to->bytes());
}

Bytes strip_zeros(const std::array<std::uint8_t, 32>& word) {
  auto it = std::find_if(word.begin(), word.end(), [](std::uint8_t b) { return b != 0; });
  return Bytes(it, word.end());
}

std::vector<Bytes> legacy_fields(const LegacyTx& tx) {
  return {rlp::encode_uint(tx.nonce), rlp::encode_uint(tx.gas_price), rlp::encode_uint(tx.gas_limit),
          encode_to(tx.to),           rlp::encode_uint(tx.value),     rlp::encode_bytes(tx.data)};
}

std::vector<Bytes> eip1559_fields(const Eip1559Tx& tx) {
  return {rlp::encode_uint(tx.chain_id), rlp::encode_uint(tx.nonce),     rlp::encode_uint(tx.max_priority_fee),
          rlp::encode_uint(tx.max_fee),  rlp::encode_uint(tx.gas_limit), encode_to(tx.to),
          rlp::encode_uint(tx.value),    rlp::encode_bytes(tx.data),     rlp::encode_list({})};
}

Bytes typed(std::uint8_t type, const Bytes& payload) {
  Bytes out(payload.size() + 1);
  out[0] = type;
  std::copy(payload.begin(), payload.end(), out.begin() + 1);
  return out;
}

Result<Signature> signature_from(const rlp::Item& v_item, const rlp::Item& r_item, const rlp::Item& s_item,
                                 std::uint64_t v_base) {
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t v, rlp::to_uint64(v_item));
  if (r_item.is_list || s_item.is_list || r_item.bytes.size() > 32 || s_item.bytes.size() > 32) {
    return unauthenticated("transaction signature r/s malformed");
  }
  if (v < v_base || v > v_base + 1) return unauthenticated("transaction signature v {} is invalid", v);
  Signature sig;
  std::copy(r_item.bytes.begin(), r_item.bytes.end(), sig.r.end() - static_cast<std::ptrdiff_t>(r_item.bytes.size()));
  std::copy(s_item.bytes.begin(), s_item.bytes.end(), sig.s.end() - static_cast<std::ptrdiff_t>(s_item.bytes.size()));
  sig.recid = static_cast<std::uint8_t>(v - v_base);
  return sig;
}

}  // namespace

Hash32 signing_hash(const LegacyTx& tx) {
  auto fields = legacy_fields(tx);
  fields.push_back(rlp::encode_uint(tx.chain_id));
  fields.push_back(rlp::encode_uint(0));
  fields.push_back(rlp::encode_uint(0));
  return keccak256(rlp::encode_list(fields));
}

Hash32 signing_hash(const Eip1559Tx& tx) { return keccak256(typed(0x02, rlp::encode_list(eip1559_fields(tx)))); }

SignedTx sign(const LegacyTx& tx, const PrivateKey& key) {
  SignedTx out;
  out.signature = key.sign(signing_hash(tx));
  auto fields = legacy_fields(tx);
  fields.push_back(rlp::encode_uint(tx.chain_id * 2 + 35 + out.signature.recid));  // EIP-155 v
  fields.push_back(rlp::encode_bytes(strip_zeros(out.signature.r)));
  fields.push_back(rlp::encode_bytes(strip_zeros(out.signature.s)));
  out.raw = rlp::encode_list(fields);
  out.hash = keccak256(out.raw);
  return out;
}

SignedTx sign(const Eip1559Tx& tx, const PrivateKey& key) {
  SignedTx out;
  out.signature = key.sign(signing_hash(tx));
  auto fields = eip1559_fields(tx);
  fields.push_back(rlp::encode_uint(out.signature.recid));
  fields.push_back(rlp::encode_bytes(strip_zeros(out.signature.r)));
  fields.push_back(rlp::encode_bytes(strip_zeros(out.signature.s)));
  out.raw = typed(0x02, rlp::encode_list(fields));
  out.hash = keccak256(out.raw);
  return out;
}

Result<Address> recover_sender(ByteSpan raw) {
  if (raw.empty()) return invalid_argument("empty transaction");
  if (raw[0] == 0x02) {
    CRUCIBLE_ASSIGN_OR_RETURN(rlp::Item item, rlp::decode(raw.subspan(1)));
    if (!item.is_list || item.items.size() != 12) return invalid_argument("EIP-1559 transaction must have 12 fields");
    std::vector<Bytes> unsigned_fields;
    for (std::size_t i = 0; i < 9; ++i) {
      const auto& f = item.items[i];
      if (f.is_list) {
        if (i != 8 || !f.items.empty()) return unimplemented("access lists are not supported");
        unsigned_fields.push_back(rlp::encode_list({}));
      } else {
        unsigned_fields.push_back(rlp::encode_bytes(f.bytes));
      }
    }
    CRUCIBLE_ASSIGN_OR_RETURN(Signature sig, signature_from(item.items[9], item.items[10], item.items[11], 0));
    return recover_address(keccak256(typed(0x02, rlp::encode_list(unsigned_fields))), sig);
  }
  if (raw[0] < 0xc0) return unimplemented("transaction type 0x{:02x} is not supported", raw[0]);
  CRUCIBLE_ASSIGN_OR_RETURN(rlp::Item item, rlp::decode(raw));
  if (!item.is_list || item.items.size() != 9) return invalid_argument("legacy transaction must have 9 fields");
  for (const auto& f : item.items) {
    if (f.is_list) return invalid_argument("legacy transaction field is a list");
  }
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t v, rlp::to_uint64(item.items[6]));
  if (v < 35) return unimplemented("pre-EIP-155 transactions are not supported");
  std::uint64_t chain_id = (v - 35) / 2;
  std::vector<Bytes> fields;
  for (std::size_t i = 0; i < 6; ++i) fields.push_back(rlp::encode_bytes(item.items[i].bytes));
  fields.push_back(rlp::encode_uint(chain_id));
  fields.push_back(rlp::encode_uint(0));
  fields.push_back(rlp::encode_uint(0));
  CRUCIBLE_ASSIGN_OR_RETURN(Signature sig,
                            signature_from(item.items[6], item.items[7], item.items[8], chain_id * 2 + 35));
  return recover_address(keccak256(rlp::encode_list(fields)), sig);
}

}  // namespace crucible::chain
