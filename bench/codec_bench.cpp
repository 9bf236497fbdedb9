// Codec throughput (parameters per second): crucible's CPU fast path against
// a plain reference written with libtorch tensor ops, in the same run.
//
//   codec_bench [--threads 2] [--repeat 3]
//
// Encode = top-k per block + 2-bit quantisation; decode = dense tensor from
// the kept values; aggregate = the §8 merge of 4 peers. Sizes: 1M, 25M, 100M
// parameters (one 2-D tensor each). Prints params/s of both and the ratio,
// and the wire bytes per parameter of one window's update.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/pack12.h"

namespace {

using namespace crucible::kernels;
using Clock = std::chrono::steady_clock;

template <typename F>
double median_seconds(int repeat, F f) {
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

torch::Tensor blocks_of(const torch::Tensor& x, const BlockLayout& l) {
  return x.view({l.blocks_down(), l.block_rows, l.blocks_across(), l.block_cols})
      .permute({0, 2, 1, 3})
      .reshape({l.num_blocks(), l.block_elems()});
}

struct RefEncoded {
  torch::Tensor idx;  // [nb, k]
  torch::Tensor q;    // [nb, k] codes
  torch::Tensor lookup;
  double shift;
};

RefEncoded ref_encode(const torch::Tensor& x, const BlockLayout& l) {
  auto b = blocks_of(x, l);
  auto idx = std::get<0>(std::get<1>(b.abs().topk(l.k, 1, true, false)).sort(1));
  auto v = b.gather(1, idx).to(torch::kFloat64);
  double shift = v.mean().item<double>();
  auto c = v - shift;
  double scale = 6.0 * (c.norm().item<double>() / std::sqrt(double(c.numel() - 1))) / 4.0;
  auto q = torch::clamp(torch::round(c / scale + 2), 0, 3);
  auto lookup = torch::zeros({4}, torch::kFloat64);
  for (int k = 0; k < 4; ++k) {
    auto m = q == k;
    if (m.any().item<bool>()) lookup[k] = c.masked_select(m).mean();
  }
  return {idx, q.to(torch::kInt64), lookup, shift};
}

torch::Tensor ref_decode(const RefEncoded& e, const BlockLayout& l) {
  auto values = (e.lookup.index_select(0, e.q.flatten()) + e.shift).to(torch::kFloat32).view(e.q.sizes());
  auto dense = torch::zeros({l.num_blocks(), l.block_elems()}, torch::kFloat32);
  dense.scatter_(1, e.idx, values);
  return dense.view({l.blocks_down(), l.blocks_across(), l.block_rows, l.block_cols})
      .permute({0, 2, 1, 3})
      .reshape({l.rows, l.cols});
}

torch::Tensor ref_aggregate(const std::vector<RefEncoded>& peers, const BlockLayout& l) {
  std::vector<torch::Tensor> dense;
  std::vector<double> norms;
  for (const auto& p : peers) {
    dense.push_back(ref_decode(p, l));
    norms.push_back(dense.back().to(torch::kFloat64).norm().item<double>());
  }
  double median = median_of(norms);
  auto sum = torch::zeros({l.rows, l.cols}, torch::kFloat64);
  auto count = torch::zeros({l.rows, l.cols}, torch::kFloat64);
  for (std::size_t i = 0; i < dense.size(); ++i) {
    double s = norms[i] > median ? median / norms[i] : 1.0;
    sum += dense[i].to(torch::kFloat64) * s;
    count += (dense[i] != 0).to(torch::kFloat64);
  }
  return (sum / count.clamp_min(1)).to(torch::kFloat32);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    if (a == "--repeat") repeat = std::atoi(argv[i + 1]);
  }
  torch::set_num_threads(threads);
  torch::manual_seed(1);
  fmt::print("threads {} (crucible and torch intra-op), median of {}\n\n", threads, repeat);
  fmt::print("| params | op | crucible Mparam/s | libtorch-ops Mparam/s | ratio |\n|---|---|---|---|---|\n");
  const std::vector<std::vector<std::int64_t>> shapes = {{1024, 1024}, {4096, 6144}, {10240, 10240}};
  std::vector<std::string> wire;
  for (const auto& shape : shapes) {
    auto l = layout_for(shape).value();
    const double n = static_cast<double>(l.rows * l.cols);
    const std::string label = fmt::format("{:.0f}M", n / 1e6);
    std::vector<torch::Tensor> xs;
    for (int p = 0; p < 4; ++p) xs.push_back(torch::randn({l.rows, l.cols}) * 0.01);
    std::span<const float> x0(xs[0].data_ptr<float>(), static_cast<std::size_t>(n));

    CompressedTensor c;
    double ours = median_seconds(repeat, [&] { c = compress(x0, shape, threads).value(); });
    RefEncoded r;
    double ref = median_seconds(repeat, [&] { r = ref_encode(xs[0], l); });
    fmt::print("| {} | encode | {:.1f} | {:.1f} | {:.2f}x |\n", label, n / ours / 1e6, n / ref / 1e6, ref / ours);

    std::vector<float> out(static_cast<std::size_t>(n));
    ours = median_seconds(repeat, [&] { (void)decompress(c, out); });
    ref = median_seconds(repeat, [&] { (void)ref_decode(r, l); });
    fmt::print("| {} | decode | {:.1f} | {:.1f} | {:.2f}x |\n", label, n / ours / 1e6, n / ref / 1e6, ref / ours);

    std::vector<CompressedTensor> peers;
    std::vector<RefEncoded> ref_peers;
    for (int p = 0; p < 4; ++p) {
      std::span<const float> xp(xs[static_cast<std::size_t>(p)].data_ptr<float>(), static_cast<std::size_t>(n));
      peers.push_back(compress(xp, shape, threads).value());
      ref_peers.push_back(ref_encode(xs[static_cast<std::size_t>(p)], l));
    }
    std::vector<PeerUpdate> updates;
    for (int p = 0; p < 4; ++p) updates.push_back({static_cast<std::uint16_t>(p), &peers[static_cast<std::size_t>(p)]});
    ours = median_seconds(repeat, [&] { (void)aggregate(updates, out); });
    ref = median_seconds(repeat, [&] { (void)ref_aggregate(ref_peers, l); });
    fmt::print("| {} | aggregate 4 peers | {:.1f} | {:.1f} | {:.2f}x |\n", label, n / ours / 1e6, n / ref / 1e6,
               ref / ours);
    std::fflush(stdout);

    double bytes = static_cast<double>(packed12_size(c.indices.size()) + packed2_size(c.codes.size()) + 24);
    wire.push_back(fmt::format("| {} | {} kept | {:.0f} bytes | {:.4f} bytes/param | {:.0f}x smaller than fp32 |",
                               label, c.indices.size(), bytes, bytes / n, 4 * n / bytes));
  }
  fmt::print(
      "\n| params | kept values | indices + codes + quant | per parameter | vs dense fp32 |\n|---|---|---|---|---|\n");
  for (const auto& w : wire) fmt::print("{}\n", w);
  return 0;
}
