// Every CUDA kernel against its CPU reference (as ggml's test-backend-ops).
// Runs where a GPU exists; elsewhere each test says why it is skipped.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "crucible/kernels/cuda.h"
#include "crucible/kernels/pack12.h"

namespace crucible::kernels {
namespace {

class CudaParity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::built()) GTEST_SKIP() << "built without CUDA (CRUCIBLE_CUDA=OFF)";
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

TEST_F(CudaParity, Pack12MatchesCpu) {
  std::mt19937 rng(11);
  for (std::size_t n : {1u, 2u, 129u, 1u << 20}) {
    std::vector<std::uint16_t> idx(n);
    for (auto& i : idx) i = static_cast<std::uint16_t>(rng() % 4096);
    std::vector<std::uint8_t> cpu(packed12_size(n)), gpu(packed12_size(n), 0xAA);
    ASSERT_TRUE(pack_indices12(idx, cpu).is_ok());
    Status s = cuda::pack_indices12(idx, gpu);
    ASSERT_TRUE(s.is_ok()) << s;
    EXPECT_EQ(cpu, gpu) << n;
  }
}

TEST_F(CudaParity, Pack12ValidatesLikeCpu) {
  std::vector<std::uint16_t> idx = {5000};
  std::vector<std::uint8_t> out(3);
  EXPECT_EQ(cuda::pack_indices12(idx, out).code(), StatusCode::kInvalidArgument);
}

TEST(CudaBuild, AbsentDeviceIsReportedNotFatal) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a GPU is present";
  std::vector<std::uint16_t> idx = {1, 2};
  std::vector<std::uint8_t> out(3);
  Status s = cuda::pack_indices12(idx, out);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), cuda::built() ? StatusCode::kUnavailable : StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace crucible::kernels
