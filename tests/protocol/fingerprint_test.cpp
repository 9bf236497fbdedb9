#include "crucible/protocol/fingerprint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace crucible::protocol {
namespace {

using test::h;

Fingerprint sample(const std::vector<TensorSpec>& specs, const chain::Hash32& basis, float offset) {
  Fingerprint f{4, 2, basis, {}};
  for (const auto& pos : fingerprint_positions(basis, 2, specs)) {
    std::vector<float> v;
    for (auto p : pos) v.push_back(static_cast<float>(p) * 0.001f + offset);
    f.values.push_back(v);
  }
  return f;
}

TEST(Fingerprint, PositionsAreAFunctionOfTheBasisUidAndName) {
  auto a = fingerprint_positions(h(1), 5, "w", 1000);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, fingerprint_positions(h(1), 5, "w", 1000));
  EXPECT_NE(a, fingerprint_positions(h(2), 5, "w", 1000));
  EXPECT_NE(a, fingerprint_positions(h(1), 6, "w", 1000));  // another uid looks elsewhere
  EXPECT_NE(a, fingerprint_positions(h(1), 5, "v", 1000));
  for (auto p : a) EXPECT_LT(p, 1000);
  // Vector (docs/protocol.md §7): the first position for basis 0x00..00, uid 3, name "w", n = 1000.
  auto zero = fingerprint_positions(chain::Hash32{}, 3, "w", 1000);
  chain::Keccak256 k;
  std::uint8_t uid[2] = {3, 0};
  std::uint8_t j0[4] = {0, 0, 0, 0};
  auto d = k.update(chain::Hash32{}).update(ByteSpan(uid, 2)).update(as_bytes("w")).update(ByteSpan(j0, 4)).finish();
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]) << (8 * i);
  EXPECT_EQ(zero[0], static_cast<std::int64_t>(v % 1000));
  std::vector<TensorSpec> specs{{"w", {10, 100}}, {"v", {7}}};
  auto all = fingerprint_positions(h(1), 5, specs);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], a);
  for (auto p : all[1]) EXPECT_LT(p, 7);
}

TEST(Fingerprint, TheDigestBindsWindowAndUid) {
  std::vector<TensorSpec> specs{{"w", {10, 100}}, {"v", {7}}};
  Fingerprint f = sample(specs, h(3), 0.1f);
  Fingerprint other_uid = f;
  other_uid.uid = 9;
  Fingerprint other_window = f;
  other_window.window = 5;
  EXPECT_NE(fingerprint_digest(other_uid), fingerprint_digest(f));
  EXPECT_NE(fingerprint_digest(other_window), fingerprint_digest(f));
}

TEST(Fingerprint, EncodesAndDecodesExactly) {
  std::vector<TensorSpec> specs{{"w", {10, 100}}, {"v", {7}}};
  Fingerprint f = sample(specs, h(3), 0.1f);
  const std::string text = encode_fingerprint(f, specs);
  auto back = decode_fingerprint(as_bytes(text), specs);
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->window, 4u);
  EXPECT_EQ(back->uid, 2u);
  EXPECT_EQ(back->basis, h(3));
  EXPECT_EQ(back->values, f.values);  // bit for bit through JSON
  EXPECT_EQ(fingerprint_digest(*back), fingerprint_digest(f));
  EXPECT_NE(fingerprint_digest(sample(specs, h(3), 0.2f)), fingerprint_digest(f));
}

TEST(Fingerprint, DecodeRefusesWhatAPeerCouldSend) {
  std::vector<TensorSpec> specs{{"w", {10, 100}}, {"v", {7}}};
  const auto good = nlohmann::json::parse(encode_fingerprint(sample(specs, h(3), 0.1f), specs));
  auto refused = [&](const nlohmann::json& j) {
    const std::string text = j.dump();
    return decode_fingerprint(as_bytes(text), specs).status().code() == StatusCode::kInvalidArgument;
  };
  auto with = [&](const std::string& key, const nlohmann::json& v) {
    auto j = good;
    j[key] = v;
    return j;
  };
  EXPECT_TRUE(refused(nlohmann::json::array()));
  EXPECT_TRUE(refused(with("v", 2)));
  EXPECT_TRUE(refused(with("v", "1")));
  EXPECT_TRUE(refused(with("window", "4")));  // a field of the wrong type (used to crash the validator)
  EXPECT_TRUE(refused(with("uid", 70000)));
  EXPECT_TRUE(refused(with("uid", -1)));
  EXPECT_TRUE(refused(with("basis", 12)));
  EXPECT_TRUE(refused(with("basis", "0x12")));
  EXPECT_TRUE(refused(with("digest", "0x" + std::string(64, '0'))));  // does not match the values
  EXPECT_TRUE(refused(with("values", nlohmann::json::array())));
  auto j = good;
  j["values"].erase("v");
  EXPECT_TRUE(refused(j));
  j = good;
  j["values"]["v"] = nlohmann::json::array({1, 2});
  EXPECT_TRUE(refused(j));
  j = good;
  j["values"]["v"][0] = "x";
  EXPECT_TRUE(refused(j));
  j = good;
  j["values"]["v"][0] = 1e300;  // not finite as a float
  EXPECT_TRUE(refused(j));
  j = good;
  j["values"]["extra"] = j["values"]["v"];
  EXPECT_TRUE(refused(j));
  const std::string huge(kMaxFingerprintBytes + 1, ' ');
  EXPECT_FALSE(decode_fingerprint(as_bytes(huge), specs).is_ok());
  EXPECT_FALSE(decode_fingerprint(as_bytes("{\"v\":1,"), specs).is_ok());
}

TEST(StepsBehind, IsTheDistanceInOuterSteps) {
  TensorValues ours{{1, 2, 3}, {4}};
  TensorValues step{{0.5f, 0, 0}, {0}};  // one outer step of norm 0.5
  EXPECT_EQ(steps_behind(ours, ours, step, 3), 0);
  TensorValues one_back{{1.5f, 2, 3}, {4}};
  EXPECT_DOUBLE_EQ(steps_behind(one_back, ours, step, 3), 1.0);
  TensorValues far{{11, 2, 3}, {4}};
  EXPECT_DOUBLE_EQ(steps_behind(far, ours, step, 3), 3.0);       // capped
  EXPECT_DOUBLE_EQ(steps_behind(one_back, ours, {}, 3), 3.0);    // no step known: the cap
  EXPECT_DOUBLE_EQ(steps_behind({{1, 2}}, ours, step, 3), 3.0);  // wrong shape: the cap
}

}  // namespace
}  // namespace crucible::protocol
