#include <algorithm>
#include <cmath>
#include <vector>

#include "crucible/kernels/codec.h"
#include "parallel.h"

namespace crucible::kernels {
namespace {

// One run's codes and its bins' sums and counts (rint: round half to even,
// inlined where the CPU has it).
CRUCIBLE_HOT void code_run(const float* v, std::size_t n, double shift, double scale, std::uint8_t* codes,
                           std::array<double, 4>& sums, std::array<std::size_t, 4>& counts) {
  std::array<double, 4> s{};
  std::array<std::size_t, 4> c{};
  // The codes first, in whole vectors (no dependence between values)...
  if (scale > 0) {
    for (std::size_t i = 0; i < n; ++i) {
      const double rounded = std::rint((v[i] - shift) / scale + 2.0);
      codes[i] = static_cast<std::uint8_t>(std::min(3.0, std::max(0.0, rounded)));
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) codes[i] = 2;
  }
  // ...then each bin's sum in order.
  for (std::size_t i = 0; i < n; ++i) {
    const double centred = v[i] - shift;
    s[codes[i]] += centred;
    ++c[codes[i]];
  }
  sums = s;
  counts = c;
}

}  // namespace

// Every sum runs per run of `per_block` values (one block's kept values), in
// double, in order; the runs' sums are then added in run order. The same
// order on every node and every backend (protocol.md §4), and runs can be
// summed in parallel.
Quant2 quantize2(std::span<const float> v, std::span<std::uint8_t> codes, std::size_t per_block, int threads) {
  Quant2 q;
  const std::size_t n = v.size();
  if (n == 0) return q;
  if (per_block == 0 || per_block > n) per_block = n;
  const std::size_t runs = (n + per_block - 1) / per_block;
  auto run_of = [&](std::size_t r) { return std::pair{r * per_block, std::min(n, (r + 1) * per_block)}; };
  std::vector<double> part(runs);
  const auto grain = static_cast<std::int64_t>(std::max<std::size_t>(1, 16384 / per_block));
  auto sum_runs = [&](auto&& term) {
    cpu::parallel_for(static_cast<std::int64_t>(runs), threads, grain, [&](std::int64_t a, std::int64_t b) {
      for (auto r = static_cast<std::size_t>(a); r < static_cast<std::size_t>(b); ++r) {
        auto [first, last] = run_of(r);
        double s = 0;
        for (std::size_t i = first; i < last; ++i) s += term(i);
        part[r] = s;
      }
    });
    double total = 0;
    for (double p : part) total += p;
    return total;
  };
  const double shift = sum_runs([&](std::size_t i) { return static_cast<double>(v[i]); }) / static_cast<double>(n);
  const double sq = sum_runs([&](std::size_t i) {
    const double c = v[i] - shift;
    return c * c;
  });
  const double sigma = n > 1 ? std::sqrt(sq) / std::sqrt(static_cast<double>(n - 1)) : 0.0;
  const double scale = 6.0 * sigma / 4.0;
  // Codes, and per run the sum and count of each bin.
  std::vector<std::array<double, 4>> bin_part(runs);
  std::vector<std::array<std::size_t, 4>> bin_count(runs);
  cpu::parallel_for(static_cast<std::int64_t>(runs), threads, grain, [&](std::int64_t a, std::int64_t b) {
    for (auto r = static_cast<std::size_t>(a); r < static_cast<std::size_t>(b); ++r) {
      auto [first, last] = run_of(r);
      code_run(v.data() + first, last - first, shift, scale, codes.data() + first, bin_part[r], bin_count[r]);
    }
  });
  std::array<double, 4> bin_sum{};
  std::array<std::size_t, 4> bin_n{};
  for (std::size_t r = 0; r < runs; ++r) {
    for (std::size_t b = 0; b < 4; ++b) {
      bin_sum[b] += bin_part[r][b];
      bin_n[b] += bin_count[r][b];
    }
  }
  q.shift = static_cast<float>(shift);
  q.scale = static_cast<float>(scale);
  for (std::size_t b = 0; b < 4; ++b) {
    q.lookup[b] = bin_n[b] ? static_cast<float>(bin_sum[b] / static_cast<double>(bin_n[b])) : 0.0f;
  }
  return q;
}

void dequantize2(const Quant2& q, std::span<const std::uint8_t> codes, std::span<float> out) {
  for (std::size_t i = 0; i < codes.size() && i < out.size(); ++i) out[i] = q.lookup[codes[i] & 3] + q.shift;
}

Status pack_codes2(std::span<const std::uint8_t> codes, std::span<std::uint8_t> out) {
  if (out.size() != packed2_size(codes.size())) return invalid_argument("pack2: wrong output size");
  std::fill(out.begin(), out.end(), 0);
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] > 3) return invalid_argument("pack2: code {} at {} exceeds 3", codes[i], i);
    out[i / 4] |= static_cast<std::uint8_t>(codes[i] << (2 * (i % 4)));
  }
  return Status::ok();
}

Status unpack_codes2(std::span<const std::uint8_t> packed, std::span<std::uint8_t> codes) {
  if (packed.size() != packed2_size(codes.size())) {
    return data_loss("unpack2: {} bytes for {} codes, expected {}", packed.size(), codes.size(),
                     packed2_size(codes.size()));
  }
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = (packed[i / 4] >> (2 * (i % 4))) & 3;
  if (codes.size() % 4 != 0 && (packed.back() >> (2 * (codes.size() % 4))) != 0) {
    return data_loss("unpack2: non-zero padding after the last of {} codes", codes.size());
  }
  return Status::ok();
}

}  // namespace crucible::kernels
