// The codec's reference for the kernel tests: obvious loops, no speed
// (protocol.md §3-4, §8). Every backend's op and the span-level codec are
// compared against it (backend_ops_test.cpp, backend_codec_test.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/backend.h"

namespace crucible::kernels {

// ---- The reference: obvious loops, no speed. ----
namespace ref {

struct Encoded {
  std::vector<std::uint16_t> indices;
  std::vector<float> values;
  std::vector<std::uint8_t> codes;
  Quant2 quant;
};

inline std::uint32_t mag(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b & 0x7FFFFFFFu;
}

inline void topk(const std::vector<float>& x, const BlockLayout& l, Encoded& e) {
  e.indices.clear();
  e.values.clear();
  for (std::int64_t b = 0; b < l.num_blocks(); ++b) {
    std::vector<std::int64_t> j(static_cast<std::size_t>(l.block_elems()));
    std::iota(j.begin(), j.end(), 0);
    auto at = [&](std::int64_t i) { return x[static_cast<std::size_t>(element_of(l, b, i))]; };
    std::stable_sort(j.begin(), j.end(), [&](std::int64_t a, std::int64_t c) { return mag(at(a)) > mag(at(c)); });
    j.resize(static_cast<std::size_t>(l.k));
    std::sort(j.begin(), j.end());
    for (auto i : j) {
      e.indices.push_back(static_cast<std::uint16_t>(i));
      e.values.push_back(at(i));
    }
  }
}

// protocol.md §4: sums per run of `per` values in double, in order; the runs' sums in run order.
inline Quant2 quantize(const std::vector<float>& v, std::size_t per, std::vector<std::uint8_t>& codes) {
  Quant2 q;
  const std::size_t n = v.size();
  codes.assign(n, 0);
  if (n == 0) return q;
  if (per == 0 || per > n) per = n;
  auto blocked = [&](auto term) {
    double total = 0;
    for (std::size_t r = 0; r * per < n; ++r) {
      double part = 0;
      for (std::size_t i = r * per; i < std::min(n, (r + 1) * per); ++i) part += term(i);
      total += part;
    }
    return total;
  };
  const double shift = blocked([&](std::size_t i) { return static_cast<double>(v[i]); }) / static_cast<double>(n);
  const double sq = blocked([&](std::size_t i) { return (v[i] - shift) * (v[i] - shift); });
  const double scale = 6.0 * (n > 1 ? std::sqrt(sq) / std::sqrt(static_cast<double>(n - 1)) : 0.0) / 4.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = scale > 0 ? std::nearbyint((v[i] - shift) / scale + 2.0) : 2.0;
    codes[i] = static_cast<std::uint8_t>(std::min(3.0, std::max(0.0, r)));
  }
  q.shift = static_cast<float>(shift);
  q.scale = static_cast<float>(scale);
  for (std::uint8_t c = 0; c < 4; ++c) {
    std::size_t count = 0;
    for (auto code : codes) count += code == c;
    const double s = blocked([&](std::size_t i) { return codes[i] == c ? v[i] - shift : 0.0; });
    q.lookup[c] = count ? static_cast<float>(s / static_cast<double>(count)) : 0.0f;
  }
  return q;
}

inline std::vector<float> dense(const BlockLayout& l, const std::vector<std::uint16_t>& idx,
                                const std::vector<std::uint8_t>& codes, const Quant2& q) {
  std::vector<float> out(static_cast<std::size_t>(l.rows * l.cols), 0.0f);
  for (std::int64_t b = 0; b < l.num_blocks(); ++b) {
    for (int i = 0; i < l.k; ++i) {
      const auto at = static_cast<std::size_t>(b * l.k + i);
      out[static_cast<std::size_t>(element_of(l, b, idx[at]))] = q.lookup[codes[at]] + q.shift;
    }
  }
  return out;
}

inline Encoded encode(std::vector<float>& ef, const std::vector<float>& delta, float beta, const BlockLayout& l) {
  for (std::size_t i = 0; i < ef.size(); ++i) ef[i] = beta * ef[i] + delta[i];
  Encoded e;
  topk(ef, l, e);
  e.quant = quantize(e.values, static_cast<std::size_t>(l.k), e.codes);
  const auto sent = dense(l, e.indices, e.codes, e.quant);
  for (std::size_t i = 0; i < ef.size(); ++i) ef[i] -= sent[i];
  return e;
}

struct Peer {
  std::uint16_t uid;
  Encoded e;
};

inline std::vector<float> merge(std::vector<Peer> peers, const BlockLayout& l) {
  std::sort(peers.begin(), peers.end(), [](const Peer& a, const Peer& b) { return a.uid < b.uid; });
  std::vector<double> norms;
  for (const auto& p : peers) {
    double total = 0;
    for (std::int64_t b = 0; b < l.num_blocks(); ++b) {
      double part = 0;
      for (int i = 0; i < l.k; ++i) {
        const double v = p.e.quant.lookup[p.e.codes[static_cast<std::size_t>(b * l.k + i)]] + p.e.quant.shift;
        part += v * v;
      }
      total += part;
    }
    norms.push_back(std::sqrt(total));
  }
  const double median = median_of(norms);
  const auto n = static_cast<std::size_t>(l.rows * l.cols);
  std::vector<double> sum(n, 0.0);
  std::vector<int> count(n, 0);
  for (std::size_t p = 0; p < peers.size(); ++p) {
    const double s = norms[p] > median && norms[p] > 0 ? median / norms[p] : 1.0;
    const auto d = dense(l, peers[p].e.indices, peers[p].e.codes, peers[p].e.quant);
    for (std::int64_t b = 0; b < l.num_blocks(); ++b) {
      for (int i = 0; i < l.k; ++i) {
        const auto at =
            static_cast<std::size_t>(element_of(l, b, peers[p].e.indices[static_cast<std::size_t>(b * l.k + i)]));
        sum[at] += s * d[at];
        ++count[at];
      }
    }
  }
  std::vector<float> out(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    if (count[i]) out[i] = static_cast<float>(sum[i] / count[i]);
  }
  return out;
}

inline std::vector<std::uint8_t> pack12(const std::vector<std::uint16_t>& idx) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < idx.size(); i += 2) {
    const std::uint16_t a = idx[i], b = i + 1 < idx.size() ? idx[i + 1] : 0;
    out.push_back(static_cast<std::uint8_t>(a & 0xFF));
    out.push_back(static_cast<std::uint8_t>((a >> 8) | ((b & 0xF) << 4)));
    out.push_back(static_cast<std::uint8_t>(b >> 4));
  }
  return out;
}

}  // namespace ref

}  // namespace crucible::kernels
