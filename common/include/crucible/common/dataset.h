// Token shards (protocol.md §2): each split is a list of shard files of
// little-endian uint16 or uint32 tokens, an end-of-text token after each
// document, described by dataset.json (dtype, vocabulary size, the
// tokenizer's SHA-256, per shard its token count and SHA-256). Sample i of
// a split is tokens [L*i, L*(i+1)) across shard boundaries, L = seq_len.
// A sample's id is XXH64 (seed 0) of its tokens as stored; the sample
// digest a miner puts in its packet is SHA-256 of the sorted ids as
// uint64 little-endian.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crucible/common/model_config.h"
#include "crucible/common/status.h"

namespace crucible::data {

enum class TokenType : std::uint8_t { kU16, kU32 };
inline std::size_t token_bytes(TokenType t) { return t == TokenType::kU16 ? 2 : 4; }

struct ShardInfo {
  std::string file;  // relative to the dataset folder
  std::uint64_t tokens = 0;
  std::string sha256;  // hex
};

struct SplitInfo {
  std::vector<ShardInfo> shards;
  std::uint64_t tokens = 0;
  std::uint64_t documents = 0;
};

struct DatasetInfo {
  TokenType dtype = TokenType::kU16;
  std::uint32_t vocab_size = 0;
  std::uint32_t eos_id = 0;
  std::string tokenizer_sha256;
  std::string source;                       // what it was built from, for people
  std::map<std::string, SplitInfo> splits;  // "train", "val"
};

inline constexpr const char* kManifestName = "dataset.json";

// Appends documents of one split to shard files <split>-00000.tokens, ...
class ShardWriter {
 public:
  ShardWriter(std::filesystem::path dir, std::string split, TokenType dtype, std::uint32_t eos_id,
              std::uint64_t max_shard_tokens = 256ull << 20);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  // The document's tokens, then the end-of-text token. A token that does not
  // fit the dtype is invalid_argument.
  Status add_document(std::span<const std::uint32_t> tokens);
  Result<SplitInfo> finish();

 private:
  Status open_next();
  Status close_current();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

Status write_manifest(const std::filesystem::path& dir, const DatasetInfo& info);
Result<DatasetInfo> read_manifest(const std::filesystem::path& dir);
// The manifest's text; `where` names it in errors. data_loss for anything
// but a well-formed crucible-tokens-v1 manifest (never an exception).
Result<DatasetInfo> parse_manifest(std::string_view text, std::string_view where);

// One split, memory-mapped read-only.
class Dataset {
 public:
  // Checks each shard's size against the manifest (and, with verify, its SHA-256).
  static Result<Dataset> open(const std::filesystem::path& dir, const std::string& split = "train",
                              bool verify = false);
  Dataset(Dataset&&) noexcept;
  Dataset& operator=(Dataset&&) noexcept;
  ~Dataset();

  const DatasetInfo& info() const;
  std::uint64_t num_tokens() const;
  std::uint64_t num_samples(std::uint64_t seq_len) const { return seq_len == 0 ? 0 : num_tokens() / seq_len; }
  // Tokens of sample i into out (out.size() = seq_len); out_of_range past the
  // end, data_loss for a token at or above the vocabulary size.
  Status sample(std::uint64_t i, std::span<std::int64_t> out) const;
  std::uint64_t sample_id(std::uint64_t i, std::uint64_t seq_len) const;

  // What miners and validators compute alike (protocol.md §2): the sample
  // indices assigned to `uid` in `window` (assign_samples over this split's
  // pool), their tokens as rows of seq_len, and the packet's sample digest.
  Result<std::vector<std::uint64_t>> assignment(std::uint16_t uid, std::uint64_t window, std::uint64_t count,
                                                std::uint64_t seq_len) const;
  Result<std::vector<std::int64_t>> tokens(std::span<const std::uint64_t> indices, std::uint64_t seq_len) const;
  std::array<std::uint8_t, 32> digest(std::span<const std::uint64_t> indices, std::uint64_t seq_len) const;

 private:
  Dataset();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether a split can feed `model`: its vocabulary fits the model's (a token
// past model.vocab_size would index past the embedding) and it holds at
// least `min_samples` samples of model.seq_len tokens. Both nodes check
// this at start, before anything is posted; the error says what to change.
Status check_fits(const Dataset& d, const std::filesystem::path& dir, const model::ModelConfig& model,
                  std::uint64_t min_samples);

// What a network names its data by (protocol.dataset_sha256): SHA-256 of the
// manifest's canonical text (token type, vocabulary, end-of-text id,
// tokenizer digest, and each split's shards with their SHA-256), not of the
// folder's path or the corpus's location. Two `crucible data prepare` runs
// on the same corpus and tokenizer give the same digest.
std::string dataset_sha256(const DatasetInfo& info);

// SHA-256 of the sorted ids, each as uint64 little-endian.
std::array<std::uint8_t, 32> sample_digest(std::vector<std::uint64_t> ids);
std::string sha256_hex_of_file_bytes(std::span<const std::uint8_t> bytes);

}  // namespace crucible::data
