#include "crucible/chain/rlp.h"

namespace crucible::chain::rlp {
namespace {

Bytes header(std::size_t length, std::uint8_t short_base, std::uint8_t long_base) {
  if (length < 56) return {static_cast<std::uint8_t>(short_base + length)};
  Bytes len = be_minimal(length);
  Bytes out{static_cast<std::uint8_t>(long_base + len.size())};
  out.insert(out.end(), len.begin(), len.end());
  return out;
}

struct Reader {
  ByteSpan data;
  std::size_t pos = 0;
};

Result<std::size_t> read_length(Reader& r, std::size_t len_of_len) {
  if (len_of_len > 8 || r.pos + len_of_len > r.data.size()) return data_loss("rlp: truncated length");
  if (r.data[r.pos] == 0) return data_loss("rlp: length with a leading zero at byte {}", r.pos);
  std::uint64_t len = 0;
  for (std::size_t i = 0; i < len_of_len; ++i) len = (len << 8) | r.data[r.pos + i];
  r.pos += len_of_len;
  if (len < 56) return data_loss("rlp: long form used for a length of {}", len);
  return static_cast<std::size_t>(len);
}

Result<Item> read_item(Reader& r, int depth) {
  if (depth > kMaxDepth) return data_loss("rlp: nesting deeper than {}", kMaxDepth);
  if (r.pos >= r.data.size()) return data_loss("rlp: truncated at byte {}", r.pos);
  std::uint8_t prefix = r.data[r.pos++];
  Item item;
  std::size_t length = 0;
  if (prefix < 0x80) {
    item.bytes = {prefix};
    return item;
  }
  if (prefix <= 0xb7) {
    length = prefix - 0x80;
  } else if (prefix <= 0xbf) {
    CRUCIBLE_ASSIGN_OR_RETURN(length, read_length(r, prefix - 0xb7));
  } else if (prefix <= 0xf7) {
    item.is_list = true;
    length = prefix - 0xc0;
  } else {
    item.is_list = true;
    CRUCIBLE_ASSIGN_OR_RETURN(length, read_length(r, prefix - 0xf7));
  }
  if (length > r.data.size() - r.pos) {
    return data_loss("rlp: item of {} bytes at byte {} runs past the end ({} left)", length, r.pos,
                     r.data.size() - r.pos);
  }
  if (!item.is_list) {
    if (length == 1 && r.data[r.pos] < 0x80) return data_loss("rlp: single byte below 0x80 must not be prefixed");
    item.bytes.assign(r.data.begin() + static_cast<std::ptrdiff_t>(r.pos),
                      r.data.begin() + static_cast<std::ptrdiff_t>(r.pos + length));
    r.pos += length;
    return item;
  }
  Reader sub{r.data.subspan(r.pos, length), 0};
  while (sub.pos < sub.data.size()) {
    CRUCIBLE_ASSIGN_OR_RETURN(Item child, read_item(sub, depth + 1));
    item.items.push_back(std::move(child));
  }
  r.pos += length;
  return item;
}

}  // namespace

Bytes encode_bytes(ByteSpan bytes) {
  if (bytes.size() == 1 && bytes[0] < 0x80) return {bytes[0]};
  Bytes out = header(bytes.size(), 0x80, 0xb7);
  out.insert(out.end(), bytes.begin(), bytes.end());
  return out;
}

Bytes encode_uint(std::uint64_t v) { return encode_bytes(be_minimal(v)); }
Bytes encode_uint(const U256& v) { return encode_bytes(v.minimal_be()); }

Bytes encode_list(const std::vector<Bytes>& encoded_items) {
  std::size_t total = 0;
  for (const auto& i : encoded_items) total += i.size();
  Bytes out = header(total, 0xc0, 0xf7);
  for (const auto& i : encoded_items) out.insert(out.end(), i.begin(), i.end());
  return out;
}

Result<Item> decode(ByteSpan data) {
  Reader r{data, 0};
  CRUCIBLE_ASSIGN_OR_RETURN(Item item, read_item(r, 0));
  if (r.pos != data.size()) return data_loss("rlp: {} trailing bytes after the item", data.size() - r.pos);
  return item;
}

Result<std::uint64_t> to_uint64(const Item& item) {
  if (item.is_list) return invalid_argument("rlp: expected an integer, got a list");
  if (item.bytes.size() > 8) return out_of_range("rlp: integer of {} bytes exceeds 64 bits", item.bytes.size());
  if (!item.bytes.empty() && item.bytes[0] == 0) return data_loss("rlp: integer with a leading zero");
  std::uint64_t v = 0;
  for (auto b : item.bytes) v = (v << 8) | b;
  return v;
}

}  // namespace crucible::chain::rlp
