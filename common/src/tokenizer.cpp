#include "crucible/common/tokenizer.h"

#include <algorithm>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "crucible/common/bytes.h"
#include "crucible/common/file_io.h"
#include "crucible/common/json_fields.h"

namespace crucible::text {
namespace {

using nlohmann::json;

// ---- UTF-8 and character classes ------------------------------------------

struct CodePoint {
  char32_t cp;
  std::size_t len;  // bytes; invalid UTF-8 is one byte with cp = 0xFFFFFFFF
};

CodePoint next_cp(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return {c, 1};
  auto cont = [&](std::size_t k) { return k < s.size() && (b(k) & 0xC0) == 0x80; };
  if ((c & 0xE0) == 0xC0 && c >= 0xC2 && cont(i + 1)) return {char32_t((c & 0x1F) << 6 | (b(i + 1) & 0x3F)), 2};
  if ((c & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
    char32_t cp = (c & 0x0F) << 12 | (b(i + 1) & 0x3F) << 6 | (b(i + 2) & 0x3F);
    if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) return {cp, 3};
  }
  if ((c & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
    char32_t cp = (c & 0x07) << 18 | (b(i + 1) & 0x3F) << 12 | (b(i + 2) & 0x3F) << 6 | (b(i + 3) & 0x3F);
    if (cp >= 0x10000 && cp <= 0x10FFFF) return {cp, 4};
  }
  return {0xFFFFFFFF, 1};
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

enum class Class : std::uint8_t { kSpace, kLetter, kNumber, kOther };

struct Range {
  char32_t lo, hi;
};
constexpr Range kSpaces[] = {{0x09, 0x0D},     {0x20, 0x20},     {0x85, 0x85},     {0xA0, 0xA0},     {0x1680, 0x1680},
                             {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}};
constexpr Range kNumbers[] = {{'0', '9'},       {0xB2, 0xB3},     {0xB9, 0xB9},     {0xBC, 0xBE},
                              {0x660, 0x669},   {0x6F0, 0x6F9},   {0x966, 0x96F},   {0xE50, 0xE59},
                              {0x2070, 0x2070}, {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2150, 0x2182},
                              {0x2185, 0x2189}, {0x2460, 0x249B}, {0x3007, 0x3007}, {0xFF10, 0xFF19}};
constexpr Range kLetters[] = {{'A', 'Z'},       {'a', 'z'},        {0xAA, 0xAA},     {0xB5, 0xB5},     {0xBA, 0xBA},
                              {0xC0, 0xD6},     {0xD8, 0xF6},      {0xF8, 0x2C1},    {0x2C6, 0x2D1},   {0x2E0, 0x2E4},
                              {0x370, 0x374},   {0x376, 0x377},    {0x37A, 0x37D},   {0x37F, 0x37F},   {0x386, 0x386},
                              {0x388, 0x3F5},   {0x3F7, 0x481},    {0x48A, 0x52F},   {0x531, 0x556},   {0x560, 0x588},
                              {0x5D0, 0x5EA},   {0x620, 0x64A},    {0x671, 0x6D3},   {0x904, 0x939},   {0xE01, 0xE30},
                              {0x10A0, 0x10FF}, {0x1100, 0x11FF},  {0x1E00, 0x1FBC}, {0x3041, 0x3096}, {0x30A1, 0x30FA},
                              {0x3400, 0x4DBF}, {0x4E00, 0x9FFF},  {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFF21, 0xFF3A},
                              {0xFF41, 0xFF5A}, {0x20000, 0x2FFFF}};

template <std::size_t N>
bool in(const Range (&ranges)[N], char32_t cp) {
  for (const Range& r : ranges)
    if (cp >= r.lo && cp <= r.hi) return true;
  return false;
}

Class class_of(char32_t cp) {
  if (cp == 0xFFFFFFFF) return Class::kOther;
  if (in(kSpaces, cp)) return Class::kSpace;
  if (in(kLetters, cp) && cp != 0xD7 && cp != 0xF7) return Class::kLetter;
  if (in(kNumbers, cp)) return Class::kNumber;
  return Class::kOther;
}

// ---- the byte map -----------------------------------------------------------

struct ByteMap {
  std::array<char32_t, 256> to_char{};
  std::map<char32_t, std::uint8_t> to_byte;
  ByteMap() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[static_cast<std::size_t>(b)] = printable ? char32_t(b) : char32_t(256 + n++);
      to_byte[to_char[static_cast<std::size_t>(b)]] = static_cast<std::uint8_t>(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

std::string to_visible(std::string_view raw) {
  std::string out;
  for (unsigned char c : raw) append_utf8(out, byte_map().to_char[c]);
  return out;
}

// The raw bytes of a byte-level token string, or nullopt if a character is not in the map.
std::optional<std::string> from_visible(std::string_view visible) {
  std::string out;
  for (std::size_t i = 0; i < visible.size();) {
    CodePoint cp = next_cp(visible, i);
    auto it = byte_map().to_byte.find(cp.cp);
    if (it == byte_map().to_byte.end()) return std::nullopt;
    out.push_back(static_cast<char>(it->second));
    i += cp.len;
  }
  return out;
}

// What this reader follows of tokenizer.json's model and pre_tokenizer: a
// byte-level BPE without normalizer or byte fallback. Each field is checked
// for its type (nlohmann's value() threw on a mistyped one).
struct BpeConfig {
  bool add_prefix_space = false;
  bool use_regex = true;
  bool ignore_merges = false;
};

Result<BpeConfig> bpe_config(const json& j) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
    return invalid_argument("not a tokenizer.json: no model object");
  }
  BpeConfig c;
  JsonFields model(j["model"], "tokenizer.json: model");
  const std::string type = model.get_or<std::string>("type", "?");
  const bool byte_fallback = model.get_or<bool>("byte_fallback", false);
  c.ignore_merges = model.get_or<bool>("ignore_merges", false);
  if (!model.ok()) return invalid_argument("{}", model.status().message());
  if (type != "BPE") return unimplemented("tokenizer model type {} is not BPE", type);
  if (byte_fallback) return unimplemented("byte_fallback BPE (SentencePiece style) is not supported");
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    const json& n = j["normalizer"];
    const bool named = n.is_object() && n.contains("type") && n["type"].is_string();
    return unimplemented("tokenizer normalizers are not supported (found {})",
                         named ? n["type"].get<std::string>() : std::string("?"));
  }
  if (!j.contains("pre_tokenizer") || !j["pre_tokenizer"].is_object()) {
    return unimplemented("only a ByteLevel pre-tokenizer is supported (found none)");
  }
  JsonFields pre(j["pre_tokenizer"], "tokenizer.json: pre_tokenizer");
  const std::string pre_type = pre.get_or<std::string>("type", "?");
  c.add_prefix_space = pre.get_or<bool>("add_prefix_space", false);
  c.use_regex = pre.get_or<bool>("use_regex", true);
  if (!pre.ok()) return invalid_argument("{}", pre.status().message());
  if (pre_type != "ByteLevel") return unimplemented("only a ByteLevel pre-tokenizer is supported (found {})", pre_type);
  return c;
}

// model.merges, in rank order: each "left right" (or [left, right]) a pair
// of tokens in the vocabulary whose concatenation is one too.
Result<std::vector<std::pair<std::uint32_t, std::uint32_t>>> parse_merges(
    const json& merges, std::unordered_map<std::string, std::uint32_t>& id_of) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (const json& m : merges) {
    std::string left, right;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      auto sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        return invalid_argument("tokenizer.json: merge '{}' is not two tokens", s);
      }
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      return invalid_argument("tokenizer.json: malformed merge {}", m.dump());
    }
    auto a = from_visible(left), b = from_visible(right);
    if (!a || !b || !id_of.contains(*a) || !id_of.contains(*b) || !id_of.contains(*a + *b)) {
      return invalid_argument("tokenizer.json: merge '{} {}' uses tokens not in the vocabulary", left, right);
    }
    out.emplace_back(id_of[*a], id_of[*b]);
  }
  return out;
}

}  // namespace

char32_t byte_to_char(std::uint8_t b) { return byte_map().to_char[b]; }

std::vector<std::string_view> pre_tokenize(std::string_view s) {
  std::vector<std::string_view> out;
  const std::size_t n = s.size();
  auto cls = [&](std::size_t i) { return class_of(next_cp(s, i).cp); };
  // End of the run of code points of class c starting at i.
  auto run = [&](std::size_t i, Class c) {
    while (i < n && cls(i) == c) i += next_cp(s, i).len;
    return i;
  };
  std::size_t i = 0;
  while (i < n) {
    std::size_t start = i;
    if (s[i] == '\'') {
      std::string_view rest = s.substr(i + 1);
      std::size_t len = 0;
      for (std::string_view c : {"re", "ve", "ll", "s", "t", "m", "d"}) {
        if (rest.starts_with(c)) {
          len = c.size();
          break;
        }
      }
      if (len > 0) {
        out.push_back(s.substr(i, len + 1));
        i += len + 1;
        continue;
      }
    }
    std::size_t j = i;
    if (s[i] == ' ' && i + 1 < n && cls(i + 1) != Class::kSpace) j = i + 1;  // the optional leading space
    Class c = cls(j);
    if (c != Class::kSpace) {
      i = run(j, c);
      out.push_back(s.substr(start, i - start));
      continue;
    }
    // Whitespace: \s+(?!\S) leaves the last space to the next word, \s+ takes a lone one.
    std::size_t end = run(i, Class::kSpace);
    std::size_t last = end;
    if (end < n) {
      // step back one code point (whitespace here is single-byte except a few)
      std::size_t k = i, prev = i;
      while (k < end) {
        prev = k;
        k += next_cp(s, k).len;
      }
      last = prev > i ? prev : end;
    }
    out.push_back(s.substr(i, last - i));
    i = last;
  }
  return out;
}

// ---- Tokenizer ---------------------------------------------------------------

void Tokenizer::index() {
  merges_.clear();
  by_bytes_.clear();
  for (std::uint32_t id = 0; id < tokens_.size(); ++id) {
    if (!special_[id]) by_bytes_.emplace(tokens_[id], id);
  }
  for (int b = 0; b < 256; ++b)
    byte_id_[static_cast<std::size_t>(b)] = by_bytes_.at(std::string(1, static_cast<char>(b)));
  for (std::uint32_t r = 0; r < merge_list_.size(); ++r) {
    auto [a, b] = merge_list_[r];
    merges_.emplace(pair_key(a, b), Merge{r, by_bytes_.at(tokens_[a] + tokens_[b])});
  }
}

void Tokenizer::encode_word(std::string_view word, std::vector<std::uint32_t>& out) const {
  if (ignore_merges_) {
    if (auto it = by_bytes_.find(std::string(word)); it != by_bytes_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<std::uint32_t> syms;
  syms.reserve(word.size());
  for (unsigned char c : word) syms.push_back(byte_id_[c]);
  while (syms.size() > 1) {
    std::uint32_t best_rank = UINT32_MAX, best_id = 0;
    for (std::size_t k = 0; k + 1 < syms.size(); ++k) {
      auto it = merges_.find(pair_key(syms[k], syms[k + 1]));
      if (it != merges_.end() && it->second.rank < best_rank) {
        best_rank = it->second.rank;
        best_id = it->second.id;
      }
    }
    if (best_rank == UINT32_MAX) break;
    auto [a, b] = merge_list_[best_rank];
    std::size_t w = 0;
    for (std::size_t k = 0; k < syms.size(); ++k) {
      if (k + 1 < syms.size() && syms[k] == a && syms[k + 1] == b) {
        syms[w++] = best_id;
        ++k;
      } else {
        syms[w++] = syms[k];
      }
    }
    syms.resize(w);
  }
  out.insert(out.end(), syms.begin(), syms.end());
}

std::vector<std::uint32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<std::uint32_t> out;
  std::string prefixed;
  if (add_prefix_space_ && !text.empty() && class_of(next_cp(text, 0).cp) != Class::kSpace) {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  if (!use_regex_) {
    encode_word(text, out);
    return out;
  }
  for (std::string_view word : pre_tokenize(text)) encode_word(word, out);
  return out;
}

std::string Tokenizer::decode(std::span<const std::uint32_t> ids) const {
  std::string out;
  for (std::uint32_t id : ids)
    if (id < tokens_.size()) out += tokens_[id];
  return out;
}

std::string Tokenizer::to_json() const {
  json vocab = json::object();
  json added = json::array();
  for (std::uint32_t id = 0; id < tokens_.size(); ++id) {
    if (special_[id]) {
      added.push_back({{"id", id},
                       {"content", tokens_[id]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
      vocab[tokens_[id]] = id;
    } else {
      vocab[to_visible(tokens_[id])] = id;
    }
  }
  json merges = json::array();
  for (auto [a, b] : merge_list_) merges.push_back(to_visible(tokens_[a]) + " " + to_visible(tokens_[b]));
  json byte_level = {{"type", "ByteLevel"},
                     {"add_prefix_space", add_prefix_space_},
                     {"trim_offsets", true},
                     {"use_regex", use_regex_}};
  json j = {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", added},
            {"normalizer", nullptr},
            {"pre_tokenizer", byte_level},
            {"post_processor", nullptr},
            {"decoder", byte_level},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"fuse_unk", false},
              {"byte_fallback", false},
              {"ignore_merges", ignore_merges_},
              {"vocab", vocab},
              {"merges", merges}}}};
  return j.dump(1);
}

Status Tokenizer::save(const std::filesystem::path& path) const {
  std::string text = to_json();
  return files::write_file_atomic(path, as_bytes(text));
}

Result<Tokenizer> Tokenizer::load(const std::filesystem::path& path, const TokenizerLimits& limits) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, files::read_file(path, limits.max_file_bytes));
  auto t = from_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), limits);
  if (!t.is_ok()) return t.status().with_context(path.string());
  return t;
}

Result<Tokenizer> Tokenizer::from_json(std::string_view text, const TokenizerLimits& limits) {
  if (text.size() > limits.max_file_bytes)
    return resource_exhausted("tokenizer.json larger than {} bytes", limits.max_file_bytes);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  CRUCIBLE_ASSIGN_OR_RETURN(const BpeConfig config, bpe_config(j));
  const json& model = j["model"];
  Tokenizer t;
  t.add_prefix_space_ = config.add_prefix_space;
  t.use_regex_ = config.use_regex;
  t.ignore_merges_ = config.ignore_merges;

  const json& vocab = model.value("vocab", json());
  if (!vocab.is_object() || vocab.empty()) return invalid_argument("tokenizer.json: model.vocab is missing or empty");
  if (vocab.size() > limits.max_vocab) return resource_exhausted("tokenizer vocabulary of {} entries", vocab.size());
  std::map<std::string, std::uint32_t> special_ids;
  for (const json& a : j.value("added_tokens", json::array())) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() ||
        a["id"].get<std::uint64_t>() > 0xFFFFFFFFu || !a.contains("content") || !a["content"].is_string()) {
      return invalid_argument("tokenizer.json: malformed added_tokens entry");
    }
    special_ids[a["content"].get<std::string>()] = a["id"].get<std::uint32_t>();
  }
  std::size_t size = 0;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_unsigned())
      return invalid_argument("tokenizer.json: id of '{}' is not a number", it.key());
    size = std::max<std::size_t>(size, it.value().get<std::uint64_t>() + 1);
  }
  for (auto& [content, id] : special_ids) size = std::max<std::size_t>(size, std::size_t{id} + 1);
  if (size > limits.max_vocab) return resource_exhausted("tokenizer ids reach {}", size);
  t.tokens_.assign(size, std::string());
  t.special_.assign(size, false);
  std::vector<bool> seen(size, false);
  for (auto& [content, id] : special_ids) {
    t.tokens_[id] = content;
    t.special_[id] = true;
    seen[id] = true;
  }
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    auto id = it.value().get<std::uint32_t>();
    if (t.special_[id]) continue;
    auto raw = from_visible(it.key());
    if (!raw) return invalid_argument("tokenizer.json: token '{}' is not byte-level", it.key());
    if (seen[id]) return invalid_argument("tokenizer.json: id {} is used twice", id);
    t.tokens_[id] = std::move(*raw);
    seen[id] = true;
  }
  std::set<std::string> distinct;
  for (std::uint32_t id = 0; id < size; ++id) {
    if (!t.special_[id] && seen[id] && !distinct.insert(t.tokens_[id]).second) {
      return invalid_argument("tokenizer.json: two ids for the token '{}'", to_visible(t.tokens_[id]));
    }
  }
  for (int b = 0; b < 256; ++b) {
    if (!distinct.contains(std::string(1, static_cast<char>(b)))) {
      return invalid_argument("tokenizer.json: the vocabulary lacks byte {:#04x}", b);
    }
  }
  std::unordered_map<std::string, std::uint32_t> id_of;
  for (std::uint32_t id = 0; id < size; ++id)
    if (!t.special_[id] && seen[id]) id_of.emplace(t.tokens_[id], id);
  CRUCIBLE_ASSIGN_OR_RETURN(t.merge_list_, parse_merges(model.value("merges", json::array()), id_of));
  for (const char* eos : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"}) {
    if (auto it = special_ids.find(eos); it != special_ids.end()) {
      t.eos_id_ = it->second;
      t.eos_token_ = eos;
      break;
    }
  }
  if (t.eos_token_.empty()) return invalid_argument("tokenizer.json: no end-of-text token among added_tokens");
  t.index();
  return t;
}

// ---- training ---------------------------------------------------------------

void BpeTrainer::add_text(std::string_view text) {
  for (std::string_view w : pre_tokenize(text)) ++counts_[std::string(w)];
}

namespace {

// The trainer's working set: every distinct word as symbols (with its
// count), each adjacent pair's count and the words that hold it, and a
// max-heap of pairs by count whose stale entries are skipped.
class PairCounts {
 public:
  using Key = std::uint64_t;  // Tokenizer::pair_key(a, b)
  static Key key_of(std::uint32_t a, std::uint32_t b) { return (Key{a} << 32) | b; }

  // Words in a fixed order, so that training does not depend on hash order.
  explicit PairCounts(const std::unordered_map<std::string, std::int64_t>& counts) {
    std::vector<std::pair<std::string, std::int64_t>> sorted(counts.begin(), counts.end());
    std::sort(sorted.begin(), sorted.end());
    words_.reserve(sorted.size());
    for (auto& [w, c] : sorted) {
      Word word{{}, c};
      for (unsigned char ch : w) word.syms.push_back(ch);
      words_.push_back(std::move(word));
    }
    std::set<Key> touched;
    for (std::uint32_t wi = 0; wi < words_.size(); ++wi) count_pairs(words_[wi].syms, words_[wi].count, wi, touched);
    for (auto& [key, c] : pair_count_) heap_.push({c, key});
  }

  // The most frequent pair (ties: the lower key) and its count; none when
  // no pair is left.
  std::optional<std::pair<std::int64_t, Key>> best() {
    while (!heap_.empty()) {
      auto [count, key] = heap_.top();
      heap_.pop();
      auto it = pair_count_.find(key);
      if (it != pair_count_.end() && it->second == count) return std::pair(count, key);
    }
    return std::nullopt;
  }

  // Every occurrence of the pair `key` becomes the symbol `id`; the counts
  // of the pairs that changed go back on the heap.
  void merge(Key key, std::uint32_t id) {
    const auto a = static_cast<std::uint32_t>(key >> 32), b = static_cast<std::uint32_t>(key & 0xFFFFFFFF);
    std::set<Key> touched;
    std::set<std::uint32_t> affected = std::move(where_[key]);
    where_.erase(key);
    for (std::uint32_t wi : affected) {
      auto& s = words_[wi].syms;
      std::vector<std::uint32_t> merged;
      merged.reserve(s.size());
      for (std::size_t k = 0; k < s.size(); ++k) {
        const bool hit = k + 1 < s.size() && s[k] == a && s[k + 1] == b;
        merged.push_back(hit ? id : s[k]);
        if (hit) ++k;
      }
      if (merged.size() == s.size()) continue;  // no longer holds the pair
      count_pairs(s, -words_[wi].count, wi, touched);
      count_pairs(merged, words_[wi].count, wi, touched);
      s = std::move(merged);
    }
    pair_count_.erase(key);
    for (Key k : touched) {
      auto c = pair_count_.find(k);
      if (c == pair_count_.end()) continue;
      if (c->second <= 0) {
        pair_count_.erase(c);
      } else {
        heap_.push({c->second, k});
      }
    }
  }

 private:
  struct Word {
    std::vector<std::uint32_t> syms;
    std::int64_t count;
  };
  using Entry = std::pair<std::int64_t, Key>;
  struct Worse {  // max-heap on the count, then the lower key
    bool operator()(const Entry& x, const Entry& y) const {
      return x.first != y.first ? x.first < y.first : x.second > y.second;
    }
  };

  void count_pairs(const std::vector<std::uint32_t>& s, std::int64_t delta, std::uint32_t wi, std::set<Key>& touched) {
    for (std::size_t k = 0; k + 1 < s.size(); ++k) {
      const Key key = key_of(s[k], s[k + 1]);
      pair_count_[key] += delta;
      if (delta > 0) where_[key].insert(wi);
      touched.insert(key);
    }
  }

  std::vector<Word> words_;
  std::unordered_map<Key, std::int64_t> pair_count_;
  std::unordered_map<Key, std::set<std::uint32_t>> where_;
  std::priority_queue<Entry, std::vector<Entry>, Worse> heap_;
};

}  // namespace

Result<Tokenizer> BpeTrainer::train(const TrainOptions& o,
                                    const std::function<void(std::size_t, std::size_t)>& progress) const {
  if (o.vocab_size < 257 + 1) return invalid_argument("tokenizer vocab_size {} is below 258", o.vocab_size);
  if (o.eos_token.empty()) return invalid_argument("tokenizer: empty end-of-text token");
  Tokenizer t;
  for (int b = 0; b < 256; ++b) t.tokens_.push_back(std::string(1, static_cast<char>(b)));
  PairCounts pairs(counts_);
  const std::size_t target = o.vocab_size - 1;  // the end-of-text token comes last
  const std::size_t total = target - 256;
  while (t.tokens_.size() < target) {
    auto next = pairs.best();
    if (!next || next->first < o.min_frequency) break;
    const PairCounts::Key key = next->second;
    auto a = static_cast<std::uint32_t>(key >> 32), b = static_cast<std::uint32_t>(key & 0xFFFFFFFF);
    t.tokens_.push_back(t.tokens_[a] + t.tokens_[b]);
    t.merge_list_.emplace_back(a, b);
    pairs.merge(key, static_cast<std::uint32_t>(t.tokens_.size() - 1));
    if (progress && (t.merge_list_.size() % 64 == 0)) progress(t.merge_list_.size(), total);
  }
  t.tokens_.push_back(o.eos_token);
  t.special_.assign(t.tokens_.size(), false);
  t.special_.back() = true;
  t.eos_id_ = static_cast<std::uint32_t>(t.tokens_.size() - 1);
  t.eos_token_ = o.eos_token;
  t.index();
  if (progress) progress(total, total);
  return t;
}

}  // namespace crucible::text
