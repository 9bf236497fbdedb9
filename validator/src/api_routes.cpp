#include <charconv>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "crucible/common/metrics.h"
#include "crucible/common/version.h"
#include "crucible/validator/api_server.h"
#include "crucible/validator/state.h"

namespace crucible::validator {
namespace {

using nlohmann::json;
constexpr std::size_t kMaxHistory = 1000;

ApiResponse reply(int status, const json& body) { return {status, "application/json", body.dump() + "\n"}; }
ApiResponse error(int status, const std::string& message) {
  ApiResponse r = reply(status, {{"error", message}});
  r.cache_control = "no-store";
  return r;
}

template <typename Int>
std::optional<Int> parse_int(std::string_view s) {
  Int v{};
  if (s.empty() || s.size() > 20) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

json parse_value(const Bytes& b) { return json::parse(b.begin(), b.end(), nullptr, false); }

Result<std::map<std::uint16_t, MinerScore>> all_scores(storage::StateStore& db) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto rows, db.scan(storage::Family::kRatings, "uid/"));
  std::map<std::uint16_t, MinerScore> out;
  for (const auto& [k, v] : rows) {
    auto uid = parse_int<std::uint16_t>(std::string_view(k).substr(4));
    json j = parse_value(v);
    if (uid && j.is_object()) out[*uid] = score_from_json(j);
  }
  return out;
}

json score_json(std::uint16_t uid, const MinerScore& s, double weight) {
  json j = to_json(s);
  j["uid"] = uid;
  j["weight"] = weight;
  return j;
}

// /v1/scores changes only when a window is committed: the body is cached
// per committed window (and rebuilt when the window moves).
struct ScoresCache {
  std::mutex mu;
  const storage::StateStore* db = nullptr;
  std::optional<std::uint64_t> window;
  bool valid = false;
  ApiResponse response;
};
ScoresCache& scores_cache() {
  static ScoresCache c;
  return c;
}

ApiResponse scores_uncached(storage::StateStore& db, const ScoringParams& p);

ApiResponse scores(storage::StateStore& db, const ScoringParams& p) {
  auto last = db.last_committed_window();
  if (!last.is_ok()) return error(500, last.status().to_string());
  ScoresCache& c = scores_cache();
  std::lock_guard lock(c.mu);
  if (!c.valid || c.window != *last || c.db != &db) {
    c.response = scores_uncached(db, p);
    c.db = &db;
    c.window = *last;
    c.valid = c.response.status == 200;
  }
  return c.response;
}

ApiResponse scores_uncached(storage::StateStore& db, const ScoringParams& p) {
  auto s = all_scores(db);
  if (!s.is_ok()) return error(500, s.status().to_string());
  auto w = weights(*s, p);
  json list = json::array();
  for (const auto& [uid, score] : *s) list.push_back(score_json(uid, score, w[uid]));
  auto last = db.last_committed_window();
  json body = {{"uids", list}};
  body["window"] = last.is_ok() && *last ? json(**last) : json(nullptr);
  return reply(200, body);
}

ApiResponse miner(storage::StateStore& db, const ScoringParams& p, std::string_view arg) {
  auto uid = parse_int<std::uint16_t>(arg);
  if (!uid) return error(400, "uid must be an integer in 0..65535");
  auto s = all_scores(db);
  if (!s.is_ok()) return error(500, s.status().to_string());
  if (!s->count(*uid)) return error(404, "no such uid");
  auto w = weights(*s, p);
  json history = json::array();
  const std::string prefix = history_prefix(*uid);
  auto rows = db.scan(storage::Family::kWindowScores, prefix);
  if (!rows.is_ok()) return error(500, rows.status().to_string());
  const std::size_t first = rows->size() > kMaxHistory ? rows->size() - kMaxHistory : 0;
  for (std::size_t i = first; i < rows->size(); ++i) {
    json r = parse_value((*rows)[i].second);
    r["window"] = parse_int<std::uint64_t>(std::string_view((*rows)[i].first).substr(prefix.size())).value_or(0);
    history.push_back(std::move(r));
  }
  return reply(200, {{"uid", *uid}, {"score", score_json(*uid, (*s)[*uid], w[*uid])}, {"history", history}});
}

ApiResponse window(storage::StateStore& db, std::string_view arg) {
  auto w = parse_int<std::uint64_t>(arg);
  if (!w) return error(400, "window must be a non-negative integer");
  auto rows = db.scan(storage::Family::kWindowScores, window_prefix(*w));
  if (!rows.is_ok()) return error(500, rows.status().to_string());
  if (rows->empty()) return error(404, "window not evaluated");
  json body = {{"window", *w}};
  json uids = json::array();
  json rejections = json::array();
  for (const auto& [k, v] : *rows) {
    json r = parse_value(v);
    if (k.ends_with("summary")) {
      body["summary"] = r;
    } else {
      if (r.contains("reason")) {
        rejections.push_back({{"uid", r["uid"]}, {"reason", r["reason"]}, {"detail", r.value("detail", "")}});
      }
      uids.push_back(std::move(r));
    }
  }
  body["uids"] = uids;
  body["rejections"] = rejections;
  auto progress = db.get(storage::Family::kWindowScores, progress_key(*w));
  if (progress.is_ok() && *progress) body["progress"] = parse_value(**progress);
  return reply(200, body);
}

// The rows of `family` under `prefix`, oldest first (the last kMaxHistory), as a JSON array.
Result<json> history_of(storage::StateStore& db, storage::Family family, std::string_view prefix) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto rows, db.scan(family, prefix));
  json out = json::array();
  const std::size_t first = rows.size() > kMaxHistory ? rows.size() - kMaxHistory : 0;
  for (std::size_t i = first; i < rows.size(); ++i) out.push_back(parse_value(rows[i].second));
  return out;
}

// The global model over windows: held-out loss, tokens aggregated, bytes received.
ApiResponse progress_route(storage::StateStore& db) {
  auto windows = history_of(db, storage::Family::kWindowScores, kProgressPrefix);
  if (!windows.is_ok()) return error(500, windows.status().to_string());
  return reply(200, {{"windows", *windows}});
}

ApiResponse weights_route(storage::StateStore& db) {
  auto rows = db.scan(storage::Family::kWeightsLog, "epoch/");
  if (!rows.is_ok()) return error(500, rows.status().to_string());
  if (rows->empty()) return error(404, "no weights posted yet");
  return reply(200, parse_value(rows->back().second));
}

// Every weights post, oldest first (the last kMaxHistory).
ApiResponse weights_history_route(storage::StateStore& db) {
  auto posts = history_of(db, storage::Family::kWeightsLog, "epoch/");
  if (!posts.is_ok()) return error(500, posts.status().to_string());
  return reply(200, {{"posts", *posts}});
}

// What a probe or an operator wants at a glance: alive, which role and
// version, and the last window committed to the state.
ApiResponse health(storage::StateStore& db) {
  auto last = db.last_committed_window();
  json body = {{"status", "ok"}, {"role", "validator"}, {"version", std::string(project_version())}};
  body["window"] = last.is_ok() && *last ? json(**last) : json(nullptr);
  ApiResponse r = reply(200, body);
  r.cache_control = "no-store";
  return r;
}

}  // namespace

ApiResponse handle_get(storage::StateStore& db, const ScoringParams& scoring, std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  if (path == "/healthz") return health(db);
  if (path == "/metrics") return {200, "text/plain; version=0.0.4", metrics::global().render(), "no-store"};
  if (path == "/v1/scores") return scores(db, scoring);
  if (path == "/v1/weights") return weights_route(db);
  if (path == "/v1/weights/history") return weights_history_route(db);
  if (path == "/v1/progress") return progress_route(db);
  if (path.starts_with("/v1/miners/")) return miner(db, scoring, path.substr(11));
  if (path.starts_with("/v1/windows/")) return window(db, path.substr(12));
  return error(404, "unknown path");
}

}  // namespace crucible::validator
