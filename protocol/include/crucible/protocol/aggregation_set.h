// A window's aggregation set (protocol.md §8): the lead validator fixes,
// once window w is scored, which uids' packets make up its aggregate and
// publishes aggregate/{w}.json {v, window, prev, uids, digests}; every node
// applies exactly that set. Sets form a chain through `prev`. Its basis (the
// Keccak-256 of the bytes as published) seeds the next window's fingerprint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crucible/chain/chain.h"
#include "crucible/common/bytes.h"
#include "crucible/common/status.h"

namespace crucible::protocol {

inline constexpr std::size_t kMaxSetBytes = 64 << 10;
inline constexpr std::size_t kMaxSetUids = 256;

struct AggregationSet {
  std::uint64_t window = 0;
  std::optional<std::uint64_t> prev;   // the previous published window: sets form a chain
  std::vector<std::uint16_t> uids;     // ascending, distinct
  std::vector<chain::Hash32> digests;  // packet digest of each uid
};

std::string encode_set(const AggregationSet& set);
// Strict: unknown version, unsorted or duplicate uids, mismatched lengths,
// prev not before window and oversize input are invalid_argument.
Result<AggregationSet> decode_set(std::string_view json);
Result<AggregationSet> decode_set(ByteSpan bytes);
// The basis the next window's fingerprints use: Keccak-256 of the set's bytes.
chain::Hash32 set_basis(ByteSpan published);

// One valid upload the lead may put in the set.
struct SetCandidate {
  std::uint16_t uid = 0;
  chain::Hash32 digest{};
  double final_score = 0;  // the uid's final score after this window's scoring
  bool admitted = false;   // its evaluations show its updates help (validator::admitted)
};

// The lead's choice: only admitted uids (evidence, not rank: a uid joins
// once an evaluation showed its update helps, and leaves only on evidence
// of harm); if more than `top` are admitted, the `top` with the highest
// final score (ties: lower uid). Listed by ascending uid.
AggregationSet choose_set(std::uint64_t window, std::optional<std::uint64_t> prev, std::vector<SetCandidate> candidates,
                          std::size_t top);

// The lead validator: the highest stake among uids with a validator permit
// (ties: the lower uid); none when no uid has a permit.
std::optional<std::uint16_t> lead_validator(const chain::Metagraph& metagraph);

}  // namespace crucible::protocol
