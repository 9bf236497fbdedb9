#include "support/in_process.h"

#include <array>
#include <random>
#include <stdexcept>

#include "crucible/common/dataset.h"
#include "crucible/storage/local_store.h"

namespace crucible::testing {

void write_token_dataset(const std::filesystem::path& dir) {
  data::DatasetInfo info;
  info.dtype = data::TokenType::kU16;
  info.vocab_size = 64;
  info.eos_id = 63;
  data::ShardWriter train(dir, "train", info.dtype, 63);
  std::mt19937 rng(7);
  for (int d = 0; d < 64; ++d) {
    std::vector<std::uint32_t> doc(63);
    for (auto& t : doc) t = rng() % 63;
    if (!train.add_document(doc).is_ok()) throw std::runtime_error("dataset: add_document");
  }
  auto split = train.finish();
  if (!split.is_ok()) throw std::runtime_error("dataset: " + split.status().to_string());
  info.splits["train"] = *split;
  data::ShardWriter val(dir, "val", info.dtype, 63);
  for (int d = 0; d < 8; ++d) {
    std::vector<std::uint32_t> doc(63);
    for (auto& t : doc) t = rng() % 63;
    if (!val.add_document(doc).is_ok()) throw std::runtime_error("dataset: add_document");
  }
  auto val_split = val.finish();
  if (!val_split.is_ok()) throw std::runtime_error("dataset: " + val_split.status().to_string());
  info.splits["val"] = *val_split;
  if (!data::write_manifest(dir, info).is_ok()) throw std::runtime_error("dataset: manifest");
}

model::ModelConfig tiny_model() {
  model::ModelConfig c;
  c.vocab_size = 64;
  c.dim = 16;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 2;
  c.hidden_dim = 32;
  c.seq_len = 8;
  return c;
}

chain::PrivateKey test_key(std::uint32_t n) {
  std::array<std::uint8_t, 32> b{};
  b[28] = 0x11;
  b[29] = static_cast<std::uint8_t>(n >> 16);
  b[30] = static_cast<std::uint8_t>(n >> 8);
  b[31] = static_cast<std::uint8_t>(n);
  auto k = chain::PrivateKey::from_bytes(b);
  if (!k.is_ok()) throw std::runtime_error("test_key");
  return *k;
}

storage::PeerPolicy local_peers() {
  storage::PeerPolicy p;
  p.allow_file = true;
  return p;
}

storage::StorageOptions file_store(const std::filesystem::path& dir) {
  storage::StorageOptions o;
  o.url = "file://" + dir.string();
  return o;
}

protocol::NodeIo local_io(FakeChain& chain, const chain::PrivateKey& key, const std::filesystem::path& store_dir,
                          std::shared_ptr<Clock> clock) {
  protocol::NodeIo io;
  io.chain = chain.as(key);
  auto store = storage::LocalStore::open(store_dir);
  if (!store.is_ok()) throw std::runtime_error("local_io: " + store.status().to_string());
  io.store = std::move(store).value();
  io.open_peer_store = protocol::default_store_opener(local_peers());
  io.clock = clock ? std::move(clock) : system_clock();
  return io;
}

}  // namespace crucible::testing
