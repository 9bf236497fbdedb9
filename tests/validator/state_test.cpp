// The validator's records: typed, round-tripping, strict on read.
#include "crucible/validator/state.h"

#include <gmock/gmock.h>
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

namespace crucible::validator {
namespace {

MinerScore every_field_set() {
  MinerScore s;
  s.rating.mu = 27.5;
  s.rating.sigma = 3.25;
  s.bma = 0.5;
  s.sync = 0.75;
  s.penalty = 0.5625;
  s.zeroed = true;
  s.last_evaluated = 41;
  s.waiting = 3;
  s.last_gradient_score = 0.125;
  s.final_score = 0.25;
  s.evidence = 0.875;
  s.evaluations = 7;
  s.judged = 6;
  s.own_z_sum = 4.5;
  s.own_z_norm2 = 3.75;
  s.hotkey = std::array<std::uint8_t, 32>{};
  (*s.hotkey)[0] = 0xab;
  return s;
}

TEST(MinerScoreRecord, RoundTripsEveryField) {
  const MinerScore s = every_field_set();
  auto back = score_from_json(to_json(s));
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->rating.mu, s.rating.mu);
  EXPECT_EQ(back->rating.sigma, s.rating.sigma);
  EXPECT_EQ(back->bma, s.bma);
  EXPECT_EQ(back->sync, s.sync);
  EXPECT_EQ(back->penalty, s.penalty);
  EXPECT_EQ(back->zeroed, s.zeroed);
  EXPECT_EQ(back->last_evaluated, s.last_evaluated);
  EXPECT_EQ(back->waiting, s.waiting);
  EXPECT_EQ(back->last_gradient_score, s.last_gradient_score);
  EXPECT_EQ(back->final_score, s.final_score);
  EXPECT_EQ(back->evidence, s.evidence);
  EXPECT_EQ(back->evaluations, s.evaluations);
  EXPECT_EQ(back->judged, s.judged);
  EXPECT_EQ(back->own_z_sum, s.own_z_sum);
  EXPECT_EQ(back->own_z_norm2, s.own_z_norm2);
  EXPECT_EQ(back->hotkey, s.hotkey);

  // The two nullable fields, null.
  MinerScore fresh;
  auto f = score_from_json(to_json(fresh));
  ASSERT_TRUE(f.is_ok()) << f.status();
  EXPECT_FALSE(f->last_evaluated.has_value());
  EXPECT_FALSE(f->hotkey.has_value());
}

TEST(MinerScoreRecord, AMissingOrMistypedFieldIsDataLossNamingItNeverADefault) {
  const nlohmann::json whole = to_json(every_field_set());
  for (const char* field : {"mu", "sigma", "bma", "sync", "penalty", "zeroed", "waiting", "last_gradient_score",
                            "final", "evidence", "evaluations", "judged", "own_z_sum", "own_z_norm2"}) {
    nlohmann::json j = whole;
    j.erase(field);
    auto r = score_from_json(j);
    ASSERT_FALSE(r.is_ok()) << field;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << field;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr(field));
    j = whole;
    j[field] = "x";
    EXPECT_EQ(score_from_json(j).status().code(), StatusCode::kDataLoss) << field;
  }
  nlohmann::json j = whole;
  j["hotkey"] = "abcd";  // not 32 bytes
  EXPECT_EQ(score_from_json(j).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(score_from_json(nlohmann::json::array()).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(score_from_json(nlohmann::json()).status().code(), StatusCode::kDataLoss);  // unparsable bytes
}

TEST(MinerScoreRecord, TheRatingKeyParsesBackAndNothingElseDoes) {
  for (std::uint16_t uid : {0, 7, 255, 65535}) EXPECT_EQ(uid_of_rating_key(rating_key(uid)), uid);
  for (const char* k : {"uid/", "uid/1", "uid/000001", "uid/0000x", "uid/70000", "w/00001", "", "uid/-0001"})
    EXPECT_FALSE(uid_of_rating_key(k).has_value()) << k;
}

}  // namespace
}  // namespace crucible::validator
