#include "crucible/common/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible::text {
namespace {

std::vector<std::string> pieces(std::string_view s) {
  std::vector<std::string> out;
  for (auto p : pre_tokenize(s)) out.emplace_back(p);
  return out;
}

const char* kSample =
    "The jury said it didn't find any evidence -- none at all -- that 1,234 votes were lost.\n"
    "  Indented line\twith tabs   and   spaces.\n\n"
    "Caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 \xce\xb1\xce\xb2\xce\xb3 \xe6\x97\xa5\xe6\x9c\xac 42nd 3.14 "
    "''quoted'' `tick`\n";

std::string training_text() {
  std::string text;
  for (int i = 0; i < 40; ++i) text += kSample;
  text += "the theory of the thermal thing thereafter, there they thought.\n";
  return text;
}

TEST(PreTokenize, FollowsGpt2sPattern) {
  EXPECT_EQ(pieces("Hello world"), (std::vector<std::string>{"Hello", " world"}));
  EXPECT_EQ(pieces("I'm don't they'll"), (std::vector<std::string>{"I", "'m", " don", "'t", " they", "'ll"}));
  EXPECT_EQ(pieces("a  b"), (std::vector<std::string>{"a", " ", " b"}));  // \s+(?!\S) keeps the last space
  EXPECT_EQ(pieces("a\n\nb"), (std::vector<std::string>{"a", "\n", "\n", "b"}));
  EXPECT_EQ(pieces("x   "), (std::vector<std::string>{"x", "   "}));  // trailing whitespace in one piece
  EXPECT_EQ(pieces("abc123 !!"), (std::vector<std::string>{"abc", "123", " !!"}));
  EXPECT_EQ(pieces("caf\xc3\xa9!"), (std::vector<std::string>{"caf\xc3\xa9", "!"}));
  EXPECT_EQ(pieces("\xff\xfe"), (std::vector<std::string>{"\xff\xfe"}));  // invalid UTF-8: "other"
  std::string all;
  for (auto& p : pieces(kSample)) all += p;
  EXPECT_EQ(all, kSample);  // pieces cover the text exactly
}

TEST(ByteMap, IsGpt2s) {
  EXPECT_EQ(byte_to_char('A'), U'A');
  EXPECT_EQ(byte_to_char(' '), U'\u0120');   // "Ġ"
  EXPECT_EQ(byte_to_char('\n'), U'\u010A');  // "Ċ"
  EXPECT_EQ(byte_to_char(0), U'\u0100');
}

TEST(Tokenizer, TrainsDeterministicallyAndRoundTrips) {
  BpeTrainer trainer;
  trainer.add_text(training_text());
  TrainOptions o;
  o.vocab_size = 400;
  auto a = trainer.train(o);
  auto b = trainer.train(o);
  ASSERT_TRUE(a.is_ok()) << a.status();
  EXPECT_EQ(a->to_json(), b->to_json());
  EXPECT_LE(a->vocab_size(), 400u);
  EXPECT_EQ(a->eos_id(), a->vocab_size() - 1);
  auto ids = a->encode(kSample);
  EXPECT_LT(ids.size(), std::string(kSample).size() / 2);  // merges compress the text
  EXPECT_EQ(a->decode(ids), kSample);
  // Unseen text and arbitrary bytes still round-trip (every byte is a token).
  std::string odd = "zyxw \x01\x02\xff qqq";
  EXPECT_EQ(a->decode(a->encode(odd)), odd);
}

TEST(Tokenizer, SavesAndLoadsAHuggingFaceTokenizerJson) {
  BpeTrainer trainer;
  trainer.add_text(training_text());
  TrainOptions o;
  o.vocab_size = 350;
  auto t = trainer.train(o);
  testing::TempDir dir;
  ASSERT_TRUE(t->save(dir.path() / "tokenizer.json").is_ok());
  auto j = nlohmann::json::parse(std::ifstream(dir.path() / "tokenizer.json"));
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["pre_tokenizer"]["type"], "ByteLevel");
  EXPECT_EQ(j["model"]["vocab"]["\u0120"], static_cast<int>(' '));
  EXPECT_EQ(j["added_tokens"][0]["content"], "<|endoftext|>");
  auto back = Tokenizer::load(dir.path() / "tokenizer.json");
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->encode(kSample), t->encode(kSample));
  EXPECT_EQ(back->eos_id(), t->eos_id());
}

TEST(Tokenizer, LoadsTheNewerMergeFormatAndIgnoreMerges) {
  // A hand-made file: merges as pairs, ids not in byte order, ignore_merges.
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    std::string visible;
    char32_t c = byte_to_char(static_cast<std::uint8_t>(b));
    if (c < 0x80) {
      visible.push_back(static_cast<char>(c));
    } else {
      visible.push_back(static_cast<char>(0xC0 | (c >> 6)));
      visible.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
    vocab[visible] = 255 - b;
  }
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  vocab["zz"] = 259;  // in the vocabulary, but no merge makes it
  nlohmann::json j = {
      {"added_tokens", {{{"id", 258}, {"content", "</s>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", nlohmann::json::array({nlohmann::json::array({"a", "b"}), nlohmann::json::array({"ab", "c"})})}}}};
  auto t = Tokenizer::from_json(j.dump());
  ASSERT_TRUE(t.is_ok()) << t.status();
  EXPECT_EQ(t->eos_id(), 258u);
  EXPECT_EQ(t->encode("abcab"), (std::vector<std::uint32_t>{257, 256}));
  EXPECT_EQ(t->encode("zz"), (std::vector<std::uint32_t>{255 - 'z', 255 - 'z'}));
  // Llama 3 style: a word found whole in the vocabulary is one token.
  j["model"]["ignore_merges"] = true;
  auto whole = Tokenizer::from_json(j.dump());
  ASSERT_TRUE(whole.is_ok()) << whole.status();
  EXPECT_EQ(whole->encode("zz"), (std::vector<std::uint32_t>{259}));
}

TEST(Tokenizer, RefusesFilesItCannotHonour) {
  auto code = [](const std::string& s) { return Tokenizer::from_json(s).status().code(); };
  EXPECT_EQ(code("not json"), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(R"({"model":{"type":"WordPiece","vocab":{}}})"), StatusCode::kUnimplemented);
  EXPECT_EQ(code(R"({"normalizer":{"type":"NFC"},"model":{"type":"BPE","vocab":{"a":0}}})"),
            StatusCode::kUnimplemented);
  EXPECT_EQ(code(R"({"pre_tokenizer":{"type":"Metaspace"},"model":{"type":"BPE","vocab":{"a":0}}})"),
            StatusCode::kUnimplemented);
  // ByteLevel but missing most bytes
  EXPECT_EQ(code(R"({"pre_tokenizer":{"type":"ByteLevel"},"added_tokens":[{"id":1,"content":"</s>"}],)"
                 R"("model":{"type":"BPE","vocab":{"a":0}}})"),
            StatusCode::kInvalidArgument);
}

// Each of these threw nlohmann's type_error out of from_json (value() on a
// field of another type, or on a normalizer that is not an object); each is
// now a Status naming what is wrong.
TEST(Tokenizer, AFileOfWrongTypesIsAnErrorNeverAnException) {
  const std::string pre = R"("pre_tokenizer":{"type":"ByteLevel"},)";
  for (const std::string& text : std::vector<std::string>{
           R"({"model":{"type":5}})", R"({"model":{"type":"BPE","byte_fallback":"no"}})",
           R"({"model":{"type":"BPE","ignore_merges":1}})", R"({"normalizer":7,"model":{"type":"BPE"}})",
           R"({"normalizer":{"type":[1]},"model":{"type":"BPE"}})",
           R"({"pre_tokenizer":{"type":1},"model":{"type":"BPE"}})",
           R"({"pre_tokenizer":{"type":"ByteLevel","use_regex":"yes"},"model":{"type":"BPE"}})",
           R"({"pre_tokenizer":"ByteLevel","model":{"type":"BPE"}})",
           "{" + pre +
               R"("added_tokens":[{"id":4294967296,"content":"</s>"}],"model":{"type":"BPE","vocab":{"a":0}}})"}) {
    Result<Tokenizer> t = Tokenizer::from_json(text);
    EXPECT_FALSE(t.is_ok()) << text;
    EXPECT_NE(t.status().code(), StatusCode::kOk) << text;
  }
  auto typed = Tokenizer::from_json(R"({"model":{"type":"BPE","ignore_merges":1}})");
  EXPECT_NE(typed.status().message().find("ignore_merges"), std::string::npos) << typed.status();
}

// Hugging Face's own implementation (tokenizers.js) reads our file and
// encodes a text to the same ids.
TEST(Tokenizer, HuggingFaceTokenizersJsEncodesAlike) {
  const std::string script = std::string(CRUCIBLE_SOURCE_DIR) + "/tools/interop/tokenize.mjs";
  if (!std::filesystem::exists(std::string(CRUCIBLE_SOURCE_DIR) + "/tools/node_modules/@huggingface/tokenizers")) {
    GTEST_SKIP() << "tools/node_modules not installed (scripts/setup.sh)";
  }
  BpeTrainer trainer;
  trainer.add_text(training_text());
  TrainOptions o;
  o.vocab_size = 500;
  auto t = trainer.train(o);
  testing::TempDir dir;
  ASSERT_TRUE(t->save(dir.path() / "tokenizer.json").is_ok());
  std::string text = std::string(kSample) + "An unseen sentence, with words the merges never saw: quixotic zephyrs!\n";
  std::string text_path = dir.write("text.txt", text);
  auto r = testing::run_process({"/usr/bin/node", script, (dir.path() / "tokenizer.json").string(), text_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ids"].get<std::vector<std::uint32_t>>(), t->encode(text));
  EXPECT_EQ(j["decoded"].get<std::string>(), text);
}

}  // namespace
}  // namespace crucible::text
