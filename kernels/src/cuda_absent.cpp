// The CUDA kernels' API in a build without CUDA (CRUCIBLE_CUDA=OFF).
#include "crucible/kernels/cuda.h"

namespace crucible::kernels::cuda {

bool built() noexcept { return false; }
int device_count() noexcept { return 0; }

}  // namespace crucible::kernels::cuda

#include "crucible/kernels/backend.h"

namespace crucible::kernels {

Result<std::unique_ptr<Backend>> cuda_backend(int device) {
  return unimplemented("cuda:{}: this build has no CUDA kernels (CRUCIBLE_CUDA=OFF)", device);
}

Memory memory_of(const void*) noexcept { return Memory::kHost; }

}  // namespace crucible::kernels
