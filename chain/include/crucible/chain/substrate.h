// The Substrate side of Bittensor that the EVM client needs: mirror
// accounts, storage keys, SCALE for the weights commit hash, and decoding a
// miner's commitment (Commitments.CommitmentOf) read over state_getStorage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crucible/chain/keccak.h"
#include "crucible/chain/keys.h"
#include "crucible/common/bytes.h"

namespace crucible::chain::substrate {

using AccountId = Hash32;

Hash32 blake2b_256(ByteSpan data);

// The Substrate account an EVM address acts as when it calls a precompile:
// blake2b-256("evm:" || address).
AccountId mirror_account(const Address& address);

// SS58 text form of an account (prefix 42: generic Substrate, used by Bittensor).
std::string ss58(const AccountId& account, std::uint16_t prefix = 42);

// xxHash64-based hashers of Substrate storage keys.
Bytes twox128(ByteSpan data);
Bytes twox64(ByteSpan data);

// SCALE compact encoding of a length.
Bytes compact(std::uint64_t n);

// blake2_256(SCALE(who, netuid, uids, values, salt, version_key)): what
// commitWeights takes and revealWeights is checked against.
Hash32 weights_commit_hash(const AccountId& who, std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                           const std::vector<std::uint16_t>& values, const std::vector<std::uint16_t>& salt,
                           std::uint64_t version_key);

// twox128("Commitments") || twox128("CommitmentOf") || u16le(netuid) || twox64(account) || account
Bytes commitment_storage_key(std::uint16_t netuid, const AccountId& account);

// A Registration { deposit: u64, block: u32, info: { fields: Vec<Data> } };
// returns the Raw fields concatenated (the text a miner committed).
Result<std::string> decode_commitment(ByteSpan scale);

}  // namespace crucible::chain::substrate
