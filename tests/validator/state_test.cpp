// The validator's records: typed, round-tripping, strict on read.
#include "crucible/validator/state.h"

#include <gtest/gtest.h>

namespace crucible::validator {
namespace {

TEST(UidResult, RoundTripsWithTheRejectionName) {
  UidResult r;
  r.uid = 7;
  r.uploaded = true;
  r.rejection = protocol::Rejection::kTooLate;
  r.detail = "uploaded after the slot closed";
  r.seen_ms = 1234;
  r.final_score = 0.25;
  auto j = to_json(r);
  EXPECT_EQ(j["reason"], "too_late");
  auto back = uid_result_from_json(j);
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->rejection, protocol::Rejection::kTooLate);
  EXPECT_EQ(back->detail, r.detail);
  EXPECT_EQ(back->seen_ms, 1234);
  EXPECT_FALSE(back->eval.has_value());
  r.rejection.reset();
  r.valid = true;
  r.eval = EvalResult{4, 3, 5, 4.5, 0.1, 1, 0.5};
  back = uid_result_from_json(to_json(r));
  ASSERT_TRUE(back.is_ok());
  ASSERT_TRUE(back->eval.has_value());
  EXPECT_EQ(back->eval->loss_after_rand, 4.5);
  EXPECT_EQ(back->eval->binary, 1);
  EXPECT_FALSE(back->eval->align_own.has_value());  // no gradient check: no field
  EXPECT_FALSE(to_json(r).contains("align_own"));
  EXPECT_FALSE(back->eval->own_z.has_value());
  r.eval->align_own = 0.03;
  r.eval->align_rand = 0.01;
  r.eval->own_z = 1.5;
  back = uid_result_from_json(to_json(r));
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back->eval->align_own, 0.03);
  EXPECT_EQ(back->eval->align_rand, 0.01);
  EXPECT_EQ(back->eval->own_z, 1.5);
  j = to_json(r);
  j["reason"] = "no such reason";
  EXPECT_EQ(uid_result_from_json(j).status().code(), StatusCode::kDataLoss);
  j = to_json(r);
  j.erase("uploaded");
  EXPECT_EQ(uid_result_from_json(j).status().code(), StatusCode::kDataLoss);
}

TEST(WindowSummary, RoundTrips) {
  WindowSummary s{9, true, {1, 2}, 61234, 6.5, 0.01, std::vector<std::uint16_t>{2}, 8};
  auto back = window_summary_from_json(to_json(s));
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->window, 9u);
  EXPECT_EQ(back->evaluated, s.evaluated);
  EXPECT_EQ(back->aggregate, s.aggregate);
  EXPECT_EQ(back->aggregate_prev, 8u);
  EXPECT_FALSE(window_summary_from_json(nlohmann::json::array()).is_ok());
}

TEST(WeightsLogEntry, RoundTripsEachPhaseAndRefusesHoles) {
  WeightsLogEntry e;
  e.epoch = 3;
  e.window = 7;
  e.uids = {1, 4};
  e.values = {65535, 100};
  e.phase = WeightsPhase::kCommitted;
  chain::WeightsCommit c;
  c.netuid = 1;
  c.uids = e.uids;
  c.values = e.values;
  c.salt = {5, 6};
  c.version_key = 2;
  c.hash[0] = 0xAB;
  e.commit = c;
  e.commit_tx = "0x12";
  e.commit_epoch = 41;
  auto j = to_json(e);
  EXPECT_EQ(j["status"], "committed");
  auto back = weights_entry_from_json(j);
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->phase, WeightsPhase::kCommitted);
  EXPECT_EQ(back->commit_epoch, std::optional<std::uint64_t>(41));
  e.phase = WeightsPhase::kExpired;
  EXPECT_EQ(to_json(e)["status"], "expired");
  EXPECT_EQ(weights_entry_from_json(to_json(e))->phase, WeightsPhase::kExpired);
  ASSERT_TRUE(back->commit.has_value());
  EXPECT_EQ(back->commit->salt, c.salt);
  EXPECT_EQ(back->commit->hash, c.hash);
  // A commit phase without its commit is not silently filled with defaults.
  j.erase("commit");
  EXPECT_EQ(weights_entry_from_json(j).status().code(), StatusCode::kDataLoss);
  j = to_json(e);
  j["commit"]["salt"] = "x";
  EXPECT_EQ(weights_entry_from_json(j).status().code(), StatusCode::kDataLoss);
  j = to_json(e);
  j["status"] = "maybe";
  EXPECT_EQ(weights_entry_from_json(j).status().code(), StatusCode::kDataLoss);
  for (auto p : {WeightsPhase::kPending, WeightsPhase::kConfirmed, WeightsPhase::kFailed}) {
    WeightsLogEntry x;
    x.phase = p;
    x.block_before = 5;
    auto b = weights_entry_from_json(to_json(x));
    ASSERT_TRUE(b.is_ok()) << name(p);
    EXPECT_EQ(b->phase, p);
    EXPECT_EQ(b->block_before, 5u);
  }
}

}  // namespace
}  // namespace crucible::validator
