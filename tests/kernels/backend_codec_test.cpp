// The codec steps a node runs on its device's backend (backend_codec.h):
// error feedback with compression, decode and the 15-peer merge give the
// same bytes as the host functions on every backend, and a refused step
// changes nothing. A device backend is played by FakeDevice: host memory
// that poses as a device's, whose ops refuse any pointer outside the
// buffers it handed out, so the staging must upload every input and bring
// back every output as a real device needs. The real CUDA backend runs the
// same tests where a GPU exists.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include "codec_reference.h"
#include "crucible/kernels/backend_codec.h"
#include "crucible/kernels/cuda.h"
#include "random_values.h"

namespace crucible::kernels {
namespace {

// The ranges every FakeDevice handed out (Buffer frees with a plain function).
std::mutex g_mutex;
std::set<std::pair<const char*, std::size_t>> g_allocated;

void fake_free(void* p) {
  std::lock_guard lock(g_mutex);
  for (auto it = g_allocated.begin(); it != g_allocated.end(); ++it) {
    if (it->first == p) {
      g_allocated.erase(it);
      break;
    }
  }
  std::free(p);
}

class FakeDevice final : public Backend {
 public:
  std::string name() const override { return "fake-device"; }
  Memory memory() const override { return Memory::kCuda; }
  bool supports(Op) const override { return true; }

  Result<Buffer> alloc(std::size_t bytes) override {
    void* p = std::malloc(std::max<std::size_t>(bytes, 1));
    std::lock_guard lock(g_mutex);
    g_allocated.insert({static_cast<const char*>(p), bytes});
    ++allocs;
    return Buffer(p, bytes, fake_free);
  }
  Status upload(const Buffer& dst, const void* host, std::size_t bytes) override {
    if (!mine(dst.data(), bytes) || mine(host, 1)) return internal_error("upload: not host to device");
    std::memcpy(dst.data(), host, bytes);
    return Status::ok();
  }
  Status download(void* host, const Buffer& src, std::size_t bytes) override {
    if (!mine(src.data(), bytes) || mine(host, 1)) return internal_error("download: not device to host");
    std::memcpy(host, src.data(), bytes);
    return Status::ok();
  }

  Status topk(const TopKOp&) override { return unimplemented("not used"); }
  Status quantize2(const Quantize2Op&) override { return unimplemented("not used"); }
  Status pack12(const Pack12Op&) override { return unimplemented("not used"); }
  Status encode(const EncodeOp& op) override {
    const auto n = static_cast<std::size_t>(op.layout.rows * op.layout.cols);
    const auto kept = static_cast<std::size_t>(op.layout.kept());
    if (!mine(op.ef, n * 4) || !mine(op.delta, n * 4) || !mine(op.indices, kept * 2) || !mine(op.codes, kept)) {
      return internal_error("encode: a host pointer reached the device");
    }
    return cpu_->encode(op);
  }
  Status decode(const DecodeOp& op) override {
    const auto kept = static_cast<std::size_t>(op.layout.kept());
    if (!mine(op.indices, kept * 2) || !mine(op.codes, kept) ||
        !mine(op.out, static_cast<std::size_t>(op.layout.rows * op.layout.cols) * 4)) {
      return internal_error("decode: a host pointer reached the device");
    }
    return cpu_->decode(op);
  }
  Status merge(const MergeOp& op) override {
    const auto kept = static_cast<std::size_t>(op.layout.kept());
    for (const MergePeer& p : op.peers) {
      if (!mine(p.indices, kept * 2) || !mine(p.codes, kept)) return internal_error("merge: a host pointer");
    }
    if (!mine(op.out, static_cast<std::size_t>(op.layout.rows * op.layout.cols) * 4)) {
      return internal_error("merge: a host output");
    }
    return cpu_->merge(op);
  }

  int allocs = 0;

 private:
  static bool mine(const void* p, std::size_t bytes) {
    const auto* c = static_cast<const char*>(p);
    std::lock_guard lock(g_mutex);
    for (const auto& [at, size] : g_allocated) {
      if (c >= at && c + bytes <= at + std::max<std::size_t>(size, 1)) return true;
    }
    return false;
  }
  std::unique_ptr<Backend> cpu_ = cpu_backend(2);
};

// Every backend a node could get here: the CPU, the fake device, and each CUDA device present.
std::vector<std::unique_ptr<Backend>> backends() {
  std::vector<std::unique_ptr<Backend>> all;
  all.push_back(cpu_backend(2));
  all.push_back(std::make_unique<FakeDevice>());
  for (int d = 0; d < cuda::device_count(); ++d) {
    if (auto b = cuda_backend(d); b.is_ok()) all.push_back(std::move(*b));
  }
  return all;
}

using testing::random_values;

// A compressed tensor against another or against the reference's Encoded.
template <typename Want>
void expect_same(const CompressedTensor& a, const Want& b, const std::string& who) {
  EXPECT_EQ(a.indices, b.indices) << who;
  EXPECT_EQ(a.codes, b.codes) << who;
  EXPECT_EQ(a.quant.shift, b.quant.shift) << who;
  EXPECT_EQ(a.quant.scale, b.quant.scale) << who;
  EXPECT_EQ(a.quant.lookup, b.quant.lookup) << who;
}

TEST(BackendCodec, TheNodesDeviceNamesItsBackend) {
  auto cpu = backend_for("cpu", 2);
  ASSERT_TRUE(cpu.is_ok());
  EXPECT_EQ((*cpu)->name(), "cpu");
  EXPECT_EQ(backend_for("gpu").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_for("cuda:").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_for("cuda:x").status().code(), StatusCode::kInvalidArgument);
  auto cuda = backend_for("cuda");
  EXPECT_EQ(cuda.is_ok(), cuda::device_count() > 0);
  if (!cuda.is_ok()) {
    EXPECT_FALSE(backend_for(fmt::format("cuda:{}", cuda::device_count())).is_ok());
    std::cout << "cuda: not available here (" << cuda.status().to_string() << ")\n";
  }
}

TEST(BackendCodec, ErrorFeedbackGivesTheReferencesBytesOnEveryBackend) {
  // The oracle is the plain reference (codec_reference.h), not the span
  // error_feedback_step, which is itself the CPU backend (review-3 §3).
  const std::vector<std::int64_t> shape{192, 320};
  const std::size_t n = 192 * 320;
  const BlockLayout l = layout_for(shape).value();
  for (auto& backend : backends()) {
    std::vector<float> want_ef = random_values(n, 1, 0.1f), ef = want_ef;
    for (int window = 0; window < 3; ++window) {
      const auto delta = random_values(n, 10 + static_cast<std::uint32_t>(window));
      const auto want = ref::encode(want_ef, delta, 0.9f, l);
      auto got = error_feedback_step(*backend, ef, delta, shape, 0.9f);
      ASSERT_TRUE(got.is_ok()) << backend->name() << ": " << got.status().to_string();
      expect_same(*got, want, fmt::format("{} window {}", backend->name(), window));
      ASSERT_EQ(ef, want_ef) << backend->name() << " window " << window;
    }
  }
}

TEST(BackendCodec, ARefusedStepLeavesTheBufferAsItWas) {
  const std::vector<std::int64_t> shape{64, 128};
  for (auto& backend : backends()) {
    const std::vector<float> before = random_values(64 * 128, 3);
    std::vector<float> ef = before;
    auto delta = random_values(64 * 128, 4);
    delta[4000] = std::numeric_limits<float>::quiet_NaN();
    auto r = error_feedback_step(*backend, ef, delta, shape, 0.9f);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << backend->name();
    EXPECT_EQ(ef, before) << backend->name();
    delta[4000] = 0;
    EXPECT_EQ(error_feedback_step(*backend, ef, delta, shape, 1.5f).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(ef, before) << backend->name();
    std::vector<float> short_delta(100);
    EXPECT_EQ(error_feedback_step(*backend, ef, short_delta, shape, 0.9f).status().code(),
              StatusCode::kInvalidArgument);
  }
}

TEST(BackendCodec, DecodeAndTheMergeOfFifteenPeersGiveTheHostsBytes) {
  const std::vector<std::int64_t> shape{256, 192};
  const std::size_t n = 256 * 192;
  std::vector<CompressedTensor> updates;
  for (std::uint32_t i = 0; i < 15; ++i) {
    auto c = compress(random_values(n, 100 + i, 1.0f + 0.2f * static_cast<float>(i)), shape, 1);
    ASSERT_TRUE(c.is_ok());
    updates.push_back(std::move(*c));
  }
  std::vector<PeerUpdate> peers;
  for (std::size_t i = 0; i < updates.size(); ++i)
    peers.push_back({static_cast<std::uint16_t>(30 - 2 * i), &updates[i]});
  std::vector<float> want_merge(n), want_dense(n);
  ASSERT_TRUE(aggregate(peers, want_merge, 1).is_ok());
  ASSERT_TRUE(decompress(updates[3], want_dense, 1).is_ok());
  for (auto& backend : backends()) {
    std::vector<float> merged(n, 7.0f), dense(n, 7.0f);
    ASSERT_TRUE(aggregate(*backend, peers, merged).is_ok()) << backend->name();
    EXPECT_EQ(merged, want_merge) << backend->name();
    ASSERT_TRUE(decompress(*backend, updates[3], dense).is_ok()) << backend->name();
    EXPECT_EQ(dense, want_dense) << backend->name();
    std::vector<float> none(n, 7.0f);
    ASSERT_TRUE(aggregate(*backend, {}, none).is_ok());
    EXPECT_EQ(none, std::vector<float>(n, 0.0f));
  }
}

TEST(BackendCodec, BadPeersAreRefusedOnEveryBackendAndTheOutputIsNotHalfWritten) {
  const std::vector<std::int64_t> shape{128, 128};
  const std::size_t n = 128 * 128;
  auto a = compress(random_values(n, 1), shape, 1);
  auto b = compress(random_values(n, 2), shape, 1);
  auto other = compress(random_values(64 * 64, 3), std::vector<std::int64_t>{64, 64}, 1);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && other.is_ok());
  CompressedTensor unordered = *b;
  std::swap(unordered.indices[0], unordered.indices[1]);  // not ascending in its block
  CompressedTensor truncated = *b;
  truncated.codes.pop_back();
  for (auto& backend : backends()) {
    const std::vector<float> before = random_values(n, 9);
    std::vector<float> out = before;
    EXPECT_EQ(aggregate(*backend, {{1, &*a}, {1, &*b}}, out).code(), StatusCode::kInvalidArgument) << backend->name();
    EXPECT_EQ(aggregate(*backend, {{1, &*a}, {2, &*other}}, out).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(aggregate(*backend, {{1, &*a}, {2, &unordered}}, out).code(), StatusCode::kDataLoss) << backend->name();
    EXPECT_EQ(aggregate(*backend, {{1, &*a}, {2, &truncated}}, out).code(), StatusCode::kDataLoss);
    EXPECT_EQ(decompress(*backend, unordered, out).code(), StatusCode::kDataLoss) << backend->name();
    EXPECT_EQ(decompress(*backend, truncated, out).code(), StatusCode::kDataLoss);
    if (backend->memory() != Memory::kHost) {
      EXPECT_EQ(out, before) << backend->name();
    }
  }
}

}  // namespace
}  // namespace crucible::kernels
