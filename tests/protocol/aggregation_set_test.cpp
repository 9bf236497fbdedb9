#include "crucible/protocol/aggregation_set.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace crucible::protocol {
namespace {

using test::h;

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

  const std::string zero = "\"0x" + std::string(64, '0') + "\"";
  auto bad = [](const std::string& j) { return decode_set(j).status().code(); };
  EXPECT_EQ(bad("[]"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad("{not json"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":2,"window":1,"uids":[],"digests":[]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":"1","window":1,"uids":[],"digests":[]})"), StatusCode::kInvalidArgument);  // wrong type
  EXPECT_EQ(bad(R"({"v":1,"window":"1","uids":[],"digests":[]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[2,1],"digests":[)" + zero + "," + zero + "]}"),
            StatusCode::kInvalidArgument);  // not ascending
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[1,1],"digests":[)" + zero + "," + zero + "]}"),
            StatusCode::kInvalidArgument);  // duplicate
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[1],"digests":[]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[1],"digests":["0x12"]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[1],"digests":[7]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":5,"prev":5,"uids":[],"digests":[]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":5,"prev":"4","uids":[],"digests":[]})"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(R"({"v":1,"window":1,"uids":[70000],"digests":[)" + zero + "]}"), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(std::string(kMaxSetBytes + 1, ' ')), StatusCode::kInvalidArgument);
}

TEST(AggregationSet, BasisIsTheKeccakOfThePublishedBytes) {
  const std::string text = encode_set({3, std::nullopt, {1}, {h(1)}});
  EXPECT_EQ(set_basis(as_bytes(text)), chain::keccak256(as_bytes(text)));
  EXPECT_NE(set_basis(as_bytes(text)), set_basis(as_bytes(text + " ")));
}

TEST(ChooseSet, AdmitsOnlyByEvidenceCapsByScoreAndListsByUid) {
  std::vector<SetCandidate> c{
      {9, h(9), 0.5, true},  {2, h(2), 0.9, true}, {5, h(5), 0, true},  // admitted with final 0 (an unlucky rank): in
      {7, h(7), 3.0, false},  // not admitted (no evidence yet, or harm), whatever its score: out
      {4, h(4), 0.5, true},
  };
  AggregationSet s = choose_set(8, 6, c, 3);
  EXPECT_EQ(s.window, 8u);
  EXPECT_EQ(s.prev, 6u);
  // 2 (0.9), then 4 and 9 tie at 0.5 (lower uid first) -> {2, 4, 9}; 5 is fourth.
  EXPECT_EQ(s.uids, (std::vector<std::uint16_t>{2, 4, 9}));
  EXPECT_EQ(s.digests, (std::vector<chain::Hash32>{h(2), h(4), h(9)}));
  EXPECT_EQ(choose_set(8, 6, c, 10).uids, (std::vector<std::uint16_t>{2, 4, 5, 9}));
  EXPECT_TRUE(choose_set(8, std::nullopt, {}, 10).uids.empty());
  // The input order does not matter.
  std::reverse(c.begin(), c.end());
  EXPECT_EQ(choose_set(8, 6, c, 3).uids, s.uids);
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

}  // namespace
}  // namespace crucible::protocol
