// A small pool of worker threads for the CPU kernels: parallel_for splits
// [0, n) into contiguous ranges, one per thread, the caller's thread among
// them, and returns when all are done. Work is split by range only, never
// by timing, so a kernel that writes disjoint outputs per item gives the
// same bytes whatever the thread count.
#pragma once

#include <cstdint>
#include <functional>

// Hot loops are built twice, for AVX2 and for any x86-64, and the loader
// picks one (GCC function multi-versioning). Only integer logic and
// unfused float operations run in them (no FMA: -ffp-contract=off), so both
// give the same bytes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CRUCIBLE_HOT __attribute__((target_clones("avx2", "default")))
#else
#define CRUCIBLE_HOT
#endif

namespace crucible::kernels::cpu {

// threads <= 0: the hardware's count. At most one range per `grain` items.
int threads_for(std::int64_t n, int threads, std::int64_t grain);

// f(first, last) on up to `threads` ranges covering [0, n).
void parallel_for(std::int64_t n, int threads, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& f);

}  // namespace crucible::kernels::cpu
