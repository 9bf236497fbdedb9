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

namespace crucible::kernels::cuda::launch {

// A codec layout as the kernels see it (codec.h's BlockLayout).
struct Layout {
  std::int64_t rows, cols, block_rows, block_cols, blocks_across, num_blocks;
  int k;
};

// Four floats by value: lookup[c] + shift for each code c.
struct Values4 {
  float v[4];
};

// The peers of a merge on the device: pointers into device memory.
struct Peer {
  const std::uint16_t* indices;
  const std::uint8_t* codes;
  float value[4];  // lookup[c] + shift
  double scale;    // min(1, median / norm)
};

// *first = the least index of a non-finite x (first must hold ~0ull before).
cudaError_t first_non_finite(const float* x, std::size_t n, unsigned long long* first, cudaStream_t s);
// e = beta * e + d (a multiply, then an add).
cudaError_t ef_update(float* e, const float* d, std::size_t n, float beta, cudaStream_t s);
// Top-k of every block of x into indices (ascending) and values.
cudaError_t topk(const float* x, Layout l, std::uint16_t* indices, float* values, cudaStream_t s);
// part[r] = sum of v[r*per .. ) in double, in order; with shift: of (v - shift)^2.
cudaError_t run_sums(const float* v, std::size_t n, std::size_t per, double* part, cudaStream_t s);
cudaError_t run_square_sums(const float* v, std::size_t n, std::size_t per, double shift, double* part, cudaStream_t s);
// codes and, per run, each bin's sum of (v - shift) and count.
cudaError_t codes(const float* v, std::size_t n, std::size_t per, double shift, double scale, std::uint8_t* codes,
                  double* bin_part, unsigned* bin_count, cudaStream_t s);
// e[kept i] -= sent[codes[i]].
cudaError_t subtract_sent(float* e, Layout l, const std::uint16_t* indices, const std::uint8_t* codes, Values4 sent,
                          cudaStream_t s);
// *bad = 1 if an index is outside its block or not above the one before it in its block.
cudaError_t check_indices(const std::uint16_t* indices, Layout l, unsigned* bad, cudaStream_t s);
// out (zeroed before) at the kept coordinates: value4[codes[i]].
cudaError_t scatter(float* out, Layout l, const std::uint16_t* indices, const std::uint8_t* codes, Values4 value,
                    cudaStream_t s);
// part[b] = sum over block b's kept values of value^2 in double, in order.
cudaError_t norm_parts(const std::uint8_t* codes, Layout l, Values4 value, double* part, cudaStream_t s);
// The merge of n_peers peers (in uid order) into out (every element written).
cudaError_t merge(const Peer* peers, int n_peers, Layout l, float* out, cudaStream_t s);

}  // namespace crucible::kernels::cuda::launch
