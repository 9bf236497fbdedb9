// Whether this build has the CUDA kernels and a device to run them. The
// kernels themselves are a Backend (backend.h, cuda_backend); each has a CPU
// reference and a test in tests/kernels/ that compares the two.
#pragma once

#include <cstdint>
#include <span>

#include "crucible/common/status.h"

namespace crucible::kernels::cuda {

// True when this build has the CUDA kernels (CRUCIBLE_CUDA=ON).
bool built() noexcept;

// Number of usable CUDA devices; 0 without a driver or GPU (or without CUDA in the build).
int device_count() noexcept;

}  // namespace crucible::kernels::cuda
