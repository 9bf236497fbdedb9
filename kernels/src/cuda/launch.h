// Kernel launchers, compiled by nvcc. Kept free of fmt and Status (nvcc cannot
// parse fmt's consteval format strings): host-side checks and error messages
// live in the .cpp wrappers that call these.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace crucible::kernels::cuda::launch {

// Device pointers; n indices -> packed12_size(n) bytes.
cudaError_t pack12(const std::uint16_t* d_in, std::size_t n, std::uint8_t* d_out, cudaStream_t stream);

}  // namespace crucible::kernels::cuda::launch
