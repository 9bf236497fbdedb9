// Host side of the CUDA kernels: whether this build has them, and how many
// devices there are (the kernels run through cuda_backend.cpp).
#include <cuda_runtime.h>

#include "crucible/kernels/cuda.h"

namespace crucible::kernels::cuda {

bool built() noexcept { return true; }

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

}  // namespace crucible::kernels::cuda
