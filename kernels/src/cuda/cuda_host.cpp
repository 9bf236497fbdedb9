// Host side of the CUDA kernels: validation, device buffers, copies, errors.
#include <cuda_runtime.h>

#include "crucible/kernels/cuda.h"
#include "crucible/kernels/pack12.h"
#include "launch.h"

namespace crucible::kernels::cuda {
namespace {

Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return internal_error("{}: {}", what, cudaGetErrorString(err));
}

// A device allocation freed on every path.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  Status allocate(std::size_t bytes) { return cuda_status(cudaMalloc(&ptr_, bytes), "cudaMalloc"); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

}  // namespace

bool built() noexcept { return true; }

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

Status pack_indices12(std::span<const std::uint16_t> indices, std::span<std::uint8_t> out) {
  if (device_count() == 0) return unavailable("pack12 (cuda): no CUDA device");
  CRUCIBLE_RETURN_IF_ERROR(check_pack12_args(indices, out));
  if (indices.empty()) return Status::ok();
  DeviceBuffer d_in, d_out;
  CRUCIBLE_RETURN_IF_ERROR(d_in.allocate(indices.size_bytes()));
  CRUCIBLE_RETURN_IF_ERROR(d_out.allocate(out.size()));
  CRUCIBLE_RETURN_IF_ERROR(cuda_status(
      cudaMemcpy(d_in.as<void>(), indices.data(), indices.size_bytes(), cudaMemcpyHostToDevice), "cudaMemcpy"));
  CRUCIBLE_RETURN_IF_ERROR(cuda_status(
      launch::pack12(d_in.as<std::uint16_t>(), indices.size(), d_out.as<std::uint8_t>(), nullptr), "pack12 launch"));
  return cuda_status(cudaMemcpy(out.data(), d_out.as<void>(), out.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
}

}  // namespace crucible::kernels::cuda
