// The codec against the machine and against libtorch, in one run.
//
//   codec_bench [--set llama|1b|all] [--threads 2] [--repeat 3] [--peers 15] [--device cpu|cuda]
//
// First a plain copy measures the memory bandwidth (bytes read + written
// per second, on --threads threads). Then, on a parameter set of many
// tensors (llama: a LLaMA-like model of dim 512, 25M parameters; 1b: dim
// 2048, 1.0B parameters), tensor by tensor:
//   encode  the error-feedback step with compression (kernels::error_feedback_step:
//           e = beta*e + delta, top-k per block, 2-bit codes, e -= sent):
//           reads delta and e, writes e: 12 bytes per parameter at least;
//   decode  a dense tensor from one compressed tensor: writes 4 bytes/param;
//   merge   the §8 merge of --peers peers into a dense tensor: 4 bytes/param;
// each against the same computation written with libtorch tensor ops (the
// reference: view/permute into blocks, abs().topk, sort, gather, round,
// masked_select, scatter_, dense double sums), on the same threads. Prints
// parameters/s, the ratio to the reference, and the fraction of the
// bandwidth bound (copy bandwidth / bytes per parameter). Last, whether
// encode gives the same bytes on 1 thread and on --threads.
//
// --device cuda (a libtorch with CUDA and a GPU): the same on the device,
// crucible's CUDA backend against the same libtorch ops on CUDA tensors
// (torch.topk etc.), bandwidth from a device-to-device copy, and whether
// the GPU's encode gives the CPU's bytes.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "crucible/common/tensor_spec.h"
#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/backend.h"
#include "crucible/kernels/pack12.h"
#include "random_update.h"

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

using Spec = crucible::model::TensorSpec;

// A LLaMA-like model's matrices and norms: per layer q, k, v, o [dim, dim],
// gate and up [4 dim, dim], down [dim, 4 dim], two norms [dim].
std::vector<Spec> llama_like(std::int64_t dim, int layers) {
  std::vector<Spec> s;
  for (int l = 0; l < layers; ++l) {
    for (const char* m : {"q", "k", "v", "o"}) s.push_back({fmt::format("l{}.{}", l, m), {dim, dim}});
    s.push_back({fmt::format("l{}.gate", l), {4 * dim, dim}});
    s.push_back({fmt::format("l{}.up", l), {4 * dim, dim}});
    s.push_back({fmt::format("l{}.down", l), {dim, 4 * dim}});
    s.push_back({fmt::format("l{}.attn_norm", l), {dim}});
    s.push_back({fmt::format("l{}.mlp_norm", l), {dim}});
  }
  s.push_back({"norm", {dim}});
  return s;
}

// Bytes read + written per second by memcpy of a large buffer on `threads` threads.
double copy_bandwidth(int threads, int repeat) {
  const std::size_t n = std::size_t{1} << 28;  // 256 MiB each way
  std::vector<char> a(n, 1), b(n, 0);
  const double s = median_seconds(repeat + 2, [&] {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const std::size_t first = n * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
        const std::size_t last = n * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads);
        std::memcpy(b.data() + first, a.data() + first, last - first);
      });
    }
    for (auto& th : pool) th.join();
  });
  if (b[n / 2] != 1) std::abort();
  return 2.0 * static_cast<double>(n) / s;
}

torch::Tensor blocks_of(const torch::Tensor& x, const BlockLayout& l) {
  return x.view({l.blocks_down(), l.block_rows, l.blocks_across(), l.block_cols})
      .permute({0, 2, 1, 3})
      .reshape({l.num_blocks(), l.block_elems()});
}

torch::Tensor unblock(const torch::Tensor& b, const BlockLayout& l) {
  return b.view({l.blocks_down(), l.blocks_across(), l.block_rows, l.block_cols})
      .permute({0, 2, 1, 3})
      .reshape({l.rows, l.cols});
}

struct RefEncoded {
  torch::Tensor idx;     // [nb, k]
  torch::Tensor codes;   // [nb, k]
  torch::Tensor lookup;  // [4] double
  double shift = 0;
};

torch::Tensor ref_dense_on(const RefEncoded& e, const BlockLayout& l, torch::Device device) {
  auto values = (e.lookup.index_select(0, e.codes.flatten()) + e.shift).to(torch::kFloat32).view(e.codes.sizes());
  auto dense = torch::zeros({l.num_blocks(), l.block_elems()}, torch::TensorOptions().device(device));
  dense.scatter_(1, e.idx, values);
  return unblock(dense, l);
}

torch::Tensor ref_dense(const RefEncoded& e, const BlockLayout& l) { return ref_dense_on(e, l, e.idx.device()); }

// The error-feedback step in libtorch ops (the reference for encode).
RefEncoded ref_encode(torch::Tensor& ef, const torch::Tensor& delta, double beta, const BlockLayout& l) {
  ef.mul_(beta).add_(delta);
  auto b = blocks_of(ef.view({l.rows, l.cols}), l);
  auto idx = std::get<0>(std::get<1>(b.abs().topk(l.k, 1, true, false)).sort(1));
  auto v = b.gather(1, idx).to(torch::kFloat64);
  const double shift = v.mean().item<double>();
  auto c = v - shift;
  const double scale = 6.0 * (c.norm().item<double>() / std::sqrt(double(c.numel() - 1))) / 4.0;
  auto q = torch::clamp(torch::round(c / scale + 2), 0, 3);
  auto lookup = torch::zeros({4}, torch::TensorOptions().dtype(torch::kFloat64).device(ef.device()));
  for (int k = 0; k < 4; ++k) {
    auto m = q == k;
    if (m.any().item<bool>()) lookup[k] = c.masked_select(m).mean();
  }
  RefEncoded r{idx, q.to(torch::kInt64), lookup, shift};
  ef.view({l.rows, l.cols}).sub_(ref_dense(r, l));
  return r;
}

torch::Tensor ref_merge(const std::vector<RefEncoded>& peers, const BlockLayout& l) {
  std::vector<torch::Tensor> dense;
  std::vector<double> norms;
  for (const auto& p : peers) {
    dense.push_back(ref_dense(p, l));
    norms.push_back(dense.back().to(torch::kFloat64).norm().item<double>());
  }
  const double median = median_of(norms);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(peers[0].idx.device());
  auto sum = torch::zeros({l.rows, l.cols}, opts);
  auto count = torch::zeros({l.rows, l.cols}, opts);
  for (std::size_t i = 0; i < dense.size(); ++i) {
    const double s = norms[i] > median ? median / norms[i] : 1.0;
    sum += dense[i].to(torch::kFloat64) * s;
    count += (dense[i] != 0).to(torch::kFloat64);
  }
  return (sum / count.clamp_min(1)).to(torch::kFloat32);
}

// A peer's update as it would arrive (random_update.h), of a plausible size.
CompressedTensor random_peer(const BlockLayout& l, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  return crucible::bench::random_update(l, rng, u(rng) * 0.01f);
}

RefEncoded ref_of(const CompressedTensor& c) {
  const auto& l = c.layout;
  auto idx = torch::empty({l.num_blocks(), l.k}, torch::kInt64);
  auto codes = torch::empty({l.num_blocks(), l.k}, torch::kInt64);
  for (std::size_t i = 0; i < c.indices.size(); ++i) {
    idx.data_ptr<std::int64_t>()[i] = c.indices[i];
    codes.data_ptr<std::int64_t>()[i] = c.codes[i];
  }
  auto lookup = torch::empty({4}, torch::kFloat64);
  for (int b = 0; b < 4; ++b) lookup[b] = static_cast<double>(c.quant.lookup[static_cast<std::size_t>(b)]);
  return {idx, codes, lookup, static_cast<double>(c.quant.shift)};
}

struct Row {
  double ours = 0, ref = 0;  // seconds, summed over tensors
};

void run_set(const std::string& set, const std::vector<Spec>& specs, int threads, int repeat, int peers,
             double bandwidth) {
  std::int64_t total = 0;
  for (const auto& s : specs) total += s.numel();
  fmt::print("\n## {}: {} tensors, {:.1f}M parameters\n\n", set, specs.size(), static_cast<double>(total) / 1e6);
  std::fflush(stdout);
  const float beta = 0.95f;
  Row enc, dec, merge;
  std::mt19937_64 rng(7);
  bool identical = true;
  double wire = 0;  // bytes of one window's update: 12-bit indices, 2-bit codes, 24 bytes of Quant2 per tensor
  for (const auto& spec : specs) {
    const auto l = layout_for(spec.shape).value();
    const auto n = static_cast<std::size_t>(spec.numel());
    wire += static_cast<double>(packed12_size(static_cast<std::size_t>(l.kept())) +
                                packed2_size(static_cast<std::size_t>(l.kept())) + 24);
    auto delta = torch::randn({spec.numel()}) * 0.01;
    auto ef = torch::randn({spec.numel()}) * 0.001;
    auto ef_ref = ef.clone();
    std::span<const float> d(delta.data_ptr<float>(), n);
    std::span<float> e(ef.data_ptr<float>(), n);

    // Same bytes on 1 thread as on `threads` (on a copy, first).
    {
      auto e1 = ef.clone(), e2 = ef.clone();
      auto a = error_feedback_step({e1.data_ptr<float>(), n}, d, spec.shape, beta, 1).value();
      auto b = error_feedback_step({e2.data_ptr<float>(), n}, d, spec.shape, beta, threads).value();
      identical = identical && a.indices == b.indices && a.codes == b.codes &&
                  std::memcmp(&a.quant, &b.quant, sizeof a.quant) == 0 && torch::equal(e1, e2);
    }
    CompressedTensor c;
    enc.ours += median_seconds(repeat, [&] { c = error_feedback_step(e, d, spec.shape, beta, threads).value(); });
    RefEncoded r;
    enc.ref += median_seconds(repeat, [&] { r = ref_encode(ef_ref, delta, beta, l); });

    std::vector<float> out(n);
    dec.ours += median_seconds(repeat, [&] { (void)decompress(c, out, threads); });
    dec.ref += median_seconds(repeat, [&] { (void)ref_dense(r, l); });

    std::vector<CompressedTensor> ps;
    std::vector<RefEncoded> refs;
    for (int p = 0; p < peers; ++p) {
      ps.push_back(random_peer(l, rng));
      refs.push_back(ref_of(ps.back()));
    }
    std::vector<PeerUpdate> updates;
    for (int p = 0; p < peers; ++p)
      updates.push_back({static_cast<std::uint16_t>(p), &ps[static_cast<std::size_t>(p)]});
    merge.ours += median_seconds(repeat, [&] { (void)aggregate(updates, out, threads); });
    merge.ref += median_seconds(repeat, [&] { (void)ref_merge(refs, l); });
  }
  const double n = static_cast<double>(total);
  fmt::print("| op | bytes/param | crucible Mparam/s | libtorch-ops Mparam/s | vs libtorch | of bandwidth bound |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  auto line = [&](const char* op, double bytes, const Row& r) {
    const double bound = bandwidth / bytes;  // params/s if only memory counted
    fmt::print("| {} | {:.0f} | {:.1f} | {:.1f} | {:.2f}x | {:.0f}% |\n", op, bytes, n / r.ours / 1e6, n / r.ref / 1e6,
               r.ref / r.ours, 100.0 * (n / r.ours) / bound);
  };
  line("encode (error feedback + compress)", 12, enc);
  line("decode", 4, dec);
  line(fmt::format("merge {} peers", peers).c_str(), 4, merge);
  fmt::print("\nencode on 1 thread and on {} threads: {}\n", threads,
             identical ? "the same bytes" : "DIFFERENT BYTES (a bug)");
  fmt::print("one window's update on the wire: {:.0f} bytes, {:.4f} bytes/param ({:.0f}x smaller than fp32)\n", wire,
             wire / n, 4 * n / wire);
  std::fflush(stdout);
}

// Waits for the device: a one-element read back is a synchronising copy.
void sync(const torch::Tensor& t) { (void)t.flatten()[0].item<float>(); }

double device_copy_bandwidth(int repeat) {
  auto a = torch::ones({std::int64_t{1} << 28}, torch::TensorOptions().device(torch::kCUDA));
  auto b = torch::zeros_like(a);
  sync(b);
  const double s = median_seconds(repeat + 2, [&] {
    b.copy_(a);
    sync(b);
  });
  return 2.0 * 4.0 * static_cast<double>(a.numel()) / s;
}

// The GPU's encode against the CPU backend's on the same input: the same
// indices, codes, quantiser and error feedback (the GPU's bytes land in
// idx, codes and q).
bool encodes_alike(Backend& gpu, Backend& cpu, const torch::Tensor& ef, const torch::Tensor& delta, float beta,
                   const BlockLayout& l, torch::Tensor& idx, torch::Tensor& codes, Quant2& q) {
  const auto kept = static_cast<std::size_t>(l.kept());
  auto e_cpu = ef.cpu();
  auto d_cpu = delta.cpu();
  std::vector<std::uint16_t> ci(kept);
  std::vector<std::uint8_t> cc(kept);
  Quant2 cq;
  (void)cpu.encode({e_cpu.data_ptr<float>(), d_cpu.data_ptr<float>(), beta, l, ci.data(), cc.data(), &cq});
  auto e_gpu = ef.clone();
  auto* idx_p = reinterpret_cast<std::uint16_t*>(idx.data_ptr<std::int16_t>());
  (void)gpu.encode(
      {e_gpu.data_ptr<float>(), delta.data_ptr<float>(), beta, l, idx_p, codes.data_ptr<std::uint8_t>(), &q});
  auto gi = idx.cpu();
  auto gc = codes.cpu();
  return std::memcmp(ci.data(), gi.data_ptr<std::int16_t>(), kept * 2) == 0 &&
         std::memcmp(cc.data(), gc.data_ptr<std::uint8_t>(), kept) == 0 && std::memcmp(&cq, &q, sizeof q) == 0 &&
         torch::equal(e_cpu, e_gpu.cpu());
}

// The merge of `peers` random packets on the GPU backend against libtorch
// ops on the same device, added to `merge`.
void time_merge_cuda(Backend& b, const BlockLayout& l, int peers, int repeat, std::mt19937_64& rng, torch::Tensor& out,
                     Row& merge) {
  const auto kept = static_cast<std::int64_t>(l.kept());
  std::vector<torch::Tensor> keep;  // the peers' device copies
  std::vector<MergePeer> mp;
  std::vector<RefEncoded> refs;
  for (int p = 0; p < peers; ++p) {
    auto c = random_peer(l, rng);
    auto pi = torch::from_blob(c.indices.data(), {kept}, torch::kInt16).to(torch::kCUDA);
    auto pc = torch::from_blob(c.codes.data(), {kept}, torch::kUInt8).to(torch::kCUDA);
    mp.push_back({static_cast<std::uint16_t>(p), reinterpret_cast<const std::uint16_t*>(pi.data_ptr<std::int16_t>()),
                  pc.data_ptr<std::uint8_t>(), c.quant});
    keep.push_back(pi);
    keep.push_back(pc);
    auto rr = ref_of(c);
    refs.push_back({rr.idx.to(torch::kCUDA), rr.codes.to(torch::kCUDA), rr.lookup.to(torch::kCUDA), rr.shift});
  }
  merge.ours += median_seconds(repeat, [&] { (void)b.merge({l, mp, out.data_ptr<float>()}); });
  merge.ref += median_seconds(repeat, [&] { sync(ref_merge(refs, l)); });
}

void run_set_cuda(const std::string& set, const std::vector<Spec>& specs, int repeat, int peers, double bandwidth) {
  auto gpu = cuda_backend(0);
  if (!gpu.is_ok()) {
    fmt::print("cuda backend: {}\n", gpu.status().to_string());
    return;
  }
  Backend& b = **gpu;
  auto cpu = cpu_backend(0);
  std::int64_t total = 0;
  for (const auto& s : specs) total += s.numel();
  fmt::print("\n## {} on {}: {} tensors, {:.1f}M parameters\n\n", set, b.name(), specs.size(),
             static_cast<double>(total) / 1e6);
  std::fflush(stdout);
  const auto on_gpu = torch::TensorOptions().device(torch::kCUDA);
  const float beta = 0.95f;
  Row enc, dec, merge;
  std::mt19937_64 rng(7);
  bool identical = true;
  for (const auto& spec : specs) {
    const auto l = layout_for(spec.shape).value();
    const auto kept = static_cast<std::size_t>(l.kept());
    auto delta = (torch::randn({spec.numel()}) * 0.01).to(torch::kCUDA);
    auto ef = (torch::randn({spec.numel()}) * 0.001).to(torch::kCUDA);
    auto ef_ref = ef.clone();
    auto idx = torch::empty({static_cast<std::int64_t>(kept)}, on_gpu.dtype(torch::kInt16));
    auto codes = torch::empty({static_cast<std::int64_t>(kept)}, on_gpu.dtype(torch::kUInt8));
    auto* idx_p = reinterpret_cast<std::uint16_t*>(idx.data_ptr<std::int16_t>());
    Quant2 q;
    identical = encodes_alike(b, *cpu, ef, delta, beta, l, idx, codes, q) && identical;
    enc.ours += median_seconds(repeat, [&] {
      (void)b.encode(
          {ef.data_ptr<float>(), delta.data_ptr<float>(), beta, l, idx_p, codes.data_ptr<std::uint8_t>(), &q});
    });
    RefEncoded r;
    enc.ref += median_seconds(repeat, [&] {
      r = ref_encode(ef_ref, delta, beta, l);
      sync(ef_ref);
    });
    auto out = torch::empty({spec.numel()}, on_gpu);
    dec.ours += median_seconds(repeat, [&] {
      (void)b.decode({l, idx_p, codes.data_ptr<std::uint8_t>(), q, out.data_ptr<float>()});
    });
    dec.ref += median_seconds(repeat, [&] { sync(ref_dense_on(r, l, torch::kCUDA)); });
    time_merge_cuda(b, l, peers, repeat, rng, out, merge);
  }
  const double n = static_cast<double>(total);
  fmt::print("| op | bytes/param | crucible Mparam/s | libtorch-ops Mparam/s | vs libtorch | of bandwidth bound |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  auto line = [&](const std::string& op, double bytes, const Row& r) {
    fmt::print("| {} | {:.0f} | {:.1f} | {:.1f} | {:.2f}x | {:.0f}% |\n", op, bytes, n / r.ours / 1e6, n / r.ref / 1e6,
               r.ref / r.ours, 100.0 * (n / r.ours) / (bandwidth / bytes));
  };
  line("encode (error feedback + compress)", 12, enc);
  line("decode", 4, dec);
  line(fmt::format("merge {} peers", peers), 4, merge);
  fmt::print("\nencode on the GPU and on the CPU: {}\n", identical ? "the same bytes" : "DIFFERENT BYTES (a bug)");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeat = 3, peers = 15;
  std::string set = "llama", device = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (a == "--repeat")
      repeat = std::atoi(argv[i + 1]);
    else if (a == "--peers")
      peers = std::atoi(argv[i + 1]);
    else if (a == "--set")
      set = argv[i + 1];
    else if (a == "--device")
      device = argv[i + 1];
    else {
      fmt::print(
          stderr,
          "usage: codec_bench [--set llama|1b|all] [--threads N] [--repeat N] [--peers N] [--device cpu|cuda]\n");
      return 2;
    }
  }
  torch::set_num_threads(threads);
  torch::manual_seed(1);
  if (device == "cuda") {
    if (!torch::cuda::is_available()) {
      fmt::print(stderr, "codec_bench: --device cuda, but this libtorch has no CUDA or no GPU is visible\n");
      return 1;
    }
    const double bw = device_copy_bandwidth(repeat);
    fmt::print("device copy bandwidth (read + write): {:.1f} GB/s; median of {} per tensor\n", bw / 1e9, repeat);
    if (set == "llama" || set == "all")
      run_set_cuda("llama (dim 512, 6 layers)", llama_like(512, 6), repeat, peers, bw);
    if (set == "1b" || set == "all") run_set_cuda("1b (dim 2048, 15 layers)", llama_like(2048, 15), repeat, peers, bw);
    return 0;
  }
  const double bw = copy_bandwidth(threads, repeat);
  fmt::print("threads {} (crucible and torch intra-op), median of {} per tensor\n", threads, repeat);
  fmt::print("copy bandwidth (read + write, {} threads): {:.1f} GB/s\n", threads, bw / 1e9);
  if (set == "llama" || set == "all")
    run_set("llama (dim 512, 6 layers)", llama_like(512, 6), threads, repeat, peers, bw);
  if (set == "1b" || set == "all")
    run_set("1b (dim 2048, 15 layers)", llama_like(2048, 15), threads, repeat, peers, bw);
  return 0;
}
