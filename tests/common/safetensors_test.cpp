#include "crucible/common/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "support/temp_dir.h"

namespace crucible::safetensors {
namespace {

ByteSpan span_of(const std::vector<float>& v) {
  return ByteSpan(reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(float));
}

std::uint64_t header_len(const Bytes& b) {
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(b[static_cast<std::size_t>(i)]) << (8 * i);
  return n;
}

// A file with a hand-written header, for the rejection cases.
Bytes with_header(const std::string& json, std::size_t data_bytes) {
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(json.size() >> (8 * i)));
  out.insert(out.end(), json.begin(), json.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

TEST(Safetensors, RoundTripsTensorsAndMetadata) {
  std::vector<float> a{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::vector<float> b{42.0f};
  std::vector<TensorView> views{{"a.weight", DType::kF32, {2, 3}, span_of(a)}, {"b", DType::kF32, {1}, span_of(b)}};
  auto bytes = serialize(views, {{"format", "pt"}});
  ASSERT_TRUE(bytes.is_ok()) << bytes.status();
  EXPECT_EQ(header_len(*bytes) % 8, 0u);  // padded so that data is 8-aligned
  EXPECT_EQ(bytes->size(), 8 + header_len(*bytes) + 28);

  testing::TempDir dir;
  ASSERT_TRUE(write_file(dir.path() / "m.safetensors", views, {{"format", "pt"}}).is_ok());
  auto file = read_file(dir.path() / "m.safetensors");
  ASSERT_TRUE(file.is_ok()) << file.status();
  EXPECT_EQ(file->metadata.at("format"), "pt");
  ASSERT_EQ(file->tensors.size(), 2u);
  const TensorView* t = file->find("a.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<std::int64_t>{2, 3}));
  std::vector<float> back(6);
  std::memcpy(back.data(), t->data.data(), 24);
  EXPECT_EQ(back, a);
  EXPECT_EQ(file->find("missing"), nullptr);
}

TEST(Safetensors, SerializeRefusesBadInput) {
  std::vector<float> a{1, 2, 3};
  std::vector<TensorView> wrong_size{{"a", DType::kF32, {2, 2}, span_of(a)}};
  EXPECT_EQ(serialize(wrong_size).status().code(), StatusCode::kInvalidArgument);
  std::vector<TensorView> twice{{"a", DType::kF32, {3}, span_of(a)}, {"a", DType::kF32, {3}, span_of(a)}};
  EXPECT_EQ(serialize(twice).status().code(), StatusCode::kInvalidArgument);
  std::vector<TensorView> reserved{{"__metadata__", DType::kF32, {3}, span_of(a)}};
  EXPECT_EQ(serialize(reserved).status().code(), StatusCode::kInvalidArgument);
}

TEST(Safetensors, ParseRejectsMalformedFiles) {
  auto code = [](Bytes b, Limits l = {}) { return parse(std::move(b), l).status().code(); };
  EXPECT_EQ(code(Bytes{1, 2, 3}), StatusCode::kDataLoss);  // no length
  Bytes huge(8, 0xFF);
  EXPECT_EQ(code(huge), StatusCode::kResourceExhausted);  // header length above the cap
  Bytes past = with_header("{}", 0);
  past[0] = 50;
  EXPECT_EQ(code(past), StatusCode::kDataLoss);  // header past the end
  EXPECT_EQ(code(with_header("[1,2]", 0)), StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header("{not json", 0)), StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", 4)), StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)), StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4)), StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", 4)), StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4)), StatusCode::kDataLoss);
  // a hole, an overlap, bytes left over
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)), StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                             4)),
            StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 5)), StatusCode::kDataLoss);
  // a shape whose byte size overflows
  EXPECT_EQ(code(with_header(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", 4)),
            StatusCode::kDataLoss);
  EXPECT_EQ(code(with_header(R"({"__metadata__":{"k":1}})", 0)), StatusCode::kDataLoss);
  // an empty tensor name, which serialize() refuses (found by safetensors_fuzz)
  EXPECT_EQ(code(with_header(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4)), StatusCode::kDataLoss);
  EXPECT_TRUE(parse(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4)).is_ok());
}

TEST(Safetensors, ReadFileReportsMissingAndOversizedFiles) {
  testing::TempDir dir;
  EXPECT_EQ(read_file(dir.path() / "none.safetensors").status().code(), StatusCode::kNotFound);
  std::vector<float> a(100, 1.0f);
  std::vector<TensorView> views{{"a", DType::kF32, {100}, span_of(a)}};
  ASSERT_TRUE(write_file(dir.path() / "a.safetensors", views).is_ok());
  Limits small;
  small.max_file_bytes = 64;
  EXPECT_EQ(read_file(dir.path() / "a.safetensors", small).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace crucible::safetensors
