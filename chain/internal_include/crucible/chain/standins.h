// Runtime bytecode of the stand-in contracts (contracts/*.sol), compiled by
// solc-js at build time (contracts/build.js), and where they are placed.
#pragma once

#include <cstdint>

namespace crucible::chain::standins {

extern const char* const kSubtensorStateRuntime;
extern const char* const kMetagraphStandInRuntime;
extern const char* const kSubnetStandInRuntime;
extern const char* const kNeuronStandInRuntime;
extern const char* const kCommitmentsStandInRuntime;
extern const char* const kProxyStandInRuntime;
extern const char* const kStakingStandInRuntime;
extern const char* const kStorageQueryStandInRuntime;

inline constexpr std::uint64_t kStateAddress = 0xC0DE;        // shared state of all stand-ins
inline constexpr std::uint64_t kCommitmentsAddress = 0xC0C0;  // CommitmentOf reads (state_getStorage on Bittensor)
inline constexpr std::uint64_t kStorageQueryAddress = 0x807;
inline constexpr std::uint64_t kProxyAddress = 0x80B;
inline constexpr std::uint64_t kStakingAddress = 0x805;

}  // namespace crucible::chain::standins
