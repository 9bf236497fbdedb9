// `crucible model eval|export`: the trained model, for people and tools.
//   eval    held-out loss and perplexity of a checkpoint on a data folder's split
//   export  a Hugging Face folder (config.json for LlamaForCausalLM,
//           model.safetensors, tokenizer.json, tokenizer_config.json,
//           generation_config.json) that `transformers` loads as it is
// A checkpoint is any crucible model file: the lead's
// v1/checkpoint/{step}/model.safetensors, or a node's model.safetensors.
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"
#include "crucible/common/dataset.h"
#include "crucible/common/file_io.h"
#include "crucible/common/replica.h"
#include "crucible/common/tokenizer.h"

namespace crucible::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::uint64_t kMaxCheckpointBytes = 64ull << 30;

struct ModelArgs {
  std::string checkpoint;
  std::string model = "tiny";  // a preset name (configs/models/NAME.toml) or a TOML file
  std::string data;            // a prepared data folder
  std::string split = "val";
  std::uint64_t samples = 0;  // 0: all of the split
  std::string tokenizer;      // export: tokenizer.json (default: the data folder's)
  std::string out;
  int threads = 0;
};

Result<model::ModelConfig> model_config(const std::string& model) {
  const bool is_file = model.ends_with(".toml") || model.find('/') != std::string::npos;
  const std::string path = is_file ? model : fmt::format("{}/configs/models/{}.toml", CRUCIBLE_SOURCE_DIR, model);
  return model::load_model_config(path);
}

// The checkpoint in a replica of the model's shape. A checkpoint that names
// its shape (metadata "model") must name this one.
Result<std::unique_ptr<model::Replica>> open_checkpoint(const ModelArgs& a, model::ModelConfig& config) {
  CRUCIBLE_ASSIGN_OR_RETURN(config, model_config(a.model));
  safetensors::Limits limits;
  limits.max_file_bytes = kMaxCheckpointBytes;
  CRUCIBLE_ASSIGN_OR_RETURN(safetensors::File file, safetensors::read_file(a.checkpoint, limits));
  if (auto it = file.metadata.find("model"); it != file.metadata.end() && it->second != config.canonical()) {
    return failed_precondition("{} is a checkpoint of the model {}, not --model {} ({})", a.checkpoint, it->second,
                               a.model, config.canonical());
  }
  CRUCIBLE_ASSIGN_OR_RETURN(auto replica, model::Replica::create(config, {"cpu", a.threads}, 1));
  CRUCIBLE_RETURN_IF_ERROR(replica->load(file).with_context(a.checkpoint));
  return replica;
}

int fail(const std::string& what, const Status& st) {
  fmt::print(stderr, "crucible model {}: {}\n", what, st.to_string());
  return st.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

int run_eval(const ModelArgs& a) {
  model::ModelConfig config;
  auto replica = open_checkpoint(a, config);
  if (!replica.is_ok()) return fail("eval", replica.status());
  auto data = data::Dataset::open(a.data, a.split);
  if (!data.is_ok()) return fail("eval", data.status());
  const std::uint64_t available = data->num_samples(static_cast<std::uint64_t>(config.seq_len));
  const std::uint64_t n = a.samples == 0 ? available : std::min(a.samples, available);
  auto loss = model::dataset_loss(**replica, *data, n);
  if (!loss.is_ok()) return fail("eval", loss.status());
  fmt::print("loss {:.6f}\nperplexity {:.4f}\nsamples {} of {} tokens ({} split of {})\n", *loss, std::exp(*loss), n,
             config.seq_len, a.split, a.data);
  return kExitOk;
}

json hf_config(const model::ModelConfig& c, std::uint32_t eos) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", c.vocab_size},
          {"hidden_size", c.dim},
          {"intermediate_size", c.hidden_dim},
          {"num_hidden_layers", c.n_layers},
          {"num_attention_heads", c.n_heads},
          {"num_key_value_heads", c.n_kv_heads},
          {"head_dim", c.head_dim()},
          {"max_position_embeddings", c.seq_len},
          {"rms_norm_eps", c.norm_eps},
          {"rope_theta", c.rope_theta},
          {"rope_scaling", nullptr},
          {"hidden_act", "silu"},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"mlp_bias", false},
          {"tie_word_embeddings", c.tie_embeddings},
          {"initializer_range", c.init_std},
          {"bos_token_id", eos},
          {"eos_token_id", eos},
          {"torch_dtype", "float32"},
          {"use_cache", true}};
}

Status write_json(const fs::path& path, const json& j) {
  return files::write_file_atomic(path, as_bytes(j.dump(2) + "\n"));
}

Status export_folder(const ModelArgs& a) {
  model::ModelConfig config;
  CRUCIBLE_ASSIGN_OR_RETURN(auto replica, open_checkpoint(a, config));
  const fs::path tokenizer_path = !a.tokenizer.empty() ? fs::path(a.tokenizer) : fs::path(a.data) / "tokenizer.json";
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes tokenizer_bytes, files::read_file(tokenizer_path, 64ull << 20));
  CRUCIBLE_ASSIGN_OR_RETURN(auto tokenizer, text::Tokenizer::load(tokenizer_path));
  if (static_cast<std::int64_t>(tokenizer.vocab_size()) > config.vocab_size) {
    return failed_precondition("{} has {} tokens, the model's vocabulary {}", tokenizer_path.string(),
                               tokenizer.vocab_size(), config.vocab_size);
  }
  const fs::path out(a.out);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return unavailable("cannot create {}: {}", out.string(), ec.message());
  CRUCIBLE_RETURN_IF_ERROR(replica->save(out / "model.safetensors", {{"format", "pt"}}));
  CRUCIBLE_RETURN_IF_ERROR(write_json(out / "config.json", hf_config(config, tokenizer.eos_id())));
  CRUCIBLE_RETURN_IF_ERROR(files::write_file_atomic(out / "tokenizer.json", tokenizer_bytes));
  const std::string eos = tokenizer.eos_token();
  CRUCIBLE_RETURN_IF_ERROR(write_json(out / "tokenizer_config.json", {{"tokenizer_class", "PreTrainedTokenizerFast"},
                                                                      {"bos_token", eos},
                                                                      {"eos_token", eos},
                                                                      {"model_max_length", config.seq_len},
                                                                      {"clean_up_tokenization_spaces", false}}));
  return write_json(out / "generation_config.json", {{"bos_token_id", tokenizer.eos_id()},
                                                     {"eos_token_id", tokenizer.eos_id()},
                                                     {"max_length", config.seq_len},
                                                     {"do_sample", false}});
}

int run_export(const ModelArgs& a) {
  if (a.tokenizer.empty() && a.data.empty()) {
    return fail("export", invalid_argument("give --data DIR (its tokenizer.json) or --tokenizer FILE"));
  }
  if (Status st = export_folder(a); !st.is_ok()) return fail("export", st);
  fmt::print(
      "wrote {}: config.json, model.safetensors, tokenizer.json, tokenizer_config.json, "
      "generation_config.json\n",
      a.out);
  return kExitOk;
}

void add_shared(CLI::App* cmd, ModelArgs& a) {
  cmd->add_option("--checkpoint", a.checkpoint, "A crucible model file (.safetensors)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--model", a.model, "Model preset name or [model] TOML file")->capture_default_str();
  cmd->add_option("--threads", a.threads, "Torch threads (0: all cores)")->capture_default_str();
}

}  // namespace

void add_model_commands(CLI::App& app, int& exit_code) {
  CLI::App* group = app.add_subcommand("model", "Evaluate or export a trained model");
  group->require_subcommand(1);
  auto args = std::make_shared<ModelArgs>();
  CLI::App* eval = group->add_subcommand("eval", "Held-out loss and perplexity of a checkpoint");
  add_shared(eval, *args);
  eval->add_option("--data", args->data, "A prepared data folder (crucible data prepare)")->required();
  eval->add_option("--split", args->split, "Which split")->capture_default_str();
  eval->add_option("--samples", args->samples, "Samples to measure (0: the whole split)")->capture_default_str();
  eval->callback([args, &exit_code] { exit_code = run_eval(*args); });
  CLI::App* exp = group->add_subcommand("export", "Write a Hugging Face folder (LlamaForCausalLM)");
  add_shared(exp, *args);
  exp->add_option("--out", args->out, "The folder to write")->required();
  exp->add_option("--data", args->data, "A prepared data folder: its tokenizer.json goes with the model");
  exp->add_option("--tokenizer", args->tokenizer, "A tokenizer.json (instead of --data)");
  exp->callback([args, &exit_code] { exit_code = run_export(*args); });
}

}  // namespace crucible::cli
