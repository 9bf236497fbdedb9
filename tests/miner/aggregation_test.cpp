// Unit tests of the pieces the miner and validator share: aggregation
// sets, checkpoint pointers, packet-vs-model checks, merging, fingerprints,
// and the miner's state folder.
#include "crucible/miner/aggregation.h"

#include <gtest/gtest.h>

#include "crucible/kernels/packet_tensor.h"
#include "crucible/miner/fingerprint.h"
#include "crucible/miner/miner_state.h"
#include "support/temp_dir.h"

namespace crucible::miner {
namespace {

chain::Hash32 h(std::uint8_t fill) {
  chain::Hash32 out{};
  out.fill(fill);
  return out;
}

TEST(AggregationSet, RoundTripsAndRefusesMalformedSets) {
  AggregationSet s{12, 10, {1, 4, 9}, {h(1), h(4), h(9)}};
  auto back = decode_set(encode_set(s));
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->window, 12u);
  EXPECT_EQ(back->prev, 10u);
  EXPECT_EQ(back->uids, s.uids);
  EXPECT_EQ(back->digests, s.digests);
  auto first = decode_set(encode_set({3, std::nullopt, {}, {}}));
  ASSERT_TRUE(first.is_ok());
  EXPECT_FALSE(first->prev.has_value());

  auto bad = [](const std::string& j) { return decode_set(j).status().code(); };
  EXPECT_EQ(bad("[]"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":2,"window":1,"uids":[],"digests":[]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[2,1],"digests":["0x)" + std::string(64, '0') + R"(","0x)" +
                std::string(64, '0') + R"("]})"),
            StatusCode::kInvalidArgument);  // not ascending
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[1],"digests":[]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[1],"digests":["0x12"]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":5,"prev":5,"uids":[],"digests":[]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[70000],"digests":["0x)" + std::string(64, '0') + R"("]})"),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(std::string(kMaxSetBytes + 1, ' ')), StatusCode::kInvalidArgument);
}

TEST(CheckpointPointer, RoundTripsAndChecksTheKey) {
  CheckpointPointer p{7, 3, "v1/checkpoint/3/model.safetensors", "dim=1", h(2)};
  auto back = decode_checkpoint_pointer(encode_checkpoint_pointer(p));
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->window, 7u);
  EXPECT_EQ(back->key, p.key);
  EXPECT_EQ(back->basis, p.basis);
  p.key = "../../etc/passwd";
  EXPECT_FALSE(decode_checkpoint_pointer(encode_checkpoint_pointer(p)).is_ok());
}

packet::Packet packet_for(const std::vector<TensorSpec>& specs, float scale) {
  packet::Packet p;
  for (const auto& s : specs) {
    std::vector<float> x(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = scale * static_cast<float>((i * 7919) % 101) - scale * 50;
    auto c = kernels::compress(x, s.shape, 1);
    p.tensors.push_back(*kernels::to_packet_tensor(s.name, s.shape, *c));
  }
  return p;
}

TEST(DecodeUpdate, ChecksTensorsAgainstTheModel) {
  std::vector<TensorSpec> specs{{"a", {64, 64}}, {"b", {32}}};
  packet::Packet p = packet_for(specs, 1);
  EXPECT_TRUE(decode_update(p, specs).is_ok());
  std::vector<TensorSpec> renamed{{"a", {64, 64}}, {"c", {32}}};
  EXPECT_EQ(decode_update(p, renamed).status().code(), StatusCode::kInvalidArgument);
  std::vector<TensorSpec> reshaped{{"a", {32, 128}}, {"b", {32}}};
  EXPECT_EQ(decode_update(p, reshaped).status().code(), StatusCode::kInvalidArgument);
  std::vector<TensorSpec> fewer{{"a", {64, 64}}};
  EXPECT_EQ(decode_update(p, fewer).status().code(), StatusCode::kInvalidArgument);
}

TEST(MergeUpdates, IsIndependentOfPeerOrderAndMatchesTheKernel) {
  std::vector<TensorSpec> specs{{"a", {64, 64}}, {"b", {32}}};
  PeerTensors one{3, *decode_update(packet_for(specs, 1), specs)};
  PeerTensors two{1, *decode_update(packet_for(specs, 3), specs)};
  auto ab = merge_updates({one, two}, specs);
  auto ba = merge_updates({two, one}, specs);
  ASSERT_TRUE(ab.is_ok() && ba.is_ok());
  EXPECT_EQ(*ab, *ba);  // bit for bit
  // Alone, a peer's merge is its own decoded update (the median norm is its own).
  auto solo = merge_updates({one}, specs);
  std::vector<float> dense(64 * 64);
  ASSERT_TRUE(kernels::decompress(one.tensors[0], dense).is_ok());
  EXPECT_EQ((*solo)[0], dense);
}

TEST(LeadValidator, IsTheHighestStakeWithAPermit) {
  chain::Metagraph m;
  m.neurons.resize(4);
  for (std::uint16_t i = 0; i < 4; ++i) m.neurons[i].uid = i;
  EXPECT_FALSE(lead_validator(m).has_value());
  m.neurons[1].validator_permit = true;
  m.neurons[1].stake = 10;
  m.neurons[2].stake = 1000;  // more stake, no permit
  m.neurons[3].validator_permit = true;
  m.neurons[3].stake = 20;
  EXPECT_EQ(lead_validator(m), 3);
  m.neurons[1].stake = 20;  // a tie: the lower uid
  EXPECT_EQ(lead_validator(m), 1);
}

TEST(Fingerprint, PositionsAreAFunctionOfTheBasisAndName) {
  auto a = fingerprint_positions(h(1), "w", 1000);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, fingerprint_positions(h(1), "w", 1000));
  EXPECT_NE(a, fingerprint_positions(h(2), "w", 1000));
  EXPECT_NE(a, fingerprint_positions(h(1), "v", 1000));
  for (auto p : a) EXPECT_LT(p, 1000);
  // Vector (docs/protocol.md §7): the first position for basis 0x00..00, name "w", n = 1000.
  auto zero = fingerprint_positions(chain::Hash32{}, "w", 1000);
  chain::Keccak256 k;
  std::uint8_t j0[4] = {0, 0, 0, 0};
  auto d = k.update(chain::Hash32{}).update(as_bytes("w")).update(ByteSpan(j0, 4)).finish();
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]) << (8 * i);
  EXPECT_EQ(zero[0], static_cast<std::int64_t>(v % 1000));

  std::vector<TensorSpec> specs{{"w", {10, 100}}};
  auto f1 = take_fingerprint(1, 2, h(1), specs, [](std::size_t, std::int64_t i) { return static_cast<float>(i); });
  auto f2 = take_fingerprint(1, 2, h(1), specs, [](std::size_t, std::int64_t i) { return static_cast<float>(i) + 1; });
  EXPECT_EQ(f1.values[0][0], static_cast<float>(a[0]));
  EXPECT_NE(fingerprint_digest(f1), fingerprint_digest(f2));
}

TEST(StateDir, CommitsGenerationsAndLocks) {
  testing::TempDir dir;
  std::vector<TensorSpec> specs{{"w", {2, 3}}};
  {
    auto sd = StateDir::open(dir.path() / "s");
    ASSERT_TRUE(sd.is_ok()) << sd.status();
    EXPECT_EQ(StateDir::open(dir.path() / "s").status().code(), StatusCode::kFailedPrecondition);  // locked
    auto none = sd->load(specs);
    ASSERT_TRUE(none.is_ok());
    EXPECT_FALSE(none->has_value());
    MinerState st;
    st.trained_window = 4;
    st.applied_window = 3;
    st.global_step = 2;
    st.basis = h(7);
    st.ef = {{1, 2, 3, 4, 5, 6}};
    int writes = 0;
    ASSERT_TRUE(sd->commit(st, specs, [&](const std::filesystem::path&) {
                    ++writes;
                    return Status::ok();
                  }).is_ok());
    st.global_step = 3;
    ASSERT_TRUE(sd->commit(st, specs, [&](const std::filesystem::path&) { return Status::ok(); }).is_ok());
    EXPECT_EQ(writes, 1);
    // A failed commit leaves the last good generation current.
    st.global_step = 99;
    EXPECT_FALSE(sd->commit(st, specs, [](const std::filesystem::path&) { return unavailable("disk"); }).is_ok());
  }
  auto sd = StateDir::open(dir.path() / "s");  // the lock went with the first
  ASSERT_TRUE(sd.is_ok());
  auto loaded = sd->load(specs);
  ASSERT_TRUE(loaded.is_ok() && loaded->has_value()) << loaded.status();
  const MinerState& st = (*loaded)->second;
  EXPECT_EQ(st.global_step, 3u);
  EXPECT_EQ(st.trained_window, 4u);
  EXPECT_EQ(st.applied_window, 3u);
  EXPECT_FALSE(st.uploaded_window.has_value());
  EXPECT_EQ(st.basis, h(7));
  EXPECT_EQ(st.ef[0], (std::vector<float>{1, 2, 3, 4, 5, 6}));
  std::vector<TensorSpec> other{{"w", {3, 2}}};
  EXPECT_EQ(sd->load(other).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace crucible::miner
