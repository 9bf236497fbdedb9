#include "crucible/common/dataset.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "crucible/common/bytes.h"
#include "crucible/common/file_io.h"
#include "crucible/common/json_fields.h"
#include "crucible/common/sampler.h"
#include "crucible/common/sha256.h"

namespace crucible::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view dtype_text(TokenType t) { return t == TokenType::kU16 ? "uint16" : "uint32"; }

}  // namespace

std::string dataset_sha256(const DatasetInfo& info) {
  // Canonical text of what the tokens are, without `source` (a path on the
  // machine that prepared it); each shard by its content's SHA-256.
  Sha256 h;
  h.update(fmt::format("crucible-dataset-v1;dtype={};vocab_size={};eos_id={};tokenizer_sha256={};",
                       dtype_text(info.dtype), info.vocab_size, info.eos_id, info.tokenizer_sha256));
  for (const auto& [name, split] : info.splits) {
    h.update(fmt::format("split={};tokens={};documents={};", name, split.tokens, split.documents));
    for (const auto& shard : split.shards)
      h.update(fmt::format("shard={}:{}:{};", shard.file, shard.tokens, shard.sha256));
  }
  return h.finish_hex();
}

std::string sha256_hex_of_file_bytes(std::span<const std::uint8_t> bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return to_hex(h.finish(), false);
}

std::array<std::uint8_t, 32> sample_digest(std::vector<std::uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  Sha256 h;
  for (std::uint64_t id : ids) {
    std::uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<std::uint8_t>(id >> (8 * i));
    h.update(le, 8);
  }
  return h.finish();
}

// ---- writer -------------------------------------------------------------------

struct ShardWriter::Impl {
  fs::path dir;
  std::string split;
  TokenType dtype = TokenType::kU16;
  std::uint32_t eos = 0;
  std::uint64_t max_tokens = 1;
  SplitInfo info;
  int fd = -1;
  fs::path tmp;
  std::unique_ptr<Sha256> sha;
  std::uint64_t shard_tokens = 0;
  std::vector<std::uint8_t> buffer;
};

ShardWriter::ShardWriter(fs::path dir, std::string split, TokenType dtype, std::uint32_t eos_id,
                         std::uint64_t max_shard_tokens)
    : impl_(std::make_unique<Impl>()) {
  impl_->dir = std::move(dir);
  impl_->split = std::move(split);
  impl_->dtype = dtype;
  impl_->eos = eos_id;
  impl_->max_tokens = std::max<std::uint64_t>(max_shard_tokens, 1);
}

ShardWriter::~ShardWriter() {
  if (impl_->fd >= 0) {
    close(impl_->fd);
    unlink(impl_->tmp.c_str());
  }
}

Status ShardWriter::open_next() {
  auto& m = *impl_;
  std::error_code ec;
  fs::create_directories(m.dir, ec);
  if (ec) return files::errno_status("create folder", m.dir, ec.value());
  std::string name = fmt::format("{}-{:05}.tokens", m.split, m.info.shards.size());
  m.tmp = m.dir / ("." + name + ".tmp");
  m.fd = ::open(m.tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (m.fd < 0) return files::errno_status("write", m.tmp, errno);
  m.sha = std::make_unique<Sha256>();
  m.shard_tokens = 0;
  m.info.shards.push_back({name, 0, ""});
  return Status::ok();
}

Status ShardWriter::close_current() {
  auto& m = *impl_;
  if (m.fd < 0) return Status::ok();
  Status st = Status::ok();
  if (!m.buffer.empty()) {
    st = files::write_all(m.fd, m.buffer.data(), m.buffer.size(), m.tmp);
    m.buffer.clear();
  }
  if (st.is_ok() && fsync(m.fd) != 0) st = files::errno_status("fsync", m.tmp, errno);
  close(m.fd);
  m.fd = -1;
  fs::path final_path = m.dir / m.info.shards.back().file;
  if (st.is_ok() && rename(m.tmp.c_str(), final_path.c_str()) != 0)
    st = files::errno_status("rename", final_path, errno);
  if (!st.is_ok()) {
    unlink(m.tmp.c_str());
    return st;
  }
  m.info.shards.back().tokens = m.shard_tokens;
  m.info.shards.back().sha256 = to_hex(m.sha->finish(), false);
  return Status::ok();
}

Status ShardWriter::add_document(std::span<const std::uint32_t> tokens) {
  auto& m = *impl_;
  const std::size_t width = token_bytes(m.dtype);
  auto put = [&](std::uint32_t t) -> Status {
    if (m.dtype == TokenType::kU16 && t > 0xFFFF) return invalid_argument("token {} does not fit uint16 shards", t);
    if (m.fd < 0 || m.shard_tokens == m.max_tokens) {
      CRUCIBLE_RETURN_IF_ERROR(close_current());
      CRUCIBLE_RETURN_IF_ERROR(open_next());
    }
    std::uint8_t le[4];
    for (std::size_t i = 0; i < width; ++i) le[i] = static_cast<std::uint8_t>(t >> (8 * i));
    m.buffer.insert(m.buffer.end(), le, le + width);
    m.sha->update(le, width);
    ++m.shard_tokens;
    ++m.info.tokens;
    if (m.buffer.size() >= (1u << 20)) {
      CRUCIBLE_RETURN_IF_ERROR(files::write_all(m.fd, m.buffer.data(), m.buffer.size(), m.tmp));
      m.buffer.clear();
    }
    return Status::ok();
  };
  for (std::uint32_t t : tokens) CRUCIBLE_RETURN_IF_ERROR(put(t));
  CRUCIBLE_RETURN_IF_ERROR(put(m.eos));
  ++m.info.documents;
  return Status::ok();
}

Result<SplitInfo> ShardWriter::finish() {
  CRUCIBLE_RETURN_IF_ERROR(close_current());
  return impl_->info;
}

// ---- manifest -------------------------------------------------------------------

Status write_manifest(const fs::path& dir, const DatasetInfo& info) {
  json splits = json::object();
  for (const auto& [name, s] : info.splits) {
    json shards = json::array();
    for (const auto& sh : s.shards) shards.push_back({{"file", sh.file}, {"tokens", sh.tokens}, {"sha256", sh.sha256}});
    splits[name] = {{"tokens", s.tokens}, {"documents", s.documents}, {"shards", shards}};
  }
  json j = {{"format", "crucible-tokens-v1"},
            {"dtype", dtype_text(info.dtype)},
            {"vocab_size", info.vocab_size},
            {"eos_id", info.eos_id},
            {"tokenizer_sha256", info.tokenizer_sha256},
            {"source", info.source},
            {"splits", splits}};
  std::string text = j.dump(2) + "\n";
  return files::write_file_atomic(dir / kManifestName, as_bytes(text));
}

namespace {

Result<SplitInfo> parse_split(const json& sj, std::string_view name, std::string_view where) {
  SplitInfo s;
  JsonFields f(sj, fmt::format("{}: split '{}'", where, name));
  if (f.ok() && !(sj.contains("shards") && sj["shards"].is_array())) f.check(false, "shards", "is not a list");
  if (!f.ok()) return f.status();
  for (const json& sh : sj["shards"]) {
    JsonFields g(sh, fmt::format("{}: a shard of split '{}'", where, name));
    ShardInfo info_sh{g.get<std::string>("file"), g.get<std::uint64_t>("tokens"), g.get_or<std::string>("sha256", "")};
    g.check(!info_sh.file.empty() && info_sh.file.find('/') == std::string::npos && !info_sh.file.starts_with("."),
            "file", "must be a plain file name");
    g.check(info_sh.tokens <= (std::uint64_t{1} << 48) - s.tokens, "tokens", "make a split of more than 2^48 tokens");
    if (!g.ok()) return g.status();
    s.tokens += info_sh.tokens;
    s.shards.push_back(std::move(info_sh));
  }
  s.documents = f.get_or<std::uint64_t>("documents", 0);
  if (!f.ok()) return f.status();
  return s;
}

}  // namespace

Result<DatasetInfo> parse_manifest(std::string_view text, std::string_view where) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  JsonFields f(j, std::string(where));
  if (f.get<std::string>("format") != "crucible-tokens-v1") {
    return f.ok() ? data_loss("{}: not a crucible-tokens-v1 manifest", where) : f.status();
  }
  DatasetInfo info;
  const auto dtype = f.get<std::string>("dtype");
  if (dtype == "uint16") {
    info.dtype = TokenType::kU16;
  } else if (dtype == "uint32") {
    info.dtype = TokenType::kU32;
  } else {
    f.check(false, "dtype", "must be uint16 or uint32");
  }
  info.vocab_size = f.get<std::uint32_t>("vocab_size");
  info.eos_id = f.get<std::uint32_t>("eos_id");
  info.tokenizer_sha256 = f.get_or<std::string>("tokenizer_sha256", "");
  info.source = f.get_or<std::string>("source", "");
  if (f.ok() && !(j.contains("splits") && j["splits"].is_object())) f.check(false, "splits", "is not an object");
  if (!f.ok()) return f.status();
  for (auto it = j["splits"].begin(); it != j["splits"].end(); ++it) {
    CRUCIBLE_ASSIGN_OR_RETURN(info.splits[it.key()], parse_split(it.value(), it.key(), where));
  }
  return info;
}

Result<DatasetInfo> read_manifest(const fs::path& dir) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, files::read_file(dir / kManifestName, 16 << 20));
  return parse_manifest(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                        (dir / kManifestName).string());
}

// ---- reader ---------------------------------------------------------------------

struct Dataset::Impl {
  DatasetInfo info;
  std::string split;
  struct Map {
    const std::uint8_t* data = nullptr;
    std::size_t bytes = 0;
    std::uint64_t first_token = 0, tokens = 0;
  };
  std::vector<Map> maps;
  std::uint64_t tokens = 0;
  ~Impl() {
    for (auto& m : maps)
      if (m.data != nullptr && m.bytes > 0) munmap(const_cast<std::uint8_t*>(m.data), m.bytes);
  }
  std::uint32_t token(std::uint64_t t) const {
    // shards are few: a binary search over their first tokens
    auto it =
        std::upper_bound(maps.begin(), maps.end(), t, [](std::uint64_t v, const Map& m) { return v < m.first_token; });
    const Map& m = *(it - 1);
    const std::size_t w = token_bytes(info.dtype);
    const std::uint8_t* p = m.data + (t - m.first_token) * w;
    return w == 2 ? std::uint32_t(p[0] | p[1] << 8)
                  : std::uint32_t(p[0] | p[1] << 8 | p[2] << 16 | std::uint32_t(p[3]) << 24);
  }
};

Dataset::Dataset() : impl_(std::make_unique<Impl>()) {}
Dataset::Dataset(Dataset&&) noexcept = default;
Dataset& Dataset::operator=(Dataset&&) noexcept = default;
Dataset::~Dataset() = default;

Result<Dataset> Dataset::open(const fs::path& dir, const std::string& split, bool verify) {
  Dataset d;
  CRUCIBLE_ASSIGN_OR_RETURN(d.impl_->info, read_manifest(dir));
  auto it = d.impl_->info.splits.find(split);
  if (it == d.impl_->info.splits.end()) return not_found("dataset {} has no split '{}'", dir.string(), split);
  d.impl_->split = split;
  const std::size_t w = token_bytes(d.impl_->info.dtype);
  for (const ShardInfo& sh : it->second.shards) {
    fs::path p = dir / sh.file;
    files::Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.is_open()) return files::errno_status("open shard", p, errno);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return files::errno_status("stat", p, errno);
    if (static_cast<std::uint64_t>(st.st_size) != sh.tokens * w) {
      return data_loss("shard {} holds {} bytes, the manifest says {} tokens of {} bytes", p.string(), st.st_size,
                       sh.tokens, w);
    }
    Impl::Map m;
    m.bytes = static_cast<std::size_t>(st.st_size);
    m.first_token = d.impl_->tokens;
    m.tokens = sh.tokens;
    if (m.bytes > 0) {
      void* addr = mmap(nullptr, m.bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
      if (addr == MAP_FAILED) return files::errno_status("mmap", p, errno);
      m.data = static_cast<const std::uint8_t*>(addr);
    }
    d.impl_->maps.push_back(m);
    d.impl_->tokens += sh.tokens;
    if (verify && !sh.sha256.empty() && sha256_hex_of_file_bytes({m.data, m.bytes}) != sh.sha256) {
      return data_loss("shard {} does not match its SHA-256 in the manifest", p.string());
    }
  }
  // Drop empty shards from the search table.
  std::erase_if(d.impl_->maps, [](const Impl::Map& m) { return m.tokens == 0; });
  return d;
}

const DatasetInfo& Dataset::info() const { return impl_->info; }
std::uint64_t Dataset::num_tokens() const { return impl_->tokens; }

Status Dataset::sample(std::uint64_t i, std::span<std::int64_t> out) const {
  const std::uint64_t L = out.size();
  if (L == 0 || i >= num_samples(L))
    return out_of_range("sample {} of length {}: the split has {}", i, L, num_samples(L));
  for (std::uint64_t k = 0; k < L; ++k) {
    std::uint32_t t = impl_->token(i * L + k);
    if (t >= impl_->info.vocab_size)
      return data_loss("token {} at {} is outside the vocabulary of {}", t, i * L + k, impl_->info.vocab_size);
    out[k] = t;
  }
  return Status::ok();
}

std::uint64_t Dataset::sample_id(std::uint64_t i, std::uint64_t seq_len) const {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  const std::size_t w = token_bytes(impl_->info.dtype);
  for (std::uint64_t k = 0; k < seq_len; ++k) {
    std::uint32_t t = impl_->token(i * seq_len + k);
    std::uint8_t le[4] = {std::uint8_t(t), std::uint8_t(t >> 8), std::uint8_t(t >> 16), std::uint8_t(t >> 24)};
    XXH64_update(st, le, w);
  }
  std::uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

Result<std::vector<std::uint64_t>> Dataset::assignment(std::uint16_t uid, std::uint64_t window, std::uint64_t count,
                                                       std::uint64_t seq_len) const {
  return assign_samples(uid, window, num_samples(seq_len), count);
}

Result<std::vector<std::int64_t>> Dataset::tokens(std::span<const std::uint64_t> indices, std::uint64_t seq_len) const {
  std::vector<std::int64_t> out(indices.size() * seq_len);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    CRUCIBLE_RETURN_IF_ERROR(sample(indices[i], std::span(out).subspan(i * seq_len, seq_len)));
  }
  return out;
}

Status check_fits(const Dataset& d, const fs::path& dir, const model::ModelConfig& model, std::uint64_t min_samples) {
  if (static_cast<std::int64_t>(d.info().vocab_size) > model.vocab_size) {
    return invalid_argument(
        "the dataset at {} has a vocabulary of {} tokens, more than the model's {} (model.vocab_size): use the "
        "network's model preset, or prepare the data for it (crucible data prepare --vocab-size {})",
        dir.string(), d.info().vocab_size, model.vocab_size, model.vocab_size);
  }
  const auto seq_len = static_cast<std::uint64_t>(std::max<std::int64_t>(model.seq_len, 0));
  if (d.num_samples(seq_len) < min_samples) {
    return invalid_argument("the dataset at {} holds {} samples of {} tokens (model.seq_len), fewer than the {} needed",
                            dir.string(), d.num_samples(seq_len), seq_len, min_samples);
  }
  return Status::ok();
}

std::array<std::uint8_t, 32> Dataset::digest(std::span<const std::uint64_t> indices, std::uint64_t seq_len) const {
  std::vector<std::uint64_t> ids;
  ids.reserve(indices.size());
  for (std::uint64_t i : indices) ids.push_back(sample_id(i, seq_len));
  return sample_digest(std::move(ids));
}

}  // namespace crucible::data
