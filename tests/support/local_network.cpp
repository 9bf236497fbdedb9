#include "support/local_network.h"

#include <gtest/gtest.h>

#include "crucible/chain/evm_chain.h"
#include "crucible/chain/keystore.h"
#include "crucible/chain/substrate.h"
#include "crucible/storage/peer_location.h"
#include "support/process.h"

namespace crucible::testing {

std::unique_ptr<chain::LocalChain> start_chain(const std::filesystem::path& dir, double block_time_s) {
  chain::LocalChainOptions o;
  o.anvil_path = std::string(CRUCIBLE_SOURCE_DIR) + "/tools/node_modules/.bin/anvil";
  o.work_dir = (dir / "chain").string();
  o.block_time_s = block_time_s;
  auto c = chain::LocalChain::start(o);
  EXPECT_TRUE(c.is_ok()) << c.status();
  return c.is_ok() ? std::move(*c) : nullptr;
}

chain::ChainOptions chain_options(const chain::LocalChain& chain) {
  chain::ChainOptions co;
  co.rpc_url = chain.url();
  co.netuid = chain.netuid();
  return co;
}

std::uint16_t register_key(const chain::LocalChain& chain, const chain::PrivateKey& key) {
  auto c = chain::EvmChain::connect(chain::to_evm_options(chain_options(chain)), key);
  EXPECT_TRUE(c.is_ok()) << c.status();
  auto hotkey = chain::substrate::mirror_account(key.address());
  auto sent = (*c)->register_neuron(chain.netuid(), hotkey);
  EXPECT_TRUE(sent.is_ok()) << sent.status();
  // As an operator runs `crucible chain proxy` after registering: the node
  // then publishes its location with one transaction at start.
  auto proxy = (*c)->ensure_commitment_proxy(chain::kCommitmentGasFundsWei);
  EXPECT_TRUE(proxy.is_ok()) << proxy.status();
  auto mg = (*c)->metagraph(chain.netuid());
  for (const auto& n : mg->neurons)
    if (n.hotkey == hotkey) return n.uid;
  ADD_FAILURE() << "not registered";
  return 0;
}

void commit_location(const chain::LocalChain& chain, const chain::PrivateKey& key, const std::string& url) {
  auto c = chain::EvmChain::connect(chain::to_evm_options(chain_options(chain)), key);
  ASSERT_TRUE(c.is_ok());
  storage::StorageOptions s;
  s.url = url;
  auto sent = (*c)->set_commitment(chain.netuid(), storage::encode_location(s));
  ASSERT_TRUE(sent.is_ok()) << sent.status();
}

std::string write_keystore(const chain::PrivateKey& key, const std::filesystem::path& path,
                           const std::string& password) {
  chain::KeystoreParams light;
  light.scrypt_n = 1024;
  auto ks = chain::encrypt_keystore(key, Secret(password), light);
  EXPECT_TRUE(ks.is_ok());
  EXPECT_TRUE(chain::write_secret_file(path.string(), *ks).is_ok());
  return path.string();
}

}  // namespace crucible::testing
