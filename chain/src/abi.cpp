#include "crucible/chain/abi.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace crucible::chain::abi {
namespace {

constexpr std::size_t kWord = 32;

std::size_t padded(std::size_t n) { return (n + kWord - 1) / kWord * kWord; }

Result<int> parse_size(std::string_view digits, std::string_view whole) {
  int v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return invalid_argument("abi: bad size in type '{}'", whole);
  }
  return v;
}

// Splits "a,(b,c),d" at top-level commas.
Result<std::vector<std::string_view>> split_top(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth < 0) return invalid_argument("abi: unbalanced ')' in '{}'", s);
    if (s[i] == ',' && depth == 0) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return invalid_argument("abi: unbalanced '(' in '{}'", s);
  if (!s.empty()) parts.push_back(s.substr(start));
  return parts;
}

Status check_static(const Type& t, const Value& v) {
  const auto& be = v.word().be();
  switch (t.kind) {
    case Type::Kind::kUint: {
      std::size_t free_bytes = kWord - static_cast<std::size_t>(t.size / 8);
      if (!std::all_of(be.begin(), be.begin() + static_cast<std::ptrdiff_t>(free_bytes),
                       [](auto b) { return b == 0; })) {
        return out_of_range("abi: value does not fit in {}", t.canonical());
      }
      return Status::ok();
    }
    case Type::Kind::kInt: {
      std::size_t free_bytes = kWord - static_cast<std::size_t>(t.size / 8);
      std::uint8_t fill = (be[free_bytes] & 0x80) ? 0xFF : 0x00;
      if (!std::all_of(be.begin(), be.begin() + static_cast<std::ptrdiff_t>(free_bytes),
                       [fill](auto b) { return b == fill; })) {
        return out_of_range("abi: value does not fit in {}", t.canonical());
      }
      return Status::ok();
    }
    case Type::Kind::kBool:
      if (v.word() != U256(0) && v.word() != U256(1)) return out_of_range("abi: bool word is not 0 or 1");
      return Status::ok();
    case Type::Kind::kAddress:
      if (!std::all_of(be.begin(), be.begin() + 12, [](auto b) { return b == 0; })) {
        return out_of_range("abi: address word has non-zero high bytes");
      }
      return Status::ok();
    case Type::Kind::kFixedBytes:
      if (!std::all_of(be.begin() + t.size, be.end(), [](auto b) { return b == 0; })) {
        return out_of_range("abi: {} has non-zero padding", t.canonical());
      }
      return Status::ok();
    default:
      return internal_error("abi: not a static scalar");
  }
}

std::size_t head_size(const Type& t) {
  if (t.is_dynamic()) return kWord;
  if (t.kind == Type::Kind::kTuple) {
    std::size_t n = 0;
    for (const auto& c : t.children) n += head_size(c);
    return n;
  }
  return kWord;
}

void append_word(Bytes& out, const U256& w) { out.insert(out.end(), w.be().begin(), w.be().end()); }

Result<Bytes> encode_one(const Type& t, const Value& v);

Result<Bytes> encode_sequence(const std::vector<Type>& types, const std::vector<Value>& values) {
  if (types.size() != values.size()) {
    return invalid_argument("abi: {} values for {} types", values.size(), types.size());
  }
  std::size_t heads = 0;
  for (const auto& t : types) heads += head_size(t);
  Bytes head, tail;
  for (std::size_t i = 0; i < types.size(); ++i) {
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes enc, encode_one(types[i], values[i]));
    if (types[i].is_dynamic()) {
      append_word(head, U256(heads + tail.size()));
      tail.insert(tail.end(), enc.begin(), enc.end());
    } else {
      head.insert(head.end(), enc.begin(), enc.end());
    }
  }
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

Result<Bytes> encode_one(const Type& t, const Value& v) {
  Bytes out;
  switch (t.kind) {
    case Type::Kind::kUint:
    case Type::Kind::kInt:
    case Type::Kind::kBool:
    case Type::Kind::kAddress:
    case Type::Kind::kFixedBytes:
      CRUCIBLE_RETURN_IF_ERROR(check_static(t, v));
      append_word(out, v.word());
      return out;
    case Type::Kind::kBytes:
    case Type::Kind::kString:
      append_word(out, U256(v.data().size()));
      out.insert(out.end(), v.data().begin(), v.data().end());
      out.resize(kWord + padded(v.data().size()), 0);
      return out;
    case Type::Kind::kArray: {
      std::vector<Type> types(v.items().size(), t.children[0]);
      append_word(out, U256(v.items().size()));
      CRUCIBLE_ASSIGN_OR_RETURN(Bytes body, encode_sequence(types, v.items()));
      out.insert(out.end(), body.begin(), body.end());
      return out;
    }
    case Type::Kind::kTuple:
      return encode_sequence(t.children, v.items());
  }
  return internal_error("abi: unknown kind");
}

Result<std::size_t> read_size(ByteSpan data, std::size_t at, std::string_view what) {
  if (at + kWord > data.size())
    return data_loss("abi: {} at byte {} runs past the end of {} bytes", what, at, data.size());
  CRUCIBLE_ASSIGN_OR_RETURN(U256 w, U256::from_be_bytes(data.subspan(at, kWord)));
  if (!w.fits_u64() || w.low_u64() > data.size()) {
    return data_loss("abi: {} at byte {} is larger than the data ({} bytes)", what, at, data.size());
  }
  return static_cast<std::size_t>(w.low_u64());
}

// Offsets may point many heads at one region; a budget of values (twice the
// words of the whole input) stops such data from amplifying into a huge result.
struct Budget {
  std::size_t left;
  Status take(std::size_t n) {
    if (n > left) return data_loss("abi: data decodes to more values than it has words (offset aliasing?)");
    left -= n;
    return Status::ok();
  }
};

Result<Value> decode_one(const Type& t, ByteSpan data, std::size_t at, int depth, Budget& budget);

// `data` starts at the sequence's own base (offsets are relative to it).
Result<std::vector<Value>> decode_sequence(const std::vector<Type>& types, ByteSpan data, int depth, Budget& budget) {
  if (depth > 16) return data_loss("abi: nesting deeper than 16");
  CRUCIBLE_RETURN_IF_ERROR(budget.take(types.size()));
  std::vector<Value> out;
  std::size_t pos = 0;
  for (const auto& t : types) {
    if (t.is_dynamic()) {
      CRUCIBLE_ASSIGN_OR_RETURN(std::size_t offset, read_size(data, pos, "offset"));
      CRUCIBLE_ASSIGN_OR_RETURN(Value v, decode_one(t, data, offset, depth, budget));
      out.push_back(std::move(v));
    } else {
      CRUCIBLE_ASSIGN_OR_RETURN(Value v, decode_one(t, data, pos, depth, budget));
      out.push_back(std::move(v));
    }
    pos += head_size(t);
  }
  return out;
}

Result<Value> decode_one(const Type& t, ByteSpan data, std::size_t at, int depth, Budget& budget) {
  switch (t.kind) {
    case Type::Kind::kUint:
    case Type::Kind::kInt:
    case Type::Kind::kBool:
    case Type::Kind::kAddress:
    case Type::Kind::kFixedBytes: {
      if (at + kWord > data.size()) return data_loss("abi: {} at byte {} runs past the end", t.canonical(), at);
      std::array<std::uint8_t, 32> w{};
      std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(at), kWord, w.begin());
      Value v = Value::word(w);
      CRUCIBLE_RETURN_IF_ERROR(check_static(t, v));
      if (t.kind == Type::Kind::kFixedBytes) return Value::fixed_bytes(Bytes(w.begin(), w.begin() + t.size));
      return v;
    }
    case Type::Kind::kBytes:
    case Type::Kind::kString: {
      CRUCIBLE_ASSIGN_OR_RETURN(std::size_t len, read_size(data, at, "length"));
      if (at + kWord + len > data.size()) return data_loss("abi: {} bytes at byte {} run past the end", len, at);
      CRUCIBLE_RETURN_IF_ERROR(budget.take(len / kWord));
      auto first = data.begin() + static_cast<std::ptrdiff_t>(at + kWord);
      return Value::bytes(Bytes(first, first + static_cast<std::ptrdiff_t>(len)));
    }
    case Type::Kind::kArray: {
      CRUCIBLE_ASSIGN_OR_RETURN(std::size_t count, read_size(data, at, "array length"));
      // Each element takes at least one word: a count the data cannot hold is refused before allocating.
      if (count > (data.size() - at - kWord) / kWord) {
        return data_loss("abi: array of {} elements at byte {} cannot fit in {} bytes", count, at, data.size());
      }
      std::vector<Type> types(count, t.children[0]);
      CRUCIBLE_ASSIGN_OR_RETURN(auto items, decode_sequence(types, data.subspan(at + kWord), depth + 1, budget));
      return Value::list(std::move(items));
    }
    case Type::Kind::kTuple: {
      if (at > data.size()) return data_loss("abi: tuple at byte {} past the end", at);
      CRUCIBLE_ASSIGN_OR_RETURN(auto items, decode_sequence(t.children, data.subspan(at), depth + 1, budget));
      return Value::list(std::move(items));
    }
  }
  return internal_error("abi: unknown kind");
}

}  // namespace

bool Type::is_dynamic() const {
  switch (kind) {
    case Kind::kBytes:
    case Kind::kString:
    case Kind::kArray:
      return true;
    case Kind::kTuple:
      return std::any_of(children.begin(), children.end(), [](const Type& c) { return c.is_dynamic(); });
    default:
      return false;
  }
}

std::string Type::canonical() const {
  switch (kind) {
    case Kind::kUint:
      return fmt::format("uint{}", size);
    case Kind::kInt:
      return fmt::format("int{}", size);
    case Kind::kBool:
      return "bool";
    case Kind::kAddress:
      return "address";
    case Kind::kFixedBytes:
      return fmt::format("bytes{}", size);
    case Kind::kBytes:
      return "bytes";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return children[0].canonical() + "[]";
    case Kind::kTuple: {
      std::string s = "(";
      for (std::size_t i = 0; i < children.size(); ++i) {
        if (i > 0) s += ',';
        s += children[i].canonical();
      }
      return s + ")";
    }
  }
  return "?";
}

Result<Type> parse_type(std::string_view text) {
  if (text.ends_with("]")) {
    if (!text.ends_with("[]")) return unimplemented("abi: fixed-size arrays are not supported ('{}')", text);
    CRUCIBLE_ASSIGN_OR_RETURN(Type elem, parse_type(text.substr(0, text.size() - 2)));
    Type t;
    t.kind = Type::Kind::kArray;
    t.children.push_back(std::move(elem));
    return t;
  }
  Type t;
  if (text.starts_with("(") && text.ends_with(")")) {
    t.kind = Type::Kind::kTuple;
    CRUCIBLE_ASSIGN_OR_RETURN(t.children, parse_types(text.substr(1, text.size() - 2)));
    return t;
  }
  if (text == "bool") {
    t.kind = Type::Kind::kBool;
    return t;
  }
  if (text == "address") {
    t.kind = Type::Kind::kAddress;
    return t;
  }
  if (text == "bytes") {
    t.kind = Type::Kind::kBytes;
    return t;
  }
  if (text == "string") {
    t.kind = Type::Kind::kString;
    return t;
  }
  if (text == "uint" || text == "int") {
    t.kind = text == "uint" ? Type::Kind::kUint : Type::Kind::kInt;
    return t;
  }
  if (text.starts_with("uint") || text.starts_with("int")) {
    bool is_uint = text.starts_with("uint");
    CRUCIBLE_ASSIGN_OR_RETURN(int bits, parse_size(text.substr(is_uint ? 4 : 3), text));
    if (bits < 8 || bits > 256 || bits % 8 != 0) return invalid_argument("abi: bad integer width in '{}'", text);
    t.kind = is_uint ? Type::Kind::kUint : Type::Kind::kInt;
    t.size = bits;
    return t;
  }
  if (text.starts_with("bytes")) {
    CRUCIBLE_ASSIGN_OR_RETURN(int n, parse_size(text.substr(5), text));
    if (n < 1 || n > 32) return invalid_argument("abi: bad size in '{}'", text);
    t.kind = Type::Kind::kFixedBytes;
    t.size = n;
    return t;
  }
  return invalid_argument("abi: unknown type '{}'", text);
}

Result<std::vector<Type>> parse_types(std::string_view comma_list) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto parts, split_top(comma_list));
  std::vector<Type> out;
  for (auto p : parts) {
    CRUCIBLE_ASSIGN_OR_RETURN(Type t, parse_type(p));
    out.push_back(std::move(t));
  }
  return out;
}

Value Value::integer(std::int64_t v) {
  std::array<std::uint8_t, 32> w{};
  w.fill(v < 0 ? 0xFF : 0x00);
  auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) w[31 - i] = static_cast<std::uint8_t>(u >> (8 * i));
  return word(w);
}

Value Value::address(const Address& a) {
  std::array<std::uint8_t, 32> w{};
  std::copy(a.bytes().begin(), a.bytes().end(), w.begin() + 12);
  return word(w);
}

Value Value::fixed_bytes(Bytes b) {
  std::array<std::uint8_t, 32> w{};
  std::copy_n(b.begin(), std::min<std::size_t>(b.size(), 32), w.begin());
  Value v = word(w);
  v.data_ = std::move(b);
  return v;
}

Value Value::bytes(Bytes b) {
  Value v;
  v.data_ = std::move(b);
  return v;
}

Value Value::string(std::string_view s) { return bytes(Bytes(s.begin(), s.end())); }

Value Value::list(std::vector<Value> items) {
  Value v;
  v.items_ = std::move(items);
  return v;
}

Value Value::uint16_array(const std::vector<std::uint16_t>& values) {
  std::vector<Value> items;
  items.reserve(values.size());
  for (auto x : values) items.push_back(uint(x));
  return list(std::move(items));
}

Result<std::uint64_t> Value::as_u64() const {
  if (!word_.fits_u64()) return out_of_range("abi: value exceeds 64 bits");
  return word_.low_u64();
}

Result<bool> Value::as_bool() const {
  if (word_ == U256(0)) return false;
  if (word_ == U256(1)) return true;
  return out_of_range("abi: bool is not 0 or 1");
}

Result<Bytes> encode(const std::vector<Type>& types, const std::vector<Value>& values) {
  return encode_sequence(types, values);
}

Result<std::vector<Value>> decode(const std::vector<Type>& types, ByteSpan data) {
  Budget budget{2 * (data.size() / kWord) + 16};
  return decode_sequence(types, data, 0, budget);
}

std::array<std::uint8_t, 4> selector(std::string_view signature) {
  Hash32 h = keccak256(as_bytes(signature));
  return {h[0], h[1], h[2], h[3]};
}

Result<Bytes> encode_call(std::string_view signature, const std::vector<Value>& args) {
  auto open = signature.find('(');
  if (open == std::string_view::npos || !signature.ends_with(")")) {
    return invalid_argument("abi: '{}' is not a function signature", signature);
  }
  CRUCIBLE_ASSIGN_OR_RETURN(auto types, parse_types(signature.substr(open + 1, signature.size() - open - 2)));
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes body, encode(types, args));
  auto sel = selector(signature);
  Bytes out(sel.begin(), sel.end());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::string describe_revert(ByteSpan data) {
  if (data.empty()) return "reverted without a reason";
  if (data.size() >= 4) {
    auto sel = data.first(4);
    static const auto kError = selector("Error(string)");
    static const auto kPanic = selector("Panic(uint256)");
    if (std::equal(sel.begin(), sel.end(), kError.begin())) {
      auto v = decode({Type{Type::Kind::kString, 0, {}}}, data.subspan(4));
      if (v.is_ok()) {
        std::string reason = (*v)[0].as_string();
        for (char& c : reason)
          if (static_cast<unsigned char>(c) < 0x20) c = '?';
        return reason;
      }
    }
    if (std::equal(sel.begin(), sel.end(), kPanic.begin())) {
      auto v = decode({Type{}}, data.subspan(4));
      if (v.is_ok() && (*v)[0].as_u64().is_ok()) {
        std::uint64_t code = *(*v)[0].as_u64();
        std::string_view what = code == 0x01   ? "assertion failed"
                                : code == 0x11 ? "arithmetic overflow"
                                : code == 0x12 ? "division by zero"
                                : code == 0x32 ? "array index out of bounds"
                                               : "panic";
        return fmt::format("panic 0x{:02x} ({})", code, what);
      }
    }
    return fmt::format("custom error {} with {} bytes of data", to_hex(sel), data.size() - 4);
  }
  return fmt::format("revert data {}", to_hex(data));
}

}  // namespace crucible::chain::abi
