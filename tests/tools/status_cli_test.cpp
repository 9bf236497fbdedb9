// `crucible status`: the explanation of a zero score, factor by factor, and
// the command through the real binary against a local chain, a store and the
// validator's real score API over a RocksDB state.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crucible/cli/status.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/storage/local_store.h"
#include "crucible/validator/api_server.h"
#include "crucible/validator/state.h"
#include "support/local_network.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A /v1/miners/{uid} body around a score: an honest, evaluated miner, then `change`.
std::string miner_body(const json& change, const json& last = {{"window", 9}, {"valid", true}, {"steps_behind", 0}}) {
  json score = {{"final", 0.5}, {"evidence", 0.9}, {"trust", 1.0},    {"bma", 0.5},
                {"sync", 1.0},  {"penalty", 1.0},  {"zeroed", false}, {"last_evaluated", 9}};
  if (change.is_object()) score.update(change);
  return json{{"uid", 3}, {"score", score}, {"history", json::array({last})}}.dump();
}

std::vector<std::string> factors(const std::string& body) {
  auto r = cli::explain_zero(body);
  EXPECT_TRUE(r.is_ok()) << r.status();
  std::vector<std::string> out;
  if (r.is_ok())
    for (const auto& f : *r) out.push_back(f.factor);
  return out;
}

TEST(StatusExplain, APositiveScoreNeedsNoExplanation) { EXPECT_THAT(factors(miner_body({})), ::testing::IsEmpty()); }

TEST(StatusExplain, Rejection) {
  const std::string body = miner_body(
      {{"final", 0.0}, {"zeroed", true}},
      {{"window", 9}, {"valid", false}, {"reason", "too_late"}, {"detail", "committed 2.1 s after the slot"}});
  auto r = cli::explain_zero(body);
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].factor, "rejection");
  EXPECT_THAT((*r)[0].why, HasSubstr("window 9 was rejected: too_late (committed 2.1 s after the slot)"));
  EXPECT_THAT((*r)[0].todo, HasSubstr("fewer miner.inner_steps"));
}

TEST(StatusExplain, Evidence) {
  auto r = cli::explain_zero(miner_body({{"final", 0.0}, {"evidence", -0.25}}));
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].factor, "evidence");
  EXPECT_THAT((*r)[0].why, HasSubstr("-0.250"));
  EXPECT_THAT((*r)[0].why, HasSubstr("common norm"));
}

TEST(StatusExplain, TrustNamesTheAccumulatedZ) {
  auto r = cli::explain_zero(miner_body({{"final", 0.0}, {"trust", 0.0}, {"trust_z", 0.37}}));
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].factor, "trust");
  EXPECT_THAT((*r)[0].why, HasSubstr("0.37"));
  EXPECT_THAT((*r)[0].why, HasSubstr("own assigned samples"));
  // Where no z was measured, the binary moving average is what trust came from.
  r = cli::explain_zero(miner_body({{"final", 0.0}, {"trust", 0.0}, {"bma", -0.25}}));
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_THAT((*r)[0].why, HasSubstr("-0.250"));
}

TEST(StatusExplain, SyncSaysHowFarBehind) {
  auto r = cli::explain_zero(miner_body({{"final", 0.0}, {"sync", 0.0}}, {{"window", 9}, {"steps_behind", 3}}));
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].factor, "sync");
  EXPECT_THAT((*r)[0].why, HasSubstr("3 outer steps behind"));
  EXPECT_THAT((*r)[0].todo, HasSubstr("applied aggregate"));
  // A wait the miner cut short to keep its upload slot: fewer inner steps.
  EXPECT_THAT((*r)[0].todo, HasSubstr("waited_s"));
  EXPECT_THAT((*r)[0].todo, HasSubstr("fewer inner steps"));
}

TEST(StatusExplain, PenaltyNearZeroCountsEvenWithAPositiveFinal) {
  auto r = cli::explain_zero(miner_body({{"final", 1e-6}, {"penalty", 1e-5}}));
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].factor, "penalty");
}

TEST(StatusExplain, SeveralFactorsAndANewcomer) {
  EXPECT_EQ(factors(miner_body({{"final", 0.0}, {"trust", 0.0}, {"sync", 0.0}})),
            (std::vector<std::string>{"trust", "sync"}));
  EXPECT_EQ(factors(miner_body({{"final", 0.0}, {"last_evaluated", nullptr}})),
            (std::vector<std::string>{"not_evaluated"}));
  EXPECT_FALSE(cli::explain_zero("[1,2]").is_ok());
  EXPECT_FALSE(cli::explain_zero("not json").is_ok());
}

TEST(StatusCli, ReportsAMinerFromTheChainItsStoreAndTheScoreApi) {
  testing::TempDir dir;
  auto chain = testing::start_chain(dir.path(), 0);
  ASSERT_TRUE(chain);
  const auto& key = chain->dev_keys()[2];
  const std::uint16_t uid = testing::register_key(*chain, key);
  const auto store_dir = dir.path() / "miner-store";
  auto store = storage::LocalStore::open(store_dir);
  ASSERT_TRUE(store.is_ok());
  testing::commit_location(*chain, key, "file://" + store_dir.string());
  // A packet of window 0 (the automining chain is at a low block: window 0).
  ASSERT_TRUE((*store)->put(protocol::keys::gradient(0), as_bytes(std::string("packet"))).is_ok());

  // The validator's state: this uid evaluated at window 0, its model 3 outer steps behind.
  auto db = storage::StateStore::open((dir.path() / "db").string());
  ASSERT_TRUE(db.is_ok());
  validator::MinerScore s;
  s.rating = {30, 4};
  s.bma = 0.4;
  s.sync = 0.0;
  s.last_evaluated = 0;
  s.final_score = 0;
  storage::StateStore::Batch batch;
  batch.put(storage::Family::kRatings, validator::rating_key(uid), as_bytes(validator::to_json(s).dump()));
  validator::UidResult result;  // as the validator records it (the API reads it strictly)
  result.uid = uid;
  result.valid = true;
  result.uploaded = true;
  result.eval = validator::EvalResult{};
  result.eval->steps_behind = 3.0;
  batch.put(storage::Family::kWindowScores, validator::history_key(uid, 0),
            as_bytes(validator::to_json(result).dump()));
  ASSERT_TRUE((*db)->commit_window(0, std::move(batch)).is_ok());
  validator::ApiOptions ao;
  ao.port = 0;
  auto api = validator::ApiServer::start(ao, **db, {});
  ASSERT_TRUE(api.is_ok()) << api.status();

  const std::string ks = testing::write_keystore(key, dir.path() / "miner.key", "pw");
  auto out = testing::run_process({testing::bin("crucible"), "status", "--key", ks, "--api",
                                   fmt::format("http://127.0.0.1:{}", (*api)->port()), "--set",
                                   "chain.rpc_url=" + chain->url(), "--set", "storage.peer_file_urls=true"});
  ASSERT_EQ(out.exit_code, 0) << out.err << out.out;
  EXPECT_THAT(out.out, HasSubstr(fmt::format("uid {} on netuid 1", uid)));
  EXPECT_THAT(out.out, HasSubstr("permit        no"));
  EXPECT_THAT(out.out, HasSubstr("readable      yes"));
  EXPECT_THAT(out.out, HasSubstr("last upload   window 0 (packet present)"));
  EXPECT_THAT(out.out, HasSubstr("steps behind  3"));
  EXPECT_THAT(out.out, HasSubstr("why the score is 0"));
  EXPECT_THAT(out.out, HasSubstr("- sync: its model is not the validators' model (3 outer steps behind)"));

  // A key that is not registered: told what to do, exit 1.
  const std::string other = testing::write_keystore(chain->dev_keys()[5], dir.path() / "other.key", "pw");
  auto unregistered = testing::run_process(
      {testing::bin("crucible"), "status", "--key", other, "--set", "chain.rpc_url=" + chain->url()});
  EXPECT_EQ(unregistered.exit_code, 1);
  EXPECT_THAT(unregistered.out, HasSubstr("crucible chain register --key"));
}

}  // namespace
}  // namespace crucible
