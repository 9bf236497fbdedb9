// The model fingerprint (protocol.md §7): values of the model at positions
// nobody can know before the previous window's aggregate exists, and that
// differ from uid to uid. Position j of tensor `name` for `uid` is
// u64le(Keccak-256(basis || u16le(uid) || name || u32le(j))[0..8]) mod
// numel, where basis is the Keccak-256 of aggregate/{w-1}.json as published
// (all zeros before any aggregate). The packet's (signed) model_digest is
// Keccak-256 of basis || u64le(window) || u16le(uid) || every value as f32
// little-endian, in tensor order: only a holder of the model can compute its
// own, and another uid's fingerprint is worth nothing to it. A miner
// publishes fingerprint/{w}.json; a validator compares the digest with its
// own model's, and the values to tell how many outer steps behind it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crucible/chain/keccak.h"
#include "crucible/common/bytes.h"
#include "crucible/common/status.h"
#include "crucible/common/tensor_spec.h"

namespace crucible::protocol {

using model::TensorSpec;
using model::TensorValues;

inline constexpr int kFingerprintPositions = 64;
inline constexpr std::size_t kMaxFingerprintBytes = 4 << 20;

struct Fingerprint {
  std::uint64_t window = 0;
  std::uint16_t uid = 0;
  chain::Hash32 basis{};
  TensorValues values;  // per tensor, kFingerprintPositions each
};

std::vector<std::int64_t> fingerprint_positions(const chain::Hash32& basis, std::uint16_t uid, std::string_view name,
                                                std::int64_t numel, int count = kFingerprintPositions);
// Every tensor's positions, in the specs' order.
std::vector<std::vector<std::int64_t>> fingerprint_positions(const chain::Hash32& basis, std::uint16_t uid,
                                                             const std::vector<TensorSpec>& specs);

chain::Hash32 fingerprint_digest(const Fingerprint& f);
std::string encode_fingerprint(const Fingerprint& f, const std::vector<TensorSpec>& specs);
// Strict: a v1 object whose window, uid and basis have their types, whose
// values hold, for every tensor of the specs, kFingerprintPositions finite
// numbers, and whose digest is fingerprint_digest of those values.
Result<Fingerprint> decode_fingerprint(ByteSpan json, const std::vector<TensorSpec>& specs);

// How many outer steps separate a peer's fingerprint values from ours:
// ||peer - ours|| / ||last_step||, where last_step is the last outer step
// (outer_lr * aggregate) at the same positions. 0 when the values are equal;
// `cap` when they differ and no step is known, and at most `cap`.
double steps_behind(const TensorValues& peer, const TensorValues& ours, const TensorValues& last_step, double cap);

}  // namespace crucible::protocol
