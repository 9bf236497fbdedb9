// The model fingerprint (protocol.md §7): values of the model at positions
// nobody can know before the previous window's aggregate exists. Position
// j of tensor `name` is u64le(Keccak-256(basis || name || u32le(j))[0..8])
// mod numel, where basis is the Keccak-256 of aggregate/{w-1}.json as
// published (all zeros before any aggregate). The packet's model_digest
// is Keccak-256 of basis || every value as f32 little-endian, in tensor order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "crucible/chain/keccak.h"
#include "crucible/miner/aggregation.h"

namespace crucible::miner {

inline constexpr int kFingerprintPositions = 64;

struct Fingerprint {
  std::uint64_t window = 0;
  std::uint16_t uid = 0;
  chain::Hash32 basis{};
  std::vector<std::vector<float>> values;  // per tensor, kFingerprintPositions each
};

std::vector<std::int64_t> fingerprint_positions(const chain::Hash32& basis, std::string_view name, std::int64_t numel,
                                                int count = kFingerprintPositions);

// value(t, flat) reads tensor t of the model at a flat index.
Fingerprint take_fingerprint(std::uint64_t window, std::uint16_t uid, const chain::Hash32& basis,
                             const std::vector<TensorSpec>& specs,
                             const std::function<float(std::size_t, std::int64_t)>& value);
chain::Hash32 fingerprint_digest(const Fingerprint& f);
std::string encode_fingerprint(const Fingerprint& f, const std::vector<TensorSpec>& specs);

}  // namespace crucible::miner
