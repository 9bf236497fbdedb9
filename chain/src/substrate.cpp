#include "crucible/chain/substrate.h"

#include <sodium.h>
#include <xxhash.h>

#include <cstring>

namespace crucible::chain::substrate {
namespace {

void put_le(Bytes& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void put_vec16(Bytes& out, const std::vector<std::uint16_t>& xs) {
  Bytes len = compact(xs.size());
  out.insert(out.end(), len.begin(), len.end());
  for (auto x : xs) put_le(out, x, 2);
}

struct Reader {
  ByteSpan data;
  std::size_t pos = 0;
  Result<std::uint64_t> le(int bytes) {
    if (pos + static_cast<std::size_t>(bytes) > data.size()) return data_loss("scale: truncated at byte {}", pos);
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(data[pos + i]) << (8 * i);
    pos += static_cast<std::size_t>(bytes);
    return v;
  }
  Result<std::uint64_t> compact_len() {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t first, le(1));
    switch (first & 3) {
      case 0:
        return first >> 2;
      case 1: {
        pos -= 1;
        CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t v, le(2));
        return v >> 2;
      }
      case 2: {
        pos -= 1;
        CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t v, le(4));
        return v >> 2;
      }
      default:
        return data_loss("scale: big compact integers are not expected here");
    }
  }
  Result<ByteSpan> take(std::size_t n) {
    if (pos + n > data.size()) return data_loss("scale: {} bytes at byte {} run past the end", n, pos);
    ByteSpan s = data.subspan(pos, n);
    pos += n;
    return s;
  }
};

}  // namespace

Hash32 blake2b_256(ByteSpan data) {
  static const int ready = sodium_init();  // idempotent; picks the fastest implementation
  (void)ready;
  Hash32 out{};
  crypto_generichash(out.data(), out.size(), data.data(), data.size(), nullptr, 0);
  return out;
}

AccountId mirror_account(const Address& address) {
  Bytes in = {'e', 'v', 'm', ':'};
  in.insert(in.end(), address.bytes().begin(), address.bytes().end());
  return blake2b_256(in);
}

std::string ss58(const AccountId& account, std::uint16_t prefix) {
  Bytes data;
  if (prefix < 64) {
    data.push_back(static_cast<std::uint8_t>(prefix));
  } else {  // two-byte form for prefixes 64..16383
    data.push_back(static_cast<std::uint8_t>(((prefix & 0xFC) >> 2) | 0x40));
    data.push_back(static_cast<std::uint8_t>((prefix >> 8) | ((prefix & 0x03) << 6)));
  }
  data.insert(data.end(), account.begin(), account.end());
  Bytes pre = {'S', 'S', '5', '8', 'P', 'R', 'E'};
  pre.insert(pre.end(), data.begin(), data.end());
  std::array<std::uint8_t, 64> checksum{};
  crypto_generichash(checksum.data(), checksum.size(), pre.data(), pre.size(), nullptr, 0);
  data.push_back(checksum[0]);
  data.push_back(checksum[1]);
  // Base58 (Bitcoin alphabet).
  static constexpr char kAlphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  std::vector<std::uint8_t> digits;  // base-58 digits, little end first
  for (std::uint8_t byte : data) {
    int carry = byte;
    for (auto& d : digits) {
      carry += d * 256;
      d = static_cast<std::uint8_t>(carry % 58);
      carry /= 58;
    }
    while (carry > 0) {
      digits.push_back(static_cast<std::uint8_t>(carry % 58));
      carry /= 58;
    }
  }
  std::string out;
  for (std::uint8_t byte : data) {
    if (byte != 0) break;
    out += '1';
  }
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) out += kAlphabet[*it];
  return out;
}

Bytes twox64(ByteSpan data) {
  Bytes out;
  put_le(out, XXH64(data.data(), data.size(), 0), 8);
  return out;
}

Bytes twox128(ByteSpan data) {
  Bytes out;
  put_le(out, XXH64(data.data(), data.size(), 0), 8);
  put_le(out, XXH64(data.data(), data.size(), 1), 8);
  return out;
}

Bytes compact(std::uint64_t n) {
  Bytes out;
  if (n < (1u << 6)) {
    put_le(out, n << 2, 1);
  } else if (n < (1u << 14)) {
    put_le(out, (n << 2) | 1, 2);
  } else if (n < (1u << 30)) {
    put_le(out, (n << 2) | 2, 4);
  } else {
    Bytes be = be_minimal(n);
    out.push_back(static_cast<std::uint8_t>(((be.size() - 4) << 2) | 3));
    put_le(out, n, static_cast<int>(be.size()));
  }
  return out;
}

Hash32 weights_commit_hash(const AccountId& who, std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                           const std::vector<std::uint16_t>& values, const std::vector<std::uint16_t>& salt,
                           std::uint64_t version_key) {
  Bytes scale(who.begin(), who.end());
  put_le(scale, netuid, 2);
  put_vec16(scale, uids);
  put_vec16(scale, values);
  put_vec16(scale, salt);
  put_le(scale, version_key, 8);
  return blake2b_256(scale);
}

Bytes commitment_storage_key(std::uint16_t netuid, const AccountId& account) {
  Bytes key = twox128(as_bytes("Commitments"));
  Bytes item = twox128(as_bytes("CommitmentOf"));
  key.insert(key.end(), item.begin(), item.end());
  put_le(key, netuid, 2);
  Bytes h = twox64(account);
  key.insert(key.end(), h.begin(), h.end());
  key.insert(key.end(), account.begin(), account.end());
  return key;
}

Result<Bytes> set_commitment_call(std::uint16_t netuid, std::string_view text) {
  if (text.empty()) return invalid_argument("a commitment needs some text");
  if (text.size() > kMaxCommitmentText) {
    return invalid_argument(
        "a commitment of {} bytes does not fit the Commitments pallet: at most {} fields of {} bytes ({} bytes)",
        text.size(), kMaxCommitFields, kMaxRawField, kMaxCommitmentText);
  }
  const std::size_t fields = (text.size() + kMaxRawField - 1) / kMaxRawField;
  Bytes call;
  call.reserve(8 + fields + text.size());
  call.push_back(kCommitmentsPallet);
  call.push_back(kSetCommitmentCall);
  put_le(call, netuid, 2);
  for (std::uint8_t b : compact(fields)) call.push_back(b);
  for (std::size_t at = 0; at < text.size(); at += kMaxRawField) {
    const std::string_view part = text.substr(at, kMaxRawField);
    call.push_back(static_cast<std::uint8_t>(part.size() + 1));  // Data::Raw of part.size() bytes
    for (char c : part) call.push_back(static_cast<std::uint8_t>(c));
  }
  return call;
}

Result<std::string> decode_commitment(ByteSpan scale) {
  Reader r{scale};
  CRUCIBLE_RETURN_IF_ERROR(r.le(8).status());  // deposit
  CRUCIBLE_RETURN_IF_ERROR(r.le(4).status());  // block
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t fields, r.compact_len());
  if (fields > kMaxCommitFields) {
    return data_loss("commitment: {} fields, but the pallet holds at most {}", fields, kMaxCommitFields);
  }
  std::string text;
  for (std::uint64_t f = 0; f < fields; ++f) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t tag, r.le(1));
    if (tag == 0 || tag == 135) continue;  // Data::None, Data::ResetBondsFlag
    if (tag >= 1 && tag <= 129) {          // Data::Raw of tag - 1 bytes
      CRUCIBLE_ASSIGN_OR_RETURN(ByteSpan raw, r.take(tag - 1));
      text.append(raw.begin(), raw.end());
    } else if (tag >= 130 && tag <= 133) {  // BlakeTwo256, Sha256, Keccak256, ShaThree256: hashes, not text
      CRUCIBLE_RETURN_IF_ERROR(r.take(32).status());
    } else if (tag == 134) {  // TimelockEncrypted { encrypted: Vec<u8> (<= 1024), reveal_round: u64 }
      CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t len, r.compact_len());
      if (len > kMaxTimelockedField) return data_loss("commitment: a timelocked field of {} bytes", len);
      CRUCIBLE_RETURN_IF_ERROR(r.take(len).status());
      CRUCIBLE_RETURN_IF_ERROR(r.le(8).status());
    } else if (tag == 136) {  // BigRaw (<= 512 bytes)
      CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t len, r.compact_len());
      if (len > kMaxBigRawField) return data_loss("commitment: a BigRaw field of {} bytes", len);
      CRUCIBLE_ASSIGN_OR_RETURN(ByteSpan raw, r.take(len));
      text.append(raw.begin(), raw.end());
    } else {
      return data_loss("commitment: field type {} is not one the Commitments pallet defines", tag);
    }
  }
  if (r.pos != scale.size()) return data_loss("commitment: {} trailing bytes", scale.size() - r.pos);
  return text;
}

Bytes subtensor_storage_key(std::string_view item) {
  Bytes key = twox128(as_bytes("SubtensorModule"));
  Bytes h = twox128(as_bytes(item));
  key.insert(key.end(), h.begin(), h.end());
  return key;
}

Bytes subtensor_storage_key(std::string_view item, std::uint16_t netuid) {
  Bytes key = subtensor_storage_key(item);
  put_le(key, netuid, 2);
  return key;
}

Result<std::uint64_t> decode_storage_uint(ByteSpan scale, std::size_t width, std::uint64_t absent) {
  if (scale.empty()) return absent;
  if (scale.size() != width) return data_loss("storage value of {} bytes, expected {}", scale.size(), width);
  Reader r{scale};
  return r.le(static_cast<int>(width));
}

}  // namespace crucible::chain::substrate
