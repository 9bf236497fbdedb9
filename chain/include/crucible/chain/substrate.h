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

// The Commitments pallet (pallets/commitments/src/{lib,types}.rs at
// opentensor/subtensor 14bc6f9; runtime/src/lib.rs for its index and
// MaxFields): a commitment holds at most 3 fields; a Raw field at most
// 128 bytes (tags 1-129), a BigRaw field (136) at most 512.
inline constexpr std::uint8_t kCommitmentsPallet = 18;  // construct_runtime!: Commitments = 18
inline constexpr std::uint8_t kSetCommitmentCall = 0;   // #[pallet::call_index(0)] set_commitment
inline constexpr std::size_t kMaxCommitFields = 3;      // MaxCommitFieldsInner
inline constexpr std::size_t kMaxRawField = 128;
inline constexpr std::size_t kMaxBigRawField = 512;       // MAX_BIGRAW_COMMITMENT_SIZE_BYTES
inline constexpr std::size_t kMaxTimelockedField = 1024;  // MAX_TIMELOCK_COMMITMENT_SIZE_BYTES
// The most text crucible commits: three Raw fields. Raw rather than one
// BigRaw because every runtime since the pallet's first has Raw.
inline constexpr std::size_t kMaxCommitmentText = kMaxCommitFields * kMaxRawField;
// Per (netuid, account) and subnet epoch, the pallet counts each commit's
// bytes (at least 100) against MaxSpace, 3,100 by default.
inline constexpr std::size_t kCommitmentSpacePerEpoch = 3100;
inline constexpr std::size_t kMinCommitmentSpace = 100;

// The call bytes of Commitments.set_commitment(netuid, CommitmentInfo {
// fields }) with `text` in Raw fields of <= 128 bytes: what Proxy.proxy
// dispatches. invalid_argument naming the limit when `text` is longer than
// kMaxCommitmentText bytes or empty.
Result<Bytes> set_commitment_call(std::uint16_t netuid, std::string_view text);

// A Registration { deposit: u64, block: u32, info: { fields: Vec<Data> } };
// returns the Raw and BigRaw fields concatenated (the text a node
// committed). Hashes, timelocked fields (not yet revealed text) and the
// reset-bonds flag carry no text and are skipped; anything else, a
// truncated value or trailing bytes is data_loss.
Result<std::string> decode_commitment(ByteSpan scale);

// Keys of SubtensorModule storage items (pallets/subtensor/src/lib.rs):
// twox128("SubtensorModule") ++ twox128(item), then the netuid as u16le for
// maps hashed with Identity (Tempo, SubnetEpochIndex, LastEpochBlock, Burn,
// MaxAllowedValidators). What the StorageQuery precompile (0x807) reads.
Bytes subtensor_storage_key(std::string_view item);
Bytes subtensor_storage_key(std::string_view item, std::uint16_t netuid);
// A little-endian unsigned SCALE value of 1-8 bytes; empty (absent from
// storage) gives `absent`.
Result<std::uint64_t> decode_storage_uint(ByteSpan scale, std::size_t width, std::uint64_t absent);

}  // namespace crucible::chain::substrate
