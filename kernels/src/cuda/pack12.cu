// GPU twin of cpu/pack12.cpp: one thread per index pair.
#include "launch.h"

namespace crucible::kernels::cuda::launch {
namespace {

__global__ void pack12_kernel(const std::uint16_t* in, std::size_t n, std::uint8_t* out) {
  std::size_t pair = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (pair >= (n + 1) / 2) return;
  std::uint16_t a = in[2 * pair];
  std::uint16_t b = 2 * pair + 1 < n ? in[2 * pair + 1] : 0;
  out[3 * pair] = static_cast<std::uint8_t>(a & 0xFF);
  out[3 * pair + 1] = static_cast<std::uint8_t>((a >> 8) | ((b & 0xF) << 4));
  out[3 * pair + 2] = static_cast<std::uint8_t>(b >> 4);
}

}  // namespace

cudaError_t pack12(const std::uint16_t* d_in, std::size_t n, std::uint8_t* d_out, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  std::size_t pairs = (n + 1) / 2;
  if (pairs == 0) return cudaSuccess;
  auto blocks = static_cast<unsigned>((pairs + kThreads - 1) / kThreads);
  pack12_kernel<<<blocks, kThreads, 0, stream>>>(d_in, n, d_out);
  return cudaGetLastError();
}

}  // namespace crucible::kernels::cuda::launch
