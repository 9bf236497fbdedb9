// Byte-level BPE (GPT-2 style), stored as a Hugging Face tokenizer.json
// (model "BPE", pre-tokenizer and decoder "ByteLevel"), so a tokenizer
// trained here loads in Hugging Face tooling and a byte-level BPE made
// elsewhere (GPT-2, RoBERTa, SmolLM, Llama 3 style) loads here.
//
// Pre-tokenization follows GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with a hand-written scanner. Letter and number classes are exact for
// ASCII, Latin-1, Latin Extended, Greek, Cyrillic, Armenian, Hebrew, Arabic,
// Devanagari, Thai, kana, CJK ideographs and Hangul; letters of other
// scripts count as "other", which can split differently from Hugging Face
// there (every crucible node splits alike). Invalid UTF-8 bytes are "other".
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "crucible/common/status.h"

namespace crucible::text {

// The pieces GPT-2's pattern cuts `text` into (raw bytes, before the byte map).
std::vector<std::string_view> pre_tokenize(std::string_view text);

// GPT-2's bytes_to_unicode: the printable code point standing for each byte.
char32_t byte_to_char(std::uint8_t b);

struct TokenizerLimits {
  std::uint64_t max_file_bytes = 64ull << 20;
  std::size_t max_vocab = 1 << 20;
};

class Tokenizer {
 public:
  static Result<Tokenizer> from_json(std::string_view json, const TokenizerLimits& limits = {});
  static Result<Tokenizer> load(const std::filesystem::path& path, const TokenizerLimits& limits = {});
  std::string to_json() const;
  Status save(const std::filesystem::path& path) const;

  // Ids of `text`; special tokens in the text are not recognised (data is data).
  std::vector<std::uint32_t> encode(std::string_view text) const;
  // Bytes of the ids joined; special tokens as their text. Unknown ids are skipped.
  std::string decode(std::span<const std::uint32_t> ids) const;

  std::size_t vocab_size() const { return tokens_.size(); }
  std::uint32_t eos_id() const { return eos_id_; }
  const std::string& eos_token() const { return eos_token_; }
  std::size_t num_merges() const { return merges_.size(); }

 private:
  friend class BpeTrainer;
  struct Merge {
    std::uint32_t rank, id;
  };
  static std::uint64_t pair_key(std::uint32_t a, std::uint32_t b) { return (std::uint64_t{a} << 32) | b; }
  void encode_word(std::string_view word, std::vector<std::uint32_t>& out) const;
  void index();  // builds lookup tables from tokens_/merge_list_

  std::vector<std::string> tokens_;  // id -> raw bytes (special tokens: their text)
  std::vector<bool> special_;        // id -> is an added special token
  std::array<std::uint32_t, 256> byte_id_{};
  std::vector<std::pair<std::uint32_t, std::uint32_t>> merge_list_;  // in rank order
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::unordered_map<std::string, std::uint32_t> by_bytes_;  // for ignore_merges
  std::uint32_t eos_id_ = 0;
  std::string eos_token_;
  bool add_prefix_space_ = false;
  bool use_regex_ = true;
  bool ignore_merges_ = false;
};

struct TrainOptions {
  std::size_t vocab_size = 2048;  // 256 bytes + merges + the end-of-text token
  std::int64_t min_frequency = 2;
  std::string eos_token = "<|endoftext|>";
};

// Counts pre-tokenized words as text is added, then learns merges: each
// step merges the most frequent adjacent pair (ties: lower left id, then
// lower right id), so training is deterministic.
class BpeTrainer {
 public:
  void add_text(std::string_view text);
  std::size_t unique_words() const { return counts_.size(); }
  // progress(done, total) is called now and then during the merges.
  Result<Tokenizer> train(const TrainOptions& options,
                          const std::function<void(std::size_t, std::size_t)>& progress = {}) const;

 private:
  std::unordered_map<std::string, std::int64_t> counts_;
};

}  // namespace crucible::text
