// CUDA versions of the kernels. Built when CRUCIBLE_CUDA is on (nvcc found);
// they run only where a GPU exists. Each one has a CPU reference in kernels/
// and a test in tests/kernels/ that compares the two.
#pragma once

#include <cstdint>
#include <span>

#include "crucible/common/status.h"

namespace crucible::kernels::cuda {

// True when this build has the CUDA kernels (CRUCIBLE_CUDA=ON).
bool built() noexcept;

// Number of usable CUDA devices; 0 without a driver or GPU (or without CUDA in the build).
int device_count() noexcept;

// pack_indices12 on the GPU, for host buffers (copies in, runs, copies out).
// unavailable when no device exists; the same validation as the CPU version.
Status pack_indices12(std::span<const std::uint16_t> indices, std::span<std::uint8_t> out);

}  // namespace crucible::kernels::cuda
