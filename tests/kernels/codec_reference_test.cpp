// The fast path against a plain reference written with libtorch tensor ops
// (the only test translation unit that includes torch): indices and codes
// must match exactly, floats within 1e-6 relative.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include "crucible/kernels/codec.h"

namespace crucible::kernels {
namespace {

struct Reference {
  torch::Tensor indices;  // [blocks, k] int64, ascending per block
  torch::Tensor values;   // [blocks, k] float
};

Reference reference_topk(const torch::Tensor& x2d, const BlockLayout& l) {
  auto blocks = x2d.view({l.blocks_down(), l.block_rows, l.blocks_across(), l.block_cols})
                    .permute({0, 2, 1, 3})
                    .reshape({l.num_blocks(), l.block_elems()});
  auto top = std::get<1>(blocks.abs().topk(l.k, /*dim=*/1, /*largest=*/true, /*sorted=*/false));
  auto sorted = std::get<0>(top.sort(1));
  return {sorted, blocks.gather(1, sorted)};
}

TEST(CodecReference, TopKMatchesTorchOps) {
  torch::manual_seed(11);
  for (auto shape : std::vector<std::vector<std::int64_t>>{{256, 192}, {100, 1000}, {4096}, {7, 64}, {2, 3, 128}}) {
    auto x = torch::randn(shape, torch::kFloat32);
    auto l = layout_for(shape).value();
    std::vector<std::uint16_t> idx(static_cast<std::size_t>(l.kept()));
    std::vector<float> val(idx.size());
    auto flat = x.contiguous();
    std::span<const float> xs(flat.data_ptr<float>(), static_cast<std::size_t>(flat.numel()));
    ASSERT_TRUE(select_topk(xs, l, idx, val, 2).is_ok());
    Reference ref = reference_topk(flat.view({l.rows, l.cols}), l);
    auto ri = ref.indices.contiguous();
    auto rv = ref.values.contiguous();
    for (std::size_t i = 0; i < idx.size(); ++i) {
      ASSERT_EQ(idx[i], ri.data_ptr<std::int64_t>()[i]) << "shape[0]=" << shape[0] << " at " << i;
      ASSERT_EQ(val[i], rv.data_ptr<float>()[i]);
    }
  }
}

TEST(CodecReference, Quant2MatchesTorchOps) {
  torch::manual_seed(5);
  auto v = torch::randn({50'000}, torch::kFloat32) * 0.01;
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(v.numel()));
  std::span<const float> vs(v.data_ptr<float>(), static_cast<std::size_t>(v.numel()));
  Quant2 q = quantize2(vs, codes, 64, 2);  // runs of 64, as a layout keeps per block

  auto vd = v.to(torch::kFloat64);
  double shift = vd.mean().item<double>();
  auto c = vd - shift;
  double scale = 6.0 * (c.norm().item<double>() / std::sqrt(static_cast<double>(v.numel() - 1))) / 4.0;
  auto ref_codes = torch::clamp(torch::round(c / scale + 2), 0, 3).to(torch::kUInt8);
  EXPECT_NEAR(q.shift, shift, 1e-6 * std::abs(shift) + 1e-12);
  EXPECT_NEAR(q.scale, scale, 1e-6 * scale);
  auto rc = ref_codes.contiguous();
  for (std::size_t i = 0; i < codes.size(); ++i) ASSERT_EQ(codes[i], rc.data_ptr<std::uint8_t>()[i]) << i;
  for (int b = 0; b < 4; ++b) {
    auto mask = ref_codes == b;
    double want = mask.sum().item<std::int64_t>() ? c.masked_select(mask).mean().item<double>() : 0.0;
    EXPECT_NEAR(q.lookup[static_cast<std::size_t>(b)], want, 1e-6 * std::abs(want) + 1e-9) << b;
  }
}

}  // namespace
}  // namespace crucible::kernels
