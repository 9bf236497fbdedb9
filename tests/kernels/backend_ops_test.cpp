// Every op of the codec's backend API (kernels/backend.h) on every backend
// against a plain CPU reference written here, as ggml's test-backend-ops:
// the CPU backend on 1 and on 2 threads, and CUDA where this build has it
// and a device exists (elsewhere those tests say they are skipped, and
// why). Outputs sit between sentinel bytes that must survive the op. The
// tolerance is zero: indices, codes and packed bytes must be equal, and so
// must every float (Quant2, the error-feedback buffer, decode, merge),
// because every backend adds the same numbers in the same order without
// fused multiply-adds. An op a backend lacks is reported as not supported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codec_reference.h"
#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/backend.h"
#include "crucible/kernels/cuda.h"
#include "crucible/kernels/pack12.h"
#include "random_values.h"

namespace crucible::kernels {
namespace {

// ---- Buffers with sentinels, on any backend. ----
constexpr std::size_t kGuard = 64;
constexpr std::uint8_t kSentinel = 0xCD;

class Guarded {
 public:
  Guarded(Backend& b, const void* init, std::size_t bytes) : backend_(b), bytes_(bytes) {
    auto buf = b.alloc(bytes + 2 * kGuard);
    EXPECT_TRUE(buf.is_ok()) << buf.status();
    buf_ = std::move(*buf);
    std::vector<std::uint8_t> host(bytes + 2 * kGuard, kSentinel);
    if (init != nullptr && bytes > 0) std::memcpy(host.data() + kGuard, init, bytes);
    EXPECT_TRUE(b.upload(buf_, host.data(), host.size()).is_ok());
  }
  template <typename T>
  T* at() const {
    return reinterpret_cast<T*>(static_cast<std::uint8_t*>(buf_.data()) + kGuard);
  }
  // The bytes between the guards; a test failure if a guard changed.
  template <typename T>
  std::vector<T> read(const std::string& what) const {
    std::vector<std::uint8_t> host(bytes_ + 2 * kGuard);
    EXPECT_TRUE(backend_.download(host.data(), buf_, host.size()).is_ok());
    for (std::size_t i = 0; i < kGuard; ++i) {
      EXPECT_EQ(host[i], kSentinel) << what << ": wrote before its buffer";
      EXPECT_EQ(host[kGuard + bytes_ + i], kSentinel) << what << ": wrote past its buffer";
    }
    std::vector<T> out(bytes_ / sizeof(T));
    if (bytes_ > 0) std::memcpy(out.data(), host.data() + kGuard, bytes_);
    return out;
  }

 private:
  Backend& backend_;
  Buffer buf_;
  std::size_t bytes_;
};

template <typename T>
Guarded put(Backend& b, const std::vector<T>& v) {
  return Guarded(b, v.data(), v.size() * sizeof(T));
}
template <typename T>
Guarded space(Backend& b, std::size_t n) {
  return Guarded(b, nullptr, n * sizeof(T));
}

// Float vectors equal bit for bit (NaNs included); the first difference named.
::testing::AssertionResult same_floats(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " values, want " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], 4) != 0) {
      return ::testing::AssertionFailure() << "at " << i << ": " << got[i] << ", want " << want[i] << " (difference "
                                           << std::abs(double(got[i]) - double(want[i])) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

void expect_same_quant(const Quant2& got, const Quant2& want) {
  EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0)
      << "shift " << got.shift << "/" << want.shift << " scale " << got.scale << "/" << want.scale << " lookup "
      << got.lookup[0] << "," << got.lookup[1] << "," << got.lookup[2] << "," << got.lookup[3] << " / "
      << want.lookup[0] << "," << want.lookup[1] << "," << want.lookup[2] << "," << want.lookup[3];
}

const std::vector<std::vector<std::int64_t>> kShapes = {{256, 192},  {100, 1000}, {4096},   {7, 64},
                                                        {2, 3, 128}, {3},         {130, 66}};

using testing::random_values;

// ---- The backends under test. ----
std::unique_ptr<Backend> backend_named(const std::string& name, std::string& why_not) {
  if (name == "cpu:1") return cpu_backend(1);
  if (name == "cpu:2") return cpu_backend(2);
  if (!cuda::built()) {
    why_not = "this build has no CUDA kernels (CRUCIBLE_CUDA=OFF)";
    return nullptr;
  }
  auto b = cuda_backend(0);
  if (!b.is_ok()) {
    why_not = fmt::format("no CUDA device on this machine ({})", b.status().message());
    return nullptr;
  }
  return std::move(*b);
}

class BackendOps : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    backend_ = backend_named(GetParam(), why);
    if (!backend_) GTEST_SKIP() << GetParam() << ": " << why;
  }
  // False, after saying so, when the backend lacks the op.
  bool supported(Op op) {
    if (backend_->supports(op)) return true;
    std::printf("backend %s: op %s: not supported\n", backend_->name().c_str(), std::string(name(op)).c_str());
    return false;
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(BackendOps, TopK) {
  if (!supported(Op::kTopK)) return;
  Backend& b = *backend_;
  for (std::size_t s = 0; s < kShapes.size(); ++s) {
    const auto l = layout_for(kShapes[s]).value();
    SCOPED_TRACE(fmt::format("shape {} ({}x{} blocks of {}x{}, k {})", s, l.blocks_down(), l.blocks_across(),
                             l.block_rows, l.block_cols, l.k));
    auto x = random_values(static_cast<std::size_t>(l.rows * l.cols), 10 + static_cast<std::uint32_t>(s));
    if (s == 0) {  // ties, zeros of both signs and a NaN: the order is still total
      for (std::size_t i = 0; i < 2000; ++i) x[i] = (i % 3 == 0) ? 0.5f : -0.5f;
      x[3000] = -0.0f;
      x[7000] = std::numeric_limits<float>::quiet_NaN();
    }
    ref::Encoded want;
    ref::topk(x, l, want);
    auto in = put(b, x);
    auto idx = space<std::uint16_t>(b, want.indices.size());
    auto val = space<float>(b, want.values.size());
    ASSERT_TRUE(b.topk({in.at<float>(), l, idx.at<std::uint16_t>(), val.at<float>()}).is_ok());
    EXPECT_EQ(idx.read<std::uint16_t>("indices"), want.indices);
    EXPECT_TRUE(same_floats(val.read<float>("values"), want.values));
  }
}

TEST_P(BackendOps, Quantize2) {
  if (!supported(Op::kQuantize2)) return;
  Backend& b = *backend_;
  for (std::size_t per : {std::size_t{0}, std::size_t{2}, std::size_t{64}, std::size_t{50}}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{8}, std::size_t{640}, std::size_t{50'000}}) {
      SCOPED_TRACE(fmt::format("{} values in runs of {}", n, per));
      auto v = random_values(n, static_cast<std::uint32_t>(n + per), 0.01f);
      std::vector<std::uint8_t> want_codes;
      const Quant2 want = ref::quantize(v, per, want_codes);
      auto in = put(b, v);
      auto codes = space<std::uint8_t>(b, n);
      Quant2 got;
      ASSERT_TRUE(b.quantize2({in.at<float>(), n, per, codes.at<std::uint8_t>(), &got}).is_ok());
      EXPECT_EQ(codes.read<std::uint8_t>("codes"), want_codes);
      expect_same_quant(got, want);
    }
  }
}

TEST_P(BackendOps, Encode) {
  if (!supported(Op::kEncode)) return;
  Backend& b = *backend_;
  for (std::size_t s = 0; s < kShapes.size(); ++s) {
    const auto l = layout_for(kShapes[s]).value();
    SCOPED_TRACE(fmt::format("shape {}", s));
    const auto n = static_cast<std::size_t>(l.rows * l.cols);
    auto ef = random_values(n, 100 + static_cast<std::uint32_t>(s), 0.001f);
    const auto delta = random_values(n, 200 + static_cast<std::uint32_t>(s), 0.01f);
    auto want_ef = ef;
    const auto want = ref::encode(want_ef, delta, 0.9f, l);
    auto e = put(b, ef);
    auto d = put(b, delta);
    auto idx = space<std::uint16_t>(b, want.indices.size());
    auto codes = space<std::uint8_t>(b, want.codes.size());
    Quant2 q;
    Status st =
        b.encode({e.at<float>(), d.at<float>(), 0.9f, l, idx.at<std::uint16_t>(), codes.at<std::uint8_t>(), &q});
    ASSERT_TRUE(st.is_ok()) << st;
    EXPECT_EQ(idx.read<std::uint16_t>("indices"), want.indices);
    EXPECT_EQ(codes.read<std::uint8_t>("codes"), want.codes);
    expect_same_quant(q, want.quant);
    EXPECT_TRUE(same_floats(e.read<float>("error feedback"), want_ef));
  }
}

TEST_P(BackendOps, EncodeRefusesANonFiniteDeltaAndKeepsTheBuffer) {
  if (!supported(Op::kEncode)) return;
  Backend& b = *backend_;
  const auto l = layout_for(std::vector<std::int64_t>{256, 192}).value();
  const auto n = static_cast<std::size_t>(l.rows * l.cols);
  const auto ef = random_values(n, 1, 0.001f);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    auto delta = random_values(n, 2, 0.01f);
    delta[n - 7] = bad;  // the last strip: after everything before it could have been written
    auto e = put(b, ef);
    auto d = put(b, delta);
    auto idx = space<std::uint16_t>(b, static_cast<std::size_t>(l.kept()));
    auto codes = space<std::uint8_t>(b, static_cast<std::size_t>(l.kept()));
    Quant2 q;
    Status st =
        b.encode({e.at<float>(), d.at<float>(), 0.9f, l, idx.at<std::uint16_t>(), codes.at<std::uint8_t>(), &q});
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find(std::to_string(n - 7)), std::string::npos) << st;
    EXPECT_TRUE(same_floats(e.read<float>("error feedback"), ef)) << "the buffer changed";
  }
}

TEST_P(BackendOps, Decode) {
  if (!supported(Op::kDecode)) return;
  Backend& b = *backend_;
  for (std::size_t s = 0; s < kShapes.size(); ++s) {
    const auto l = layout_for(kShapes[s]).value();
    SCOPED_TRACE(fmt::format("shape {}", s));
    auto ef = random_values(static_cast<std::size_t>(l.rows * l.cols), 300 + static_cast<std::uint32_t>(s));
    const auto enc = ref::encode(ef, std::vector<float>(ef.size(), 0.0f), 1.0f, l);
    const auto want = ref::dense(l, enc.indices, enc.codes, enc.quant);
    auto idx = put(b, enc.indices);
    auto codes = put(b, enc.codes);
    auto out = Guarded(b, std::vector<float>(want.size(), 7.0f).data(), want.size() * 4);  // every value rewritten
    ASSERT_TRUE(b.decode({l, idx.at<std::uint16_t>(), codes.at<std::uint8_t>(), enc.quant, out.at<float>()}).is_ok());
    EXPECT_TRUE(same_floats(out.read<float>("decoded"), want));
  }
}

TEST_P(BackendOps, DecodeRefusesIndicesOutsideOrOutOfOrder) {
  if (!supported(Op::kDecode)) return;
  Backend& b = *backend_;
  const auto l = layout_for(std::vector<std::int64_t>{64, 64}).value();
  std::vector<std::uint16_t> base(static_cast<std::size_t>(l.kept()));
  std::iota(base.begin(), base.end(), 0);
  const std::vector<std::uint8_t> codes(base.size(), 1);
  for (int kind = 0; kind < 2; ++kind) {
    auto bad = base;
    if (kind == 0)
      bad.back() = 4096;  // outside the block
    else
      std::swap(bad[5], bad[6]);  // not ascending
    auto idx = put(b, bad);
    auto c = put(b, codes);
    auto out = space<float>(b, 4096);
    EXPECT_EQ(b.decode({l, idx.at<std::uint16_t>(), c.at<std::uint8_t>(), Quant2{}, out.at<float>()}).code(),
              StatusCode::kDataLoss)
        << kind;
  }
}

TEST_P(BackendOps, Merge) {
  if (!supported(Op::kMerge)) return;
  Backend& b = *backend_;
  for (std::size_t s = 0; s < kShapes.size(); ++s) {
    const auto l = layout_for(kShapes[s]).value();
    SCOPED_TRACE(fmt::format("shape {}", s));
    for (int n_peers : {1, 2, 15}) {
      std::vector<ref::Peer> peers;
      for (int p = 0; p < n_peers; ++p) {
        // One loud peer, to be clipped to the median.
        const float scale = p == 1 ? 50.0f : 1.0f;
        auto x =
            random_values(static_cast<std::size_t>(l.rows * l.cols), 1000 * static_cast<std::uint32_t>(s) + p, scale);
        // Uids out of order: the merge sorts them.
        peers.push_back(
            {static_cast<std::uint16_t>((p * 7919) % 101), ref::encode(x, std::vector<float>(x.size()), 1.0f, l)});
      }
      const auto want = ref::merge(peers, l);
      std::vector<Guarded> idx, codes;
      for (const auto& p : peers) {
        idx.push_back(put(b, p.e.indices));
        codes.push_back(put(b, p.e.codes));
      }
      std::vector<MergePeer> mp;
      for (std::size_t p = 0; p < peers.size(); ++p) {
        mp.push_back({peers[p].uid, idx[p].at<std::uint16_t>(), codes[p].at<std::uint8_t>(), peers[p].e.quant});
      }
      auto out = Guarded(b, std::vector<float>(want.size(), 7.0f).data(), want.size() * 4);
      Status st = b.merge({l, mp, out.at<float>()});
      ASSERT_TRUE(st.is_ok()) << st;
      EXPECT_TRUE(same_floats(out.read<float>("merged"), want)) << n_peers << " peers";
    }
  }
}

TEST_P(BackendOps, MergeRefusesTwiceTheSameUid) {
  if (!supported(Op::kMerge)) return;
  Backend& b = *backend_;
  const auto l = layout_for(std::vector<std::int64_t>{64, 64}).value();
  auto x = random_values(4096, 5);
  const auto e = ref::encode(x, std::vector<float>(4096), 1.0f, l);
  auto idx = put(b, e.indices);
  auto codes = put(b, e.codes);
  const std::vector<MergePeer> mp = {{3, idx.at<std::uint16_t>(), codes.at<std::uint8_t>(), e.quant},
                                     {3, idx.at<std::uint16_t>(), codes.at<std::uint8_t>(), e.quant}};
  auto out = space<float>(b, 4096);
  EXPECT_EQ(b.merge({l, mp, out.at<float>()}).code(), StatusCode::kInvalidArgument);
}

TEST_P(BackendOps, Pack12) {
  if (!supported(Op::kPack12)) return;
  Backend& b = *backend_;
  std::mt19937 rng(11);
  for (std::size_t n : {1u, 2u, 129u, 1u << 16}) {
    std::vector<std::uint16_t> v(n);
    for (auto& i : v) i = static_cast<std::uint16_t>(rng() % 4096);
    const auto want = ref::pack12(v);
    auto in = put(b, v);
    auto out = space<std::uint8_t>(b, packed12_size(n));
    ASSERT_TRUE(b.pack12({in.at<std::uint16_t>(), n, out.at<std::uint8_t>()}).is_ok());
    EXPECT_EQ(out.read<std::uint8_t>("packed"), want) << n;
  }
  const std::vector<std::uint16_t> bad = {5000};
  auto in = put(b, bad);
  auto out = space<std::uint8_t>(b, 3);
  EXPECT_EQ(b.pack12({in.at<std::uint16_t>(), 1, out.at<std::uint8_t>()}).code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Every, BackendOps, ::testing::Values("cpu:1", "cpu:2", "cuda:0"), [](const auto& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), ':', '_');
  return n;
});

// Where data lives decides the backend: host memory is the CPU's.
TEST(BackendDiscovery, TheCpuIsAlwaysThereAndHostMemoryIsHost) {
  auto all = available_backends(2);
  ASSERT_GE(all.size(), 1u);
  EXPECT_EQ(all[0]->name(), "cpu");
  EXPECT_EQ(all[0]->memory(), Memory::kHost);
  std::vector<float> v(16);
  EXPECT_EQ(memory_of(v.data()), Memory::kHost);
  for (const auto& b : all) {
    for (Op op : kAllOps) {
      if (!b->supports(op))
        std::printf("backend %s: op %s: not supported\n", b->name().c_str(), std::string(name(op)).c_str());
    }
    if (b->memory() == Memory::kCuda) {
      auto buf = b->alloc(64);
      ASSERT_TRUE(buf.is_ok());
      EXPECT_EQ(memory_of(buf->data()), Memory::kCuda);
    }
  }
}

// The span API (error_feedback_step, decompress, aggregate) is the CPU
// backend's: the same bytes as the reference for every thread count.
TEST(BackendDiscovery, TheSpanApiIsTheCpuBackend) {
  const std::vector<std::int64_t> shape = {256, 192};
  const auto l = layout_for(shape).value();
  auto ef = random_values(256 * 192, 9, 0.001f);
  const auto delta = random_values(256 * 192, 10, 0.01f);
  auto want_ef = ef;
  const auto want = ref::encode(want_ef, delta, 0.5f, l);
  for (int threads : {1, 2, 0}) {
    auto e = ef;
    auto c = error_feedback_step(e, delta, shape, 0.5f, threads);
    ASSERT_TRUE(c.is_ok()) << c.status();
    EXPECT_EQ(c->indices, want.indices);
    EXPECT_EQ(c->codes, want.codes);
    expect_same_quant(c->quant, want.quant);
    EXPECT_TRUE(same_floats(e, want_ef)) << threads;
    std::vector<float> out(e.size());
    ASSERT_TRUE(decompress(*c, out, threads).is_ok());
    EXPECT_TRUE(same_floats(out, ref::dense(l, want.indices, want.codes, want.quant)));
  }
}

}  // namespace
}  // namespace crucible::kernels
