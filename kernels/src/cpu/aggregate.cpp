#include "crucible/kernels/aggregate.h"

#include <algorithm>
#include <cmath>

namespace crucible::kernels {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

Status aggregate(std::vector<PeerUpdate> peers, std::span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  if (peers.empty()) return Status::ok();
  std::sort(peers.begin(), peers.end(), [](const PeerUpdate& a, const PeerUpdate& b) { return a.uid < b.uid; });
  const BlockLayout& l = peers[0].tensor->layout;
  if (static_cast<std::int64_t>(out.size()) != l.rows * l.cols) return invalid_argument("aggregate: wrong output size");
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const BlockLayout& p = peers[i].tensor->layout;
    if (p.rows != l.rows || p.cols != l.cols || p.block_rows != l.block_rows || p.block_cols != l.block_cols ||
        p.k != l.k) {
      return invalid_argument("aggregate: uid {} has another layout", peers[i].uid);
    }
    if (i > 0 && peers[i].uid == peers[i - 1].uid) return invalid_argument("aggregate: uid {} twice", peers[i].uid);
  }
  // Dequantised values and norms, peer by peer in uid order.
  std::vector<std::vector<float>> values(peers.size());
  std::vector<double> norms(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const CompressedTensor& t = *peers[i].tensor;
    if (t.indices.size() != static_cast<std::size_t>(l.kept()) || t.codes.size() != t.indices.size()) {
      return data_loss("aggregate: uid {} has {} entries, the layout keeps {}", peers[i].uid, t.indices.size(),
                       l.kept());
    }
    values[i].resize(t.codes.size());
    dequantize2(t.quant, t.codes, values[i]);
    double sq = 0;
    for (float v : values[i]) {
      if (!std::isfinite(v)) return invalid_argument("aggregate: uid {} has a non-finite value", peers[i].uid);
      sq += static_cast<double>(v) * v;
    }
    norms[i] = std::sqrt(sq);
  }
  const double median = median_of(norms);
  std::vector<double> sum(out.size(), 0.0);
  std::vector<std::uint32_t> count(out.size(), 0);
  for (std::size_t i = 0; i < peers.size(); ++i) {
    double scale = norms[i] > median && norms[i] > 0 ? median / norms[i] : 1.0;
    const CompressedTensor& t = *peers[i].tensor;
    for (std::int64_t b = 0; b < l.num_blocks(); ++b) {
      for (int j = 0; j < l.k; ++j) {
        std::size_t at = static_cast<std::size_t>(b * l.k + j);
        if (t.indices[at] >= l.block_elems())
          return data_loss("aggregate: uid {} has an index outside its block", peers[i].uid);
        auto e = static_cast<std::size_t>(element_of(l, b, t.indices[at]));
        sum[e] += scale * values[i][at];
        ++count[e];
      }
    }
  }
  for (std::size_t e = 0; e < out.size(); ++e) {
    if (count[e] > 0) out[e] = static_cast<float>(sum[e] / count[e]);
  }
  return Status::ok();
}

}  // namespace crucible::kernels
