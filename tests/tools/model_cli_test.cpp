// `crucible model eval|export` through the binary. The exported folder is
// read by independent code: the numpy Llama (from config.json, as
// transformers reads it, not crucible's TOML) must give the loss that
// `crucible model eval` prints, and Hugging Face's own tokenizer (npm
// @huggingface/tokenizers) must load the exported tokenizer.json and
// encode text as crucible does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "crucible/common/dataset.h"
#include "crucible/common/replica.h"
#include "crucible/common/tokenizer.h"
#include "support/local_network.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = testing::prepare_brown(dir_.path());
    auto config = model::load_model_config(std::string(CRUCIBLE_SOURCE_DIR) + "/configs/models/tiny.toml");
    ASSERT_TRUE(config.is_ok());
    auto replica = model::Replica::create(*config, {"cpu", 1}, 7);
    ASSERT_TRUE(replica.is_ok());
    checkpoint_ = (dir_.path() / "model.safetensors").string();
    ASSERT_TRUE((*replica)->save(checkpoint_, {{"window", "3"}}).is_ok());
  }

  testing::ProcessResult crucible(std::vector<std::string> args) {
    args.insert(args.begin(), testing::bin("crucible"));
    return testing::run_process(args);
  }

  testing::TempDir dir_;
  std::string data_, checkpoint_;
};

TEST_F(ModelCli, EvalAndTheExportedFolderAgreeWithAnIndependentLlama) {
  auto eval =
      crucible({"model", "eval", "--checkpoint", checkpoint_, "--data", data_, "--samples", "3", "--threads", "1"});
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_THAT(eval.out, HasSubstr("perplexity"));
  const double loss = std::stod(eval.out.substr(eval.out.find("loss ") + 5));
  EXPECT_GT(loss, 5.0);  // an untrained model over 2048 tokens: about ln(2048) = 7.6
  EXPECT_LT(loss, 9.0);

  const fs::path out = dir_.path() / "hf";
  auto exported = crucible({"model", "export", "--checkpoint", checkpoint_, "--data", data_, "--out", out.string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  for (const char* f :
       {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
  auto config = nlohmann::json::parse(std::ifstream(out / "config.json"));
  EXPECT_EQ(config["architectures"][0], "LlamaForCausalLM");

  // The same three samples through the numpy Llama reading the folder.
  auto val = data::Dataset::open(data_, "val");
  ASSERT_TRUE(val.is_ok()) << val.status();
  nlohmann::json samples = nlohmann::json::array();
  for (std::uint64_t i = 0; i < 3; ++i) {
    std::vector<std::uint64_t> idx{i};
    samples.push_back(*val->tokens(idx, 128));
  }
  auto ref =
      testing::run_process({"/usr/bin/python3", std::string(CRUCIBLE_SOURCE_DIR) + "/tests/model/llama_reference.py",
                            out.string(), samples.dump()});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  EXPECT_NEAR(nlohmann::json::parse(ref.out)["loss"].get<double>(), loss, 1e-4);

  // Hugging Face's tokenizer on the exported tokenizer.json encodes as crucible's does.
  const fs::path text = dir_.path() / "text.txt";
  std::ofstream(text) << "The jury said it did find that the election was conducted.";
  auto hf = testing::run_process({"/usr/bin/node", std::string(CRUCIBLE_SOURCE_DIR) + "/tools/interop/tokenize.mjs",
                                  (out / "tokenizer.json").string(), text.string()});
  ASSERT_EQ(hf.exit_code, 0) << hf.err;
  auto tok = text::Tokenizer::load(out / "tokenizer.json");
  ASSERT_TRUE(tok.is_ok());
  auto ids = tok->encode("The jury said it did find that the election was conducted.");
  EXPECT_EQ(nlohmann::json::parse(hf.out)["ids"].get<std::vector<std::uint32_t>>(), ids);
}

TEST_F(ModelCli, RefusesAMismatchedModelAndMissingInputsClearly) {
  auto wrong = crucible({"model", "eval", "--checkpoint", checkpoint_, "--data", data_, "--model", "small"});
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_THAT(wrong.err, HasSubstr("tensors"));
  auto no_tokenizer = crucible({"model", "export", "--checkpoint", checkpoint_, "--out", (dir_.path() / "x").string()});
  EXPECT_EQ(no_tokenizer.exit_code, 2);
  EXPECT_THAT(no_tokenizer.err, HasSubstr("--data"));
  EXPECT_FALSE(fs::exists(dir_.path() / "x"));
  auto missing =
      crucible({"model", "eval", "--checkpoint", (dir_.path() / "none.safetensors").string(), "--data", data_});
  EXPECT_NE(missing.exit_code, 0);
}

}  // namespace
}  // namespace crucible
