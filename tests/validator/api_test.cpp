// The score API over real HTTP on loopback, on a RocksDB state written the
// way the validator writes it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "crucible/chain/substrate.h"
#include "crucible/common/metrics.h"
#include "crucible/validator/api_server.h"
#include "crucible/validator/state.h"
#include "support/http_client.h"
#include "support/temp_dir.h"

namespace crucible::validator {
namespace {

using ::testing::HasSubstr;

Bytes bytes_of(const nlohmann::json& j) {
  std::string s = j.dump();
  return Bytes(s.begin(), s.end());
}

using testing::body_of;
using testing::header_of;
using testing::http_exchange;

std::string get(std::uint16_t port, const std::string& path, const std::string& headers = {}) {
  return testing::http_get(port, path, headers);
}

nlohmann::json json_of(const std::string& response) { return nlohmann::json::parse(body_of(response)); }

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = storage::StateStore::open((dir_.path() / "db").string());
    ASSERT_TRUE(db.is_ok());
    db_ = std::move(*db);
    MinerScore a, b;
    a.rating = {30, 4};
    a.bma = 0.2;
    a.final_score = (30 - 12) * 0.2;
    a.last_evaluated = 7;
    a.hotkey = hotkey_;
    b.final_score = 0;
    storage::StateStore::Batch batch;
    batch.put(storage::Family::kRatings, rating_key(1), bytes_of(to_json(a)));
    batch.put(storage::Family::kRatings, rating_key(2), bytes_of(to_json(b)));
    WindowSummary summary;
    summary.window = 7;
    summary.evaluated = {1};
    summary.aggregate = std::vector<std::uint16_t>{1};
    batch.put(storage::Family::kWindowScores, window_summary_key(7), bytes_of(to_json(summary)));
    UidResult valid;
    valid.uid = 1;
    valid.valid = true;
    valid.uploaded = true;
    batch.put(storage::Family::kWindowScores, window_uid_key(7, 1), bytes_of(to_json(valid)));
    UidResult rejected;
    rejected.uid = 2;
    rejected.uploaded = true;
    rejected.rejection = protocol::Rejection::kNotAssignedData;
    rejected.detail = "sample digest mismatch";
    batch.put(storage::Family::kWindowScores, window_uid_key(7, 2), bytes_of(to_json(rejected)));
    batch.put(storage::Family::kWindowScores, history_key(2, 7), bytes_of(to_json(rejected)));
    for (std::uint64_t w : {6, 7}) {
      ProgressRecord p{w, 5.0 - static_cast<double>(w) * 0.1, 64, 2048 * w, 1000 * w, {1}};
      batch.put(storage::Family::kWindowScores, progress_key(w), bytes_of(to_json(p)));
    }
    ASSERT_TRUE(db_->commit_window(7, std::move(batch)).is_ok());
    storage::StateStore::Batch w;
    WeightsLogEntry posted;
    posted.epoch = 3;
    posted.window = 7;
    posted.uids = {1};
    posted.values = {65535};
    posted.phase = WeightsPhase::kConfirmed;
    posted.tx = "0xabc";
    w.put(storage::Family::kWeightsLog, epoch_key(3), bytes_of(to_json(posted)));
    ASSERT_TRUE(db_->commit(std::move(w)).is_ok());
    ApiOptions o;
    o.port = 0;  // any free port (the binary treats 0 as off; the server itself takes it)
    o.idle_timeout_s = 1.0;
    o.header_timeout_s = 1.0;
    o.max_connections = 4;
    auto s = ApiServer::start(o, *db_, ScoringParams{});
    ASSERT_TRUE(s.is_ok()) << s.status();
    server_ = std::move(*s);
  }

  testing::TempDir dir_;
  chain::Hash32 hotkey_ =
      chain::substrate::mirror_account(*chain::Address::parse("0x70997970C51812dc3A010C7d01b50e0d17dc79C8"));
  std::unique_ptr<storage::StateStore> db_;
  std::unique_ptr<ApiServer> server_;
};

TEST_F(ApiTest, ScoresListEveryUidWithWeights) {
  auto r = get(server_->port(), "/v1/scores");
  EXPECT_THAT(r, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(r, HasSubstr("application/json"));
  auto j = json_of(r);
  EXPECT_EQ(j["window"], 7);
  ASSERT_EQ(j["uids"].size(), 2u);
  EXPECT_EQ(j["uids"][0]["uid"], 1);
  EXPECT_DOUBLE_EQ(j["uids"][0]["weight"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["uids"][0]["mu"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(j["uids"][1]["weight"].get<double>(), 0.0);
  // The hotkey as 0x-hex for programs and in SS58 as the CLI shows it.
  EXPECT_EQ(j["uids"][0]["hotkey"], to_hex(hotkey_));
  EXPECT_EQ(j["uids"][0]["hotkey_ss58"], chain::substrate::ss58(hotkey_));
  EXPECT_EQ(j["uids"][0]["hotkey_ss58"].get<std::string>().front(), '5');
  EXPECT_TRUE(j["uids"][1]["hotkey_ss58"].is_null());
}

TEST_F(ApiTest, MinerWindowAndWeightsRoutes) {
  auto m = json_of(get(server_->port(), "/v1/miners/2"));
  ASSERT_EQ(m["history"].size(), 1u);
  EXPECT_EQ(m["history"][0]["reason"], "not_assigned_data");
  EXPECT_EQ(m["history"][0]["detail"], "sample digest mismatch");
  EXPECT_EQ(m["history"][0]["window"], 7);
  auto w = json_of(get(server_->port(), "/v1/windows/7"));
  EXPECT_EQ(w["summary"]["aggregate"], nlohmann::json::array({1}));
  ASSERT_EQ(w["rejections"].size(), 1u);
  EXPECT_EQ(w["rejections"][0]["uid"], 2);
  EXPECT_EQ(w["rejections"][0]["reason"], "not_assigned_data");
  EXPECT_EQ(w["rejections"][0]["detail"], "sample digest mismatch");
  EXPECT_DOUBLE_EQ(w["progress"]["heldout_loss"].get<double>(), 4.3);
  auto progress = json_of(get(server_->port(), "/v1/progress"));
  ASSERT_EQ(progress["windows"].size(), 2u);  // the whole curve, in window order
  EXPECT_EQ(progress["windows"][0]["window"], 6);
  EXPECT_DOUBLE_EQ(progress["windows"][1]["heldout_loss"].get<double>(), 4.3);
  EXPECT_EQ(progress["windows"][1]["tokens_aggregated"], 2048 * 7);
  EXPECT_EQ(progress["windows"][1]["bytes_received"], 7000);
  EXPECT_EQ(json_of(get(server_->port(), "/v1/weights"))["tx"], "0xabc");
  auto posts = json_of(get(server_->port(), "/v1/weights/history"))["posts"];
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0]["tx"], "0xabc");
  auto health = json_of(get(server_->port(), "/healthz"));
  EXPECT_EQ(health["status"], "ok");
  EXPECT_EQ(health["role"], "validator");
  EXPECT_EQ(health["window"], 7);  // the last committed window
  EXPECT_FALSE(health["version"].get<std::string>().empty());
  metrics::global().set(metrics::Gauge::kWindow, 7, {{"role", "validator"}});
  EXPECT_THAT(get(server_->port(), "/metrics"), HasSubstr("crucible_window{role=\"validator\"} 7"));
}

TEST_F(ApiTest, ErrorsAreJsonWithTheRightStatus) {
  auto p = server_->port();
  EXPECT_THAT(get(p, "/nope"), HasSubstr("HTTP/1.1 404"));
  EXPECT_EQ(json_of(get(p, "/nope"))["error"], "unknown path");
  EXPECT_THAT(get(p, "/v1/miners/abc"), HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(get(p, "/v1/miners/70000"), HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(get(p, "/v1/miners/9"), HasSubstr("HTTP/1.1 404"));
  EXPECT_THAT(get(p, "/v1/windows/-1"), HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(get(p, "/v1/windows/8"), HasSubstr("HTTP/1.1 404"));
  EXPECT_THAT(http_exchange(p, "POST /v1/scores HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
              HasSubstr("HTTP/1.1 405"));
  EXPECT_THAT(http_exchange(p, "GET /v1/scores HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"),
              HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(http_exchange(p, "NOT HTTP AT ALL\r\n\r\n"), HasSubstr("HTTP/1.1 400"));
  std::string huge = "GET /v1/scores HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(20000, 'a') + "\r\n\r\n";
  EXPECT_THAT(http_exchange(p, huge), HasSubstr("HTTP/1.1 431"));
}

// The API reads every record through its strict decoder (state.h): a damaged
// one is a 500 naming its key (it threw nlohmann's type_error out of the
// handler, or served a partial record, before), and every other route still
// answers.
TEST_F(ApiTest, ADamagedRecordIsA500NamingItsKeyAndOtherRoutesStillAnswer) {
  auto p = server_->port();
  const std::vector<std::pair<std::string, std::string>> damaged{
      {window_uid_key(7, 1), R"({"uid":1,"valid":"yes","uploaded":true,"final":0})"},
      {window_summary_key(7), R"({"window":7,"lead":true})"},
      {progress_key(7), R"([1,2])"},
      {history_key(2, 7), R"({"uid":70000,"valid":false,"uploaded":true,"final":0})"}};
  for (const auto& [key, text] : damaged) {
    SCOPED_TRACE(key);
    auto before = db_->get(storage::Family::kWindowScores, key);
    ASSERT_TRUE(before.is_ok() && *before);
    storage::StateStore::Batch b;
    b.put(storage::Family::kWindowScores, key, Bytes(text.begin(), text.end()));
    ASSERT_TRUE(db_->commit(std::move(b)).is_ok());
    const std::string route = key.starts_with("u/")   ? "/v1/miners/2"
                              : key.starts_with("w/") ? "/v1/windows/7"
                                                      : "/v1/progress";
    auto r = get(p, route);
    EXPECT_THAT(r, HasSubstr("HTTP/1.1 500"));
    EXPECT_THAT(json_of(r)["error"].get<std::string>(), HasSubstr(key));
    if (key.starts_with("w/")) {
      EXPECT_THAT(get(p, "/v1/windows"), HasSubstr("HTTP/1.1 500"));
    }
    EXPECT_THAT(get(p, "/v1/scores"), HasSubstr("HTTP/1.1 200"));  // the rest still answers
    storage::StateStore::Batch restore;
    restore.put(storage::Family::kWindowScores, key, **before);
    ASSERT_TRUE(db_->commit(std::move(restore)).is_ok());
    EXPECT_THAT(get(p, route), HasSubstr("HTTP/1.1 200"));
  }
  storage::StateStore::Batch w;
  w.put(storage::Family::kWeightsLog, epoch_key(4), as_bytes(std::string_view(R"({"epoch":4,"status":"confirmed"})")));
  ASSERT_TRUE(db_->commit(std::move(w)).is_ok());
  EXPECT_THAT(get(p, "/v1/weights"), HasSubstr("HTTP/1.1 500"));
  EXPECT_THAT(json_of(get(p, "/v1/weights/history"))["error"].get<std::string>(), HasSubstr(epoch_key(4)));
}

TEST_F(ApiTest, SlowClientsAreCutOffAndOthersStillServed) {
  auto p = server_->port();
  // A client that sends half a request and stalls is closed after the idle timeout.
  auto t0 = std::chrono::steady_clock::now();
  std::string r = http_exchange(p, "GET /v1/sco", 5000);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r, "");
  EXPECT_LT(waited, 4.0);
  // Meanwhile, and after, requests are answered.
  std::thread stall([p] { http_exchange(p, "GET /v1/", 3000); });
  EXPECT_THAT(get(p, "/healthz"), HasSubstr("HTTP/1.1 200"));
  stall.join();
  // Keep-alive: two requests on one connection.
  std::string two = http_exchange(
      p, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/weights HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(two, HasSubstr("\"ok\""));
  EXPECT_THAT(two, HasSubstr("0xabc"));
}

TEST_F(ApiTest, EveryRouteCarriesAnETagAndIfNoneMatchGets304) {
  auto p = server_->port();
  for (const char* route : {"/v1/scores", "/v1/miners/1", "/v1/windows/7", "/v1/weights", "/v1/weights/history",
                            "/v1/progress", "/healthz"}) {
    SCOPED_TRACE(route);
    auto first = get(p, route);
    ASSERT_THAT(first, HasSubstr("HTTP/1.1 200"));
    const std::string etag = header_of(first, "ETag");
    ASSERT_EQ(etag.size(), 18u);                        // a quoted 64-bit hash
    EXPECT_EQ(etag, header_of(get(p, route), "ETag"));  // the same body, the same tag
    EXPECT_FALSE(header_of(first, "Cache-Control").empty());
    auto again = get(p, route, "If-None-Match: W/\"other\", " + etag + "\r\n");
    EXPECT_THAT(again, HasSubstr("HTTP/1.1 304"));
    EXPECT_EQ(body_of(again), "");
    EXPECT_EQ(header_of(again, "ETag"), etag);
    EXPECT_THAT(get(p, route, "If-None-Match: \"0000000000000000\"\r\n"), HasSubstr("HTTP/1.1 200"));
  }
  // The scores' tag changes when a new window is committed.
  const std::string before = header_of(get(p, "/v1/scores"), "ETag");
  storage::StateStore::Batch batch;
  MinerScore c;
  c.final_score = 1;
  batch.put(storage::Family::kRatings, rating_key(3), bytes_of(to_json(c)));
  ASSERT_TRUE(db_->commit_window(8, std::move(batch)).is_ok());
  auto after = get(p, "/v1/scores", "If-None-Match: " + before + "\r\n");
  EXPECT_THAT(after, HasSubstr("HTTP/1.1 200"));
  EXPECT_NE(header_of(after, "ETag"), before);
  // Errors are never cached.
  EXPECT_EQ(header_of(get(p, "/nope"), "Cache-Control"), "no-store");
  EXPECT_EQ(header_of(get(p, "/nope"), "ETag"), "");
}

TEST_F(ApiTest, HistoryRoutesArePagedBySinceAndLimit) {
  auto p = server_->port();
  auto newest = json_of(get(p, "/v1/progress?limit=1"));  // no since: the newest page
  ASSERT_EQ(newest["windows"].size(), 1u);
  EXPECT_EQ(newest["windows"][0]["window"], 7);
  EXPECT_TRUE(newest["next"].is_null());
  auto first = json_of(get(p, "/v1/progress?since=0&limit=1"));  // from the start, oldest first
  ASSERT_EQ(first["windows"].size(), 1u);
  EXPECT_EQ(first["windows"][0]["window"], 6);
  EXPECT_EQ(first["next"], 7);
  auto second = json_of(get(p, "/v1/progress?since=7&limit=1"));
  ASSERT_EQ(second["windows"].size(), 1u);
  EXPECT_EQ(second["windows"][0]["window"], 7);
  EXPECT_TRUE(second["next"].is_null());
  EXPECT_EQ(json_of(get(p, "/v1/progress?since=8"))["windows"].size(), 0u);
  auto miner = json_of(get(p, "/v1/miners/2?since=7&limit=5"));
  ASSERT_EQ(miner["history"].size(), 1u);
  EXPECT_EQ(miner["history"][0]["window"], 7);
  EXPECT_EQ(json_of(get(p, "/v1/weights/history?limit=1"))["posts"].size(), 1u);
  for (const char* bad : {"/v1/progress?limit=0", "/v1/progress?limit=1001", "/v1/progress?since=-1",
                          "/v1/miners/2?limit=x", "/v1/progress?page=2", "/v1/scores?limit=1"}) {
    EXPECT_THAT(get(p, bad), HasSubstr("HTTP/1.1 400")) << bad;
  }
}

// /v1/windows: every committed window at a glance, rejections counted by
// reason from the same rows /v1/windows/{w} lists.
TEST_F(ApiTest, WindowsListCountsEachCommittedWindow) {
  auto p = server_->port();
  storage::StateStore::Batch batch;
  for (std::uint16_t uid : {1, 2, 3}) {
    UidResult r;
    r.uid = uid;
    r.uploaded = uid != 3;
    if (uid == 1) {
      r.valid = true;
    } else {
      r.rejection = uid == 2 ? protocol::Rejection::kCopy : protocol::Rejection::kMissing;
    }
    batch.put(storage::Family::kWindowScores, window_uid_key(9, uid), bytes_of(to_json(r)));
  }
  WindowSummary summary;
  summary.window = 9;
  summary.lead = true;
  summary.bytes_received = 1234;
  batch.put(storage::Family::kWindowScores, window_summary_key(9), bytes_of(to_json(summary)));
  ASSERT_TRUE(db_->commit_window(9, std::move(batch)).is_ok());

  auto all = json_of(get(p, "/v1/windows"));
  ASSERT_EQ(all["windows"].size(), 2u) << all.dump();  // 7 and 9: the committed windows, oldest first
  EXPECT_TRUE(all["next"].is_null());
  const auto& w7 = all["windows"][0];
  EXPECT_EQ(w7["window"], 7);
  EXPECT_EQ(w7["uids"], 2);
  EXPECT_EQ(w7["valid"], 1);
  EXPECT_EQ(w7["rejections"], nlohmann::json({{"not_assigned_data", 1}}));
  const auto& w9 = all["windows"][1];
  EXPECT_EQ(w9["window"], 9);
  EXPECT_EQ(w9["lead"], true);
  EXPECT_EQ(w9["bytes_received"], 1234);
  EXPECT_EQ(w9["uids"], 3);
  EXPECT_EQ(w9["uploaded"], 2);
  EXPECT_EQ(w9["valid"], 1);
  EXPECT_EQ(w9["rejections"], nlohmann::json({{"copy", 1}, {"missing", 1}}));
  auto page = json_of(get(p, "/v1/windows?since=0&limit=1"));
  ASSERT_EQ(page["windows"].size(), 1u);
  EXPECT_EQ(page["windows"][0]["window"], 7);
  EXPECT_EQ(page["next"], 9);
  EXPECT_THAT(get(p, "/v1/windows?limit=0"), HasSubstr("HTTP/1.1 400"));
}

// The dashboard: its page at "/" and at each uid's address, its files under
// /assets/, each file the page names present, and a policy that lets the
// page load only its own files and talk only to its own server.
TEST_F(ApiTest, ServesTheDashboardAndItsFiles) {
  auto p = server_->port();
  for (const char* page : {"/", "/uid/2", "/uid/65535", "/?refresh=1"}) {
    SCOPED_TRACE(page);
    auto r = get(p, page);
    ASSERT_THAT(r, HasSubstr("HTTP/1.1 200"));
    EXPECT_THAT(header_of(r, "Content-Type"), HasSubstr("text/html"));
    EXPECT_THAT(header_of(r, "Content-Security-Policy"), HasSubstr("default-src 'none'; script-src 'self'"));
    EXPECT_EQ(header_of(r, "X-Content-Type-Options"), "nosniff");
    EXPECT_THAT(body_of(r), HasSubstr("<script type=\"module\" src=\"/assets/dashboard.js\">"));
  }
  // Every file index.html and the scripts refer to is served, with its type.
  const std::string index = body_of(get(p, "/"));
  std::vector<std::string> referred;
  for (const std::string attr : {"src=\"", "href=\""}) {
    for (auto at = index.find(attr); at != std::string::npos; at = index.find(attr, at + 1)) {
      const auto start = at + attr.size();
      const std::string ref = index.substr(start, index.find('"', start) - start);
      if (ref.starts_with("/assets/")) referred.push_back(ref);
    }
  }
  const std::string script = body_of(get(p, "/assets/dashboard.js"));
  EXPECT_THAT(script, HasSubstr("from \"./charts.js\""));
  referred.push_back("/assets/charts.js");
  EXPECT_GE(referred.size(), 4u);  // icon, style, script, its module
  for (const auto& ref : referred) {
    SCOPED_TRACE(ref);
    auto r = get(p, ref);
    EXPECT_THAT(r, HasSubstr("HTTP/1.1 200"));
    EXPECT_FALSE(body_of(r).empty());
    const std::string type = header_of(r, "Content-Type");
    const char* want = ref.ends_with(".js") ? "text/javascript" : ref.ends_with(".css") ? "text/css" : "image/svg+xml";
    EXPECT_THAT(type, HasSubstr(want));
    EXPECT_EQ(header_of(r, "ETag").size(), 18u);
  }
  // Every path the routes reach in the page's script is one the API answers.
  for (const char* route : {"\"/healthz\"", "\"/v1/scores\"", "`/v1/progress?limit=", "`/v1/windows?limit=",
                            "\"/v1/weights/history?limit=", "`/v1/miners/${uid}?limit="}) {
    EXPECT_THAT(script, HasSubstr(route));
  }
  for (const char* missing : {"/assets/nope.js", "/assets/../index.html"}) {
    EXPECT_THAT(get(p, missing), HasSubstr("HTTP/1.1 404")) << missing;
  }
  for (const char* not_a_page : {"/uid/", "/uid/abc", "/uid/123456", "/index.htm"}) {
    auto r = get(p, not_a_page);
    EXPECT_THAT(r, HasSubstr("HTTP/1.1 404")) << not_a_page;
    EXPECT_THAT(header_of(r, "Content-Type"), HasSubstr("application/json")) << not_a_page;
  }
}

TEST_F(ApiTest, NeverWritesTheState) {
  auto before = db_->scan(storage::Family::kRatings, "");
  for (int i = 0; i < 5; ++i) get(server_->port(), "/v1/scores");
  EXPECT_EQ(db_->scan(storage::Family::kRatings, "")->size(), before->size());
  EXPECT_EQ(*db_->last_committed_window(), 7u);
}

}  // namespace
}  // namespace crucible::validator
