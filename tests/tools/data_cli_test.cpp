// `crucible data`: tokenizer training and token shards, through the binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "crucible/cli/corpus.h"
#include "crucible/common/dataset.h"
#include "crucible/common/tokenizer.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using testing::bin;
using ::testing::HasSubstr;
using testing::run_process;

TEST(BrownText, StripsTagsAndJoinsPunctuation) {
  std::string tagged =
      "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, that/cs Atlanta's/np$ election/nn "
      "was/bedz n't/* over/rp ./.\n\n\n\tNext/ap paragraph/nn ./.\n";
  EXPECT_EQ(cli::brown_to_text(tagged),
            "The jury said \"no evidence\", that Atlanta's election wasn't over.\nNext paragraph.");
}

TEST(DataCli, PreparesAFolderOfTextAndJsonl) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "corpus/sub");
  std::vector<std::string> docs;
  for (int i = 0; i < 20; ++i) {
    docs.push_back("Document number " + std::to_string(i) + " talks about the weather, the sea and the sky.");
  }
  {
    std::ofstream jsonl(dir.path() / "corpus/a.jsonl");
    for (int i = 0; i < 10; ++i) jsonl << nlohmann::json{{"text", docs[i]}}.dump() << "\n";
    for (int i = 10; i < 20; ++i) std::ofstream(dir.path() / ("corpus/sub/d" + std::to_string(i) + ".txt")) << docs[i];
  }
  const std::string out = (dir.path() / "data").string();
  auto r = run_process({bin("crucible"), "data", "prepare", "--corpus", (dir.path() / "corpus").string(), "--out", out,
                        "--vocab-size", "300", "--min-frequency", "1", "--val-fraction", "0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("vocabulary 300"));

  auto tok = text::Tokenizer::load(out + "/tokenizer.json");
  ASSERT_TRUE(tok.is_ok()) << tok.status();
  auto train = data::Dataset::open(out, "train", true);
  auto val = data::Dataset::open(out, "val", true);
  ASSERT_TRUE(train.is_ok() && val.is_ok()) << train.status() << val.status();
  EXPECT_EQ(train->info().splits.at("train").documents, 18u);
  EXPECT_EQ(train->info().splits.at("val").documents, 2u);  // every 10th document
  // The shards decode back to the documents, each followed by end-of-text.
  std::vector<std::int64_t> all(train->num_tokens());
  ASSERT_TRUE(train->sample(0, all).is_ok());
  std::vector<std::uint32_t> ids(all.begin(), all.end());
  std::string text;
  for (auto id : ids) text += id == tok->eos_id() ? std::string("|") : tok->decode(std::vector<std::uint32_t>{id});
  EXPECT_THAT(text, HasSubstr(docs[0] + "|"));
  EXPECT_THAT(text, HasSubstr(docs[18] + "|"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr(docs[9] + "|")));  // the 10th and 20th documents are held out
  EXPECT_THAT(text, ::testing::Not(HasSubstr(docs[19])));

  // A second run finds the folder prepared and leaves it alone.
  auto again =
      run_process({bin("crucible"), "data", "prepare", "--corpus", (dir.path() / "corpus").string(), "--out", out});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("already prepared"));

  auto info = run_process({bin("crucible"), "data", "info", out});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("verified"));
}

TEST(DataCli, ClearErrorsForBadInput) {
  testing::TempDir dir;
  auto missing = run_process({bin("crucible"), "data", "prepare", "--corpus", (dir.path() / "nope").string(), "--out",
                              (dir.path() / "d").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));
  dir.write("bad/x.jsonl", "{\"text\": \"ok\"}\nnot json\n");
  auto bad = run_process({bin("crucible"), "data", "prepare", "--corpus", (dir.path() / "bad").string(), "--out",
                          (dir.path() / "d").string(), "--vocab-size", "260"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("x.jsonl line 2"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "d/dataset.json"));  // nothing half-made claims to be ready
  auto small = run_process({bin("crucible"), "data", "tokenizer", "train", "--vocab-size", "10", "--out", "x.json"});
  EXPECT_EQ(small.exit_code, 2);
}

TEST(DataCli, TrainsATokenizerOnTheBrownCorpus) {
  testing::TempDir dir;
  const std::string out = (dir.path() / "tokenizer.json").string();
  auto r = run_process(
      {bin("crucible"), "data", "tokenizer", "train", "--corpus", "brown", "--vocab-size", "400", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto tok = text::Tokenizer::load(out);
  ASSERT_TRUE(tok.is_ok()) << tok.status();
  EXPECT_EQ(tok->vocab_size(), 400u);
  // Common English pieces are single tokens; tags like "/at" were stripped before training.
  EXPECT_EQ(tok->encode(" the").size(), 1u);
  EXPECT_GT(tok->encode("/at").size(), 1u);
}

}  // namespace
}  // namespace crucible
