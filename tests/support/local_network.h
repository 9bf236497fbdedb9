// Pieces of a local network for the end-to-end tests: a prepared dataset,
// anvil with the stand-ins, registered keys, committed store locations and
// keystore files.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "crucible/chain/chain_options.h"
#include "crucible/chain/keys.h"
#include "crucible/chain/local_chain.h"
#include "support/process.h"  // prepare_brown

namespace crucible::testing {

// anvil with 1-second blocks.
std::unique_ptr<chain::LocalChain> start_chain(const std::filesystem::path& dir, double block_time_s = 1.0);
chain::ChainOptions chain_options(const chain::LocalChain& chain);
// Registers the key's mirror account; returns its uid.
std::uint16_t register_key(const chain::LocalChain& chain, const chain::PrivateKey& key);
// Commits a store location (file:// URL) for the key's uid.
void commit_location(const chain::LocalChain& chain, const chain::PrivateKey& key, const std::string& url);
// A keystore (light scrypt) for the key, mode 0600; returns its path.
std::string write_keystore(const chain::PrivateKey& key, const std::filesystem::path& path,
                           const std::string& password);

}  // namespace crucible::testing
