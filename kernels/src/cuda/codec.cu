// GPU twins of the CPU codec (kernels/src/cpu/): the same results, bit for
// bit. Every double sum runs in the CPU's order (per block in order, one
// thread per block; blocks' sums added on the host in block order), and
// every float or double operation is written with an explicit rounding
// intrinsic so that nvcc never fuses a multiply and an add.
#include <cstdint>

#include "launch.h"

namespace crucible::kernels::cuda::launch {
namespace {

constexpr unsigned kThreads = 256;
constexpr int kMaxElems = 4096;

unsigned grid_for(std::size_t n) {
  const std::size_t g = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(g < 65535u * 16u ? (g == 0 ? 1 : g) : 65535u * 16u);
}

__device__ inline std::uint32_t magnitude_bits(float x) { return __float_as_uint(x) & 0x7FFFFFFFu; }

// Offset in the tensor of block-local index j of block b.
__device__ inline std::int64_t offset_of(const Layout& l, std::int64_t b, std::int64_t j) {
  const std::int64_t br = b / l.blocks_across, bc = b % l.blocks_across;
  return (br * l.block_rows + j / l.block_cols) * l.cols + bc * l.block_cols + j % l.block_cols;
}

__global__ void first_non_finite_kernel(const float* x, std::size_t n, unsigned long long* first) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if ((__float_as_uint(x[i]) & 0x7F800000u) == 0x7F800000u) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

__global__ void ef_update_kernel(float* e, const float* d, std::size_t n, float beta) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    e[i] = __fadd_rn(__fmul_rn(beta, e[i]), d[i]);
  }
}

// Exclusive prefix sums of per-thread counts, in shared memory (thread 0 adds them in order).
__device__ void scan_threads(unsigned* totals) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned run = 0;
    for (unsigned t = 0; t < blockDim.x; ++t) {
      const unsigned v = totals[t];
      totals[t] = run;
      run += v;
    }
  }
  __syncthreads();
}

// One thread block per codec block. The k-th largest magnitude T by radix
// select (four 8-bit digits); every element above T is kept, and of those
// equal to T the lowest indices, as many as are still wanted: the CPU's
// order (larger |x|, then lower index). Indices are written ascending.
__global__ void topk_kernel(const float* x, Layout l, std::uint16_t* indices, float* values) {
  __shared__ std::uint32_t bits[kMaxElems];
  __shared__ unsigned hist[256];
  __shared__ unsigned totals[kThreads];
  __shared__ std::uint32_t prefix_s, mask_s;
  __shared__ unsigned wanted_s;
  const std::int64_t b = blockIdx.x;
  const int elems = static_cast<int>(l.block_rows * l.block_cols);
  const int k = l.k;
  for (int j = threadIdx.x; j < elems; j += blockDim.x) bits[j] = magnitude_bits(x[offset_of(l, b, j)]);
  if (threadIdx.x == 0) {
    prefix_s = 0;
    mask_s = 0;
    wanted_s = static_cast<unsigned>(k);
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int d = threadIdx.x; d < 256; d += blockDim.x) hist[d] = 0;
    __syncthreads();
    const std::uint32_t prefix = prefix_s, mask = mask_s;
    for (int j = threadIdx.x; j < elems; j += blockDim.x) {
      if ((bits[j] & mask) == prefix) atomicAdd(&hist[(bits[j] >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned wanted = wanted_s;
      int d = 255;
      for (; d > 0; --d) {
        if (hist[d] >= wanted) break;
        wanted -= hist[d];
      }
      prefix_s = prefix | (static_cast<std::uint32_t>(d) << shift);
      mask_s = mask | (255u << shift);
      wanted_s = wanted;
    }
    __syncthreads();
  }
  const std::uint32_t t = prefix_s;
  const unsigned equal_wanted = wanted_s;  // of the elements equal to T, how many are kept
  // Each thread owns a contiguous run of elements, so ranks follow index order.
  const int per = (elems + blockDim.x - 1) / blockDim.x;
  const int first = min(elems, static_cast<int>(threadIdx.x) * per), last = min(elems, first + per);
  unsigned equal = 0;
  for (int j = first; j < last; ++j) equal += bits[j] == t;
  totals[threadIdx.x] = equal;
  scan_threads(totals);
  const unsigned equal_start = totals[threadIdx.x];  // elements equal to T before this thread's run
  unsigned equal_before = equal_start;
  unsigned keep = 0;
  for (int j = first; j < last; ++j) {
    const bool eq = bits[j] == t;
    keep += bits[j] > t || (eq && equal_before < equal_wanted);
    equal_before += eq;
  }
  __syncthreads();
  totals[threadIdx.x] = keep;
  scan_threads(totals);
  unsigned out = totals[threadIdx.x];
  equal_before = equal_start;
  for (int j = first; j < last; ++j) {
    const bool eq = bits[j] == t;
    if (bits[j] > t || (eq && equal_before < equal_wanted)) {
      const std::size_t at = static_cast<std::size_t>(b) * k + out++;
      indices[at] = static_cast<std::uint16_t>(j);
      values[at] = x[offset_of(l, b, j)];
    }
    equal_before += eq;
  }
}

__global__ void run_sums_kernel(const float* v, std::size_t n, std::size_t per, double* part) {
  const std::size_t runs = (n + per - 1) / per;
  for (std::size_t r = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; r < runs;
       r += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double s = 0;
    const std::size_t last = (r + 1) * per < n ? (r + 1) * per : n;
    for (std::size_t i = r * per; i < last; ++i) s = __dadd_rn(s, static_cast<double>(v[i]));
    part[r] = s;
  }
}

__global__ void run_square_sums_kernel(const float* v, std::size_t n, std::size_t per, double shift, double* part) {
  const std::size_t runs = (n + per - 1) / per;
  for (std::size_t r = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; r < runs;
       r += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double s = 0;
    const std::size_t last = (r + 1) * per < n ? (r + 1) * per : n;
    for (std::size_t i = r * per; i < last; ++i) {
      const double c = __dsub_rn(static_cast<double>(v[i]), shift);
      s = __dadd_rn(s, __dmul_rn(c, c));
    }
    part[r] = s;
  }
}

__global__ void codes_kernel(const float* v, std::size_t n, std::size_t per, double shift, double scale,
                             std::uint8_t* codes, double* bin_part, unsigned* bin_count) {
  const std::size_t runs = (n + per - 1) / per;
  for (std::size_t r = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; r < runs;
       r += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double s[4] = {0, 0, 0, 0};
    unsigned c[4] = {0, 0, 0, 0};
    const std::size_t last = (r + 1) * per < n ? (r + 1) * per : n;
    for (std::size_t i = r * per; i < last; ++i) {
      const double centred = __dsub_rn(static_cast<double>(v[i]), shift);
      const double rounded = scale > 0 ? rint(__dadd_rn(__ddiv_rn(centred, scale), 2.0)) : 2.0;  // half to even
      const int code = static_cast<int>(fmin(3.0, fmax(0.0, rounded)));
      codes[i] = static_cast<std::uint8_t>(code);
      s[code] = __dadd_rn(s[code], centred);
      ++c[code];
    }
    for (int b = 0; b < 4; ++b) {
      bin_part[r * 4 + b] = s[b];
      bin_count[r * 4 + b] = c[b];
    }
  }
}

__global__ void subtract_sent_kernel(float* e, Layout l, const std::uint16_t* indices, const std::uint8_t* codes,
                                     Values4 sent) {
  const std::size_t kept = static_cast<std::size_t>(l.num_blocks) * l.k;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < kept;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::int64_t at = offset_of(l, static_cast<std::int64_t>(i / l.k), indices[i]);
    e[at] = __fsub_rn(e[at], sent.v[codes[i] & 3]);
  }
}

__global__ void check_indices_kernel(const std::uint16_t* indices, Layout l, unsigned* bad) {
  const std::size_t kept = static_cast<std::size_t>(l.num_blocks) * l.k;
  const auto elems = static_cast<unsigned>(l.block_rows * l.block_cols);
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < kept;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (indices[i] >= elems || (i % l.k != 0 && indices[i] <= indices[i - 1])) atomicOr(bad, 1u);
  }
}

__global__ void scatter_kernel(float* out, Layout l, const std::uint16_t* indices, const std::uint8_t* codes,
                               Values4 value) {
  const std::size_t kept = static_cast<std::size_t>(l.num_blocks) * l.k;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < kept;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[offset_of(l, static_cast<std::int64_t>(i / l.k), indices[i])] = value.v[codes[i] & 3];
  }
}

__global__ void norm_parts_kernel(const std::uint8_t* codes, Layout l, Values4 value, double* part) {
  for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < l.num_blocks;
       b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    double s = 0;
    for (int i = 0; i < l.k; ++i) {
      const double v = value.v[codes[b * l.k + i] & 3];
      s = __dadd_rn(s, __dmul_rn(v, v));
    }
    part[b] = s;
  }
}

// One thread block per codec block: a block-sized double accumulator in
// shared memory; peers in uid order, each peer's (distinct) coordinates in
// parallel, so every coordinate gets its additions in uid order.
__global__ void merge_kernel(const Peer* peers, int n_peers, Layout l, float* out) {
  __shared__ double sum[kMaxElems];
  __shared__ unsigned short count[kMaxElems];
  const std::int64_t b = blockIdx.x;
  const int elems = static_cast<int>(l.block_rows * l.block_cols);
  for (int j = threadIdx.x; j < elems; j += blockDim.x) {
    sum[j] = 0;
    count[j] = 0;
  }
  __syncthreads();
  for (int p = 0; p < n_peers; ++p) {
    const Peer& peer = peers[p];
    for (int i = threadIdx.x; i < l.k; i += blockDim.x) {
      const std::size_t at = static_cast<std::size_t>(b) * l.k + i;
      const int j = peer.indices[at];
      sum[j] = __dadd_rn(sum[j], __dmul_rn(peer.scale, static_cast<double>(peer.value[peer.codes[at] & 3])));
      ++count[j];
    }
    __syncthreads();
  }
  for (int j = threadIdx.x; j < elems; j += blockDim.x) {
    out[offset_of(l, b, j)] = count[j] ? static_cast<float>(__ddiv_rn(sum[j], static_cast<double>(count[j]))) : 0.0f;
  }
}

}  // namespace

cudaError_t first_non_finite(const float* x, std::size_t n, unsigned long long* first, cudaStream_t s) {
  first_non_finite_kernel<<<grid_for(n), kThreads, 0, s>>>(x, n, first);
  return cudaGetLastError();
}
cudaError_t ef_update(float* e, const float* d, std::size_t n, float beta, cudaStream_t s) {
  ef_update_kernel<<<grid_for(n), kThreads, 0, s>>>(e, d, n, beta);
  return cudaGetLastError();
}
cudaError_t topk(const float* x, Layout l, std::uint16_t* indices, float* values, cudaStream_t s) {
  if (l.num_blocks == 0) return cudaSuccess;
  topk_kernel<<<static_cast<unsigned>(l.num_blocks), kThreads, 0, s>>>(x, l, indices, values);
  return cudaGetLastError();
}
cudaError_t run_sums(const float* v, std::size_t n, std::size_t per, double* part, cudaStream_t s) {
  run_sums_kernel<<<grid_for((n + per - 1) / per), kThreads, 0, s>>>(v, n, per, part);
  return cudaGetLastError();
}
cudaError_t run_square_sums(const float* v, std::size_t n, std::size_t per, double shift, double* part,
                            cudaStream_t s) {
  run_square_sums_kernel<<<grid_for((n + per - 1) / per), kThreads, 0, s>>>(v, n, per, shift, part);
  return cudaGetLastError();
}
cudaError_t codes(const float* v, std::size_t n, std::size_t per, double shift, double scale, std::uint8_t* out,
                  double* bin_part, unsigned* bin_count, cudaStream_t s) {
  codes_kernel<<<grid_for((n + per - 1) / per), kThreads, 0, s>>>(v, n, per, shift, scale, out, bin_part, bin_count);
  return cudaGetLastError();
}
cudaError_t subtract_sent(float* e, Layout l, const std::uint16_t* indices, const std::uint8_t* codes, Values4 sent,
                          cudaStream_t s) {
  subtract_sent_kernel<<<grid_for(static_cast<std::size_t>(l.num_blocks) * l.k), kThreads, 0, s>>>(e, l, indices, codes,
                                                                                                   sent);
  return cudaGetLastError();
}
cudaError_t check_indices(const std::uint16_t* indices, Layout l, unsigned* bad, cudaStream_t s) {
  check_indices_kernel<<<grid_for(static_cast<std::size_t>(l.num_blocks) * l.k), kThreads, 0, s>>>(indices, l, bad);
  return cudaGetLastError();
}
cudaError_t scatter(float* out, Layout l, const std::uint16_t* indices, const std::uint8_t* codes, Values4 value,
                    cudaStream_t s) {
  scatter_kernel<<<grid_for(static_cast<std::size_t>(l.num_blocks) * l.k), kThreads, 0, s>>>(out, l, indices, codes,
                                                                                             value);
  return cudaGetLastError();
}
cudaError_t norm_parts(const std::uint8_t* codes, Layout l, Values4 value, double* part, cudaStream_t s) {
  norm_parts_kernel<<<grid_for(static_cast<std::size_t>(l.num_blocks)), kThreads, 0, s>>>(codes, l, value, part);
  return cudaGetLastError();
}
cudaError_t merge(const Peer* peers, int n_peers, Layout l, float* out, cudaStream_t s) {
  if (l.num_blocks == 0) return cudaSuccess;
  merge_kernel<<<static_cast<unsigned>(l.num_blocks), kThreads, 0, s>>>(peers, n_peers, l, out);
  return cudaGetLastError();
}

}  // namespace crucible::kernels::cuda::launch
