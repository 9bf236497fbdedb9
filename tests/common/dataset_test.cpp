#include "crucible/common/dataset.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "crucible/common/sampler.h"
#include "support/temp_dir.h"

namespace crucible::data {
namespace {

// Two splits; the train split spans three shards of at most 5 tokens.
DatasetInfo build(const std::filesystem::path& dir, TokenType dtype) {
  DatasetInfo info;
  info.dtype = dtype;
  info.vocab_size = 100;
  info.eos_id = 99;
  ShardWriter train(dir, "train", dtype, 99, 5);
  EXPECT_TRUE(train.add_document(std::vector<std::uint32_t>{1, 2, 3}).is_ok());
  EXPECT_TRUE(train.add_document(std::vector<std::uint32_t>{4, 5, 6, 7, 8, 9}).is_ok());
  info.splits["train"] = train.finish().value();
  ShardWriter val(dir, "val", dtype, 99);
  EXPECT_TRUE(val.add_document(std::vector<std::uint32_t>{10, 11}).is_ok());
  info.splits["val"] = val.finish().value();
  EXPECT_TRUE(write_manifest(dir, info).is_ok());
  return info;
}

TEST(Dataset, WritesShardsAndReadsSamplesAcrossThem) {
  for (TokenType dtype : {TokenType::kU16, TokenType::kU32}) {
    testing::TempDir dir;
    DatasetInfo info = build(dir.path(), dtype);
    EXPECT_EQ(info.splits["train"].tokens, 11u);  // 3 + 1 + 6 + 1
    EXPECT_EQ(info.splits["train"].shards.size(), 3u);
    EXPECT_EQ(info.splits["train"].documents, 2u);
    auto d = Dataset::open(dir.path(), "train", /*verify=*/true);
    ASSERT_TRUE(d.is_ok()) << d.status();
    EXPECT_EQ(d->num_tokens(), 11u);
    EXPECT_EQ(d->num_samples(4), 2u);
    std::vector<std::int64_t> s(4);
    ASSERT_TRUE(d->sample(1, s).is_ok());  // tokens 4..7 (4 is in the first shard, 5.. in the second)
    EXPECT_EQ(s, (std::vector<std::int64_t>{4, 5, 6, 7}));
    ASSERT_TRUE(d->sample(0, s).is_ok());
    EXPECT_EQ(s, (std::vector<std::int64_t>{1, 2, 3, 99}));
    EXPECT_EQ(d->sample(2, s).code(), StatusCode::kOutOfRange);
    EXPECT_NE(d->sample_id(0, 4), d->sample_id(1, 4));
    auto val = Dataset::open(dir.path(), "val");
    ASSERT_TRUE(val.is_ok());
    EXPECT_EQ(val->num_tokens(), 3u);
    EXPECT_EQ(Dataset::open(dir.path(), "test").status().code(), StatusCode::kNotFound);
  }
}

// What both nodes check at start: the vocabulary fits the model and there
// are enough samples of its sequence length.
TEST(Dataset, FitsAModelWhoseVocabularyAndSamplesSuffice) {
  testing::TempDir dir;
  build(dir.path(), TokenType::kU16);  // vocabulary 100, 11 training tokens
  auto d = Dataset::open(dir.path(), "train");
  ASSERT_TRUE(d.is_ok()) << d.status();
  model::ModelConfig m;
  m.vocab_size = 100;
  m.seq_len = 4;
  EXPECT_TRUE(check_fits(*d, dir.path(), m, 2).is_ok());
  const Status few = check_fits(*d, dir.path(), m, 3);
  EXPECT_EQ(few.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(few.message().find("holds 2 samples of 4 tokens"), std::string::npos) << few.message();
  m.vocab_size = 99;
  const Status narrow = check_fits(*d, dir.path(), m, 1);
  EXPECT_EQ(narrow.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(narrow.message().find("vocabulary of 100 tokens, more than the model's 99"), std::string::npos)
      << narrow.message();
}

TEST(Dataset, SampleIdsAreXxh64OfTheStoredBytes) {
  testing::TempDir dir;
  build(dir.path(), TokenType::kU16);
  auto d = Dataset::open(dir.path());
  // XXH64(seed 0) of 01 00 02 00 03 00 63 00 (tokens 1, 2, 3, 99 as uint16 LE),
  // computed with the xxhsum tool: docs/protocol.md §2.
  EXPECT_EQ(d->sample_id(0, 4), 0xc47cd661ab6d46afull);
}

TEST(Dataset, DigestIsOrderIndependentAndSensitiveToEachId) {
  auto a = sample_digest({3, 1, 2});
  EXPECT_EQ(a, sample_digest({1, 2, 3}));
  EXPECT_NE(a, sample_digest({1, 2, 4}));
  EXPECT_NE(a, sample_digest({1, 2}));
}

TEST(Dataset, AManifestOfWrongTypesIsDataLossNeverAnException) {
  const std::string good =
      R"({"format":"crucible-tokens-v1","dtype":"uint16","vocab_size":2048,"eos_id":0,"tokenizer_sha256":"ab",)"
      R"("source":"brown","splits":{"train":{"documents":3,"shards":[{"file":"t.bin","tokens":100,"sha256":"cd"}]}}})";
  auto ok = parse_manifest(good, "dataset.json");
  ASSERT_TRUE(ok.is_ok()) << ok.status();
  EXPECT_EQ(ok->splits.at("train").tokens, 100u);
  // Each of these threw nlohmann's type_error out of read_manifest before.
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{R"("format":"crucible-tokens-v1")", R"("format":5)"},
                                                        {R"("dtype":"uint16")", R"("dtype":[1])"},
                                                        {R"("tokenizer_sha256":"ab")", R"("tokenizer_sha256":1)"},
                                                        {R"("source":"brown")", R"("source":{})"},
                                                        {R"("sha256":"cd")", R"("sha256":false)"},
                                                        {R"("documents":3)", R"("documents":"3")"},
                                                        {R"("vocab_size":2048)", R"("vocab_size":4294967296)"},
                                                        {R"("file":"t.bin")", R"("file":"")"},
                                                        {R"("tokens":100)", R"("tokens":18446744073709551615)"}}) {
    std::string bad = good;
    bad.replace(bad.find(from), from.size(), to);
    auto r = parse_manifest(bad, "dataset.json");
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << to;
  }
}

TEST(Dataset, DetectsDamage) {
  testing::TempDir dir;
  DatasetInfo info = build(dir.path(), TokenType::kU16);
  // A truncated shard: its size disagrees with the manifest.
  std::filesystem::resize_file(dir.path() / info.splits["train"].shards[0].file, 3);
  EXPECT_EQ(Dataset::open(dir.path()).status().code(), StatusCode::kDataLoss);

  testing::TempDir dir2;
  info = build(dir2.path(), TokenType::kU16);
  {
    std::fstream f(dir2.path() / info.splits["train"].shards[0].file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f.put(static_cast<char>(0xFF));  // token 255: outside the vocabulary of 100, and a changed byte
  }
  EXPECT_EQ(Dataset::open(dir2.path(), "train", /*verify=*/true).status().code(), StatusCode::kDataLoss);
  auto unverified = Dataset::open(dir2.path(), "train");
  ASSERT_TRUE(unverified.is_ok());
  std::vector<std::int64_t> s(4);
  EXPECT_EQ(unverified->sample(0, s).code(), StatusCode::kDataLoss);

  testing::TempDir dir3;
  dir3.write("dataset.json", R"({"format":"crucible-tokens-v1","dtype":"int8"})");
  EXPECT_EQ(Dataset::open(dir3.path()).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(Dataset::open(dir3.path() / "none").status().code(), StatusCode::kNotFound);
}

TEST(Dataset, WriterRefusesTokensTooWideForTheDtype) {
  testing::TempDir dir;
  ShardWriter w(dir.path(), "train", TokenType::kU16, 1);
  EXPECT_EQ(w.add_document(std::vector<std::uint32_t>{70000}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crucible::data

namespace crucible::data {
namespace {

TEST(Dataset, AssignmentTokensAndDigestAreThePartsOfProtocolSection2) {
  testing::TempDir dir;
  build(dir.path(), TokenType::kU16);
  auto d = Dataset::open(dir.path());
  ASSERT_TRUE(d.is_ok());
  auto idx = d->assignment(7, 3, 2, 4);  // a pool of 2 samples of 4 tokens
  ASSERT_TRUE(idx.is_ok()) << idx.status();
  EXPECT_EQ(*idx, *assign_samples(7, 3, 2, 2));
  auto tokens = d->tokens(*idx, 4);
  ASSERT_TRUE(tokens.is_ok());
  ASSERT_EQ(tokens->size(), 8u);
  std::vector<std::int64_t> row(4);
  ASSERT_TRUE(d->sample((*idx)[1], row).is_ok());
  EXPECT_TRUE(std::equal(row.begin(), row.end(), tokens->begin() + 4));
  EXPECT_EQ(d->digest(*idx, 4), sample_digest({d->sample_id((*idx)[0], 4), d->sample_id((*idx)[1], 4)}));
  EXPECT_EQ(d->assignment(7, 3, 3, 4).status().code(), StatusCode::kInvalidArgument);  // more than the pool
}

}  // namespace
}  // namespace crucible::data
