#include <charconv>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "crucible/chain/substrate.h"

#include "crucible/common/metrics.h"
#include "crucible/common/version.h"
#include "crucible/validator/api_server.h"
#include "crucible/validator/dashboard.h"
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

// A stored record through its strict decoder (state.h) and back: the API
// serves only what the typed record holds, and a damaged record is a 500
// naming its key, never a partial answer or an exception out of a handler.
template <typename Decode>
auto typed(std::string_view key, const Bytes& v, Decode decode) -> decltype(decode(json())) {
  auto r = decode(parse_value(v));
  if (!r.is_ok()) return r.status().with_context(fmt::format("record {}", key));
  return r;
}

// ?since=W&limit=N on the history routes: items from window W on, oldest
// first, at most N (1..kMaxHistory); without since, the newest N.
struct Page {
  std::optional<std::uint64_t> since;
  std::size_t limit = kMaxHistory;
};

Result<Page> page_of(std::string_view query) {
  Page p;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    const auto eq = kv.find('=');
    const std::string_view k = kv.substr(0, eq), v = eq == std::string_view::npos ? "" : kv.substr(eq + 1);
    if (k == "since") {
      p.since = parse_int<std::uint64_t>(v);
      if (!p.since) return invalid_argument("since must be a window number");
    } else if (k == "limit") {
      auto n = parse_int<std::size_t>(v);
      if (!n || *n < 1 || *n > kMaxHistory) return invalid_argument("limit must be an integer in 1..{}", kMaxHistory);
      p.limit = *n;
    } else if (!k.empty()) {
      return invalid_argument("unknown parameter '{}' (since, limit)", std::string(k.substr(0, 32)));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return p;
}

// One page of `items` (each with a "window"), oldest first; "next" is the
// since of the following page, or null when this is the last.
json paged(const std::vector<json>& items, const Page& p, json body, const char* name) {
  std::size_t first = 0;
  if (p.since) {
    while (first < items.size() && items[first]["window"].get<std::uint64_t>() < *p.since) ++first;
  } else if (items.size() > p.limit) {
    first = items.size() - p.limit;
  }
  const std::size_t end = std::min(items.size(), first + p.limit);
  json list = json::array();
  for (std::size_t i = first; i < end; ++i) list.push_back(items[i]);
  body[name] = std::move(list);
  body["next"] = end < items.size() ? items[end]["window"] : json(nullptr);
  return body;
}

Result<std::map<std::uint16_t, MinerScore>> all_scores(storage::StateStore& db) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto rows, db.scan(storage::Family::kRatings, "uid/"));
  std::map<std::uint16_t, MinerScore> out;
  for (const auto& [k, v] : rows) {
    auto uid = uid_of_rating_key(k);
    if (!uid) return data_loss("ratings: key '{}' is not uid/<uid>", k);
    CRUCIBLE_ASSIGN_OR_RETURN(out[*uid], typed(k, v, score_from_json));
  }
  return out;
}

json score_json(std::uint16_t uid, const MinerScore& s, double weight, const ScoringParams& p) {
  json j = to_json(s);
  j["uid"] = uid;
  j["weight"] = weight;
  j["trust"] = trust(s, p);
  const double z = accumulated_own_z(s);
  j["trust_z"] = std::isnan(z) ? json(nullptr) : json(z);
  // As the CLI and Bittensor's tools show it (the hex stays for programs).
  j["hotkey_ss58"] = s.hotkey ? json(chain::substrate::ss58(*s.hotkey)) : json(nullptr);
  return j;
}

ApiResponse scores(storage::StateStore& db, const ScoringParams& p) {
  auto s = all_scores(db);
  if (!s.is_ok()) return error(500, s.status().to_string());
  auto w = weights(*s, p);
  json list = json::array();
  for (const auto& [uid, score] : *s) list.push_back(score_json(uid, score, w[uid], p));
  auto last = db.last_committed_window();
  json body = {{"uids", list}};
  body["window"] = last.is_ok() && *last ? json(**last) : json(nullptr);
  return reply(200, body);
}

ApiResponse miner(storage::StateStore& db, const ScoringParams& p, std::string_view arg, const Page& page) {
  auto uid = parse_int<std::uint16_t>(arg);
  if (!uid) return error(400, "uid must be an integer in 0..65535");
  auto s = all_scores(db);
  if (!s.is_ok()) return error(500, s.status().to_string());
  if (!s->count(*uid)) return error(404, "no such uid");
  auto w = weights(*s, p);
  const std::string prefix = history_prefix(*uid);
  auto rows = db.scan(storage::Family::kWindowScores, prefix);
  if (!rows.is_ok()) return error(500, rows.status().to_string());
  std::vector<json> history;
  for (const auto& [k, v] : *rows) {
    auto w = parse_int<std::uint64_t>(std::string_view(k).substr(prefix.size()));
    if (!w) return error(500, fmt::format("record {}: the key names no window", k));
    auto r = typed(k, v, uid_result_from_json);
    if (!r.is_ok()) return error(500, r.status().to_string());
    json item = to_json(*r);
    item["window"] = *w;
    history.push_back(std::move(item));
  }
  return reply(200,
               paged(history, page, {{"uid", *uid}, {"score", score_json(*uid, (*s)[*uid], w[*uid], p)}}, "history"));
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
    if (k.ends_with("summary")) {
      auto summary = typed(k, v, window_summary_from_json);
      if (!summary.is_ok()) return error(500, summary.status().to_string());
      body["summary"] = to_json(*summary);
      continue;
    }
    auto r = typed(k, v, uid_result_from_json);
    if (!r.is_ok()) return error(500, r.status().to_string());
    if (r->rejection) {
      rejections.push_back({{"uid", r->uid}, {"reason", protocol::name(*r->rejection)}, {"detail", r->detail}});
    }
    uids.push_back(to_json(*r));
  }
  body["uids"] = uids;
  body["rejections"] = rejections;
  const std::string pk = progress_key(*w);
  auto progress = db.get(storage::Family::kWindowScores, pk);
  if (!progress.is_ok()) return error(500, progress.status().to_string());
  if (*progress) {
    auto p = typed(pk, **progress, progress_from_json);
    if (!p.is_ok()) return error(500, p.status().to_string());
    body["progress"] = to_json(*p);
  }
  return reply(200, body);
}

// Every committed window at a glance (the dashboard's per-window charts):
// uids with a result, how many uploaded, how many were valid, rejections
// counted by reason, bytes received, whether this validator led it.
ApiResponse windows_route(storage::StateStore& db, const Page& page) {
  auto marks = db.scan(storage::Family::kWindowProgress, "window/");
  if (!marks.is_ok()) return error(500, marks.status().to_string());
  std::vector<json> items;
  for (const auto& [k, v] : *marks) {
    if (auto w = parse_int<std::uint64_t>(std::string_view(k).substr(7))) items.push_back({{"window", *w}});
  }
  json body = paged(items, page, json::object(), "windows");
  for (json& item : body["windows"]) {
    const auto w = item["window"].get<std::uint64_t>();
    auto rows = db.scan(storage::Family::kWindowScores, window_prefix(w));
    if (!rows.is_ok()) return error(500, rows.status().to_string());
    std::size_t results = 0, uploaded = 0, valid = 0;
    json rejections = json::object();
    item["lead"] = false;
    item["bytes_received"] = 0;
    for (const auto& [k, v] : *rows) {
      if (k.ends_with("summary")) {
        auto summary = typed(k, v, window_summary_from_json);
        if (!summary.is_ok()) return error(500, summary.status().to_string());
        item["lead"] = summary->lead;
        item["bytes_received"] = summary->bytes_received;
        continue;
      }
      auto r = typed(k, v, uid_result_from_json);
      if (!r.is_ok()) return error(500, r.status().to_string());
      ++results;
      if (r->uploaded) ++uploaded;
      if (r->valid) ++valid;
      if (r->rejection) {
        const std::string reason(protocol::name(*r->rejection));
        rejections[reason] = rejections.value(reason, 0) + 1;
      }
    }
    item["uids"] = results;
    item["uploaded"] = uploaded;
    item["valid"] = valid;
    item["rejections"] = std::move(rejections);
  }
  return reply(200, body);
}

// The records of `family` under `prefix`, oldest first, each through `decode`.
template <typename Decode>
Result<std::vector<json>> rows_of(storage::StateStore& db, storage::Family family, std::string_view prefix,
                                  Decode decode) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto rows, db.scan(family, prefix));
  std::vector<json> out;
  for (const auto& [k, v] : rows) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto r, typed(k, v, decode));
    out.push_back(to_json(r));
  }
  return out;
}

// The global model over windows: held-out loss, tokens aggregated, bytes received.
ApiResponse progress_route(storage::StateStore& db, const Page& page) {
  auto windows = rows_of(db, storage::Family::kWindowScores, kProgressPrefix, progress_from_json);
  if (!windows.is_ok()) return error(500, windows.status().to_string());
  return reply(200, paged(*windows, page, json::object(), "windows"));
}

ApiResponse weights_route(storage::StateStore& db) {
  auto rows = db.scan(storage::Family::kWeightsLog, "epoch/");
  if (!rows.is_ok()) return error(500, rows.status().to_string());
  if (rows->empty()) return error(404, "no weights posted yet");
  auto last = typed(rows->back().first, rows->back().second, weights_entry_from_json);
  if (!last.is_ok()) return error(500, last.status().to_string());
  return reply(200, to_json(*last));
}

// Every weights post, oldest first.
ApiResponse weights_history_route(storage::StateStore& db, const Page& page) {
  auto posts = rows_of(db, storage::Family::kWeightsLog, "epoch/", weights_entry_from_json);
  if (!posts.is_ok()) return error(500, posts.status().to_string());
  return reply(200, paged(*posts, page, json::object(), "posts"));
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

// Every answer but /healthz and /metrics depends on the state alone: it is
// kept per target until the state changes (any commit moves the sequence),
// so a busy route is read from RocksDB and serialised once per window.
struct ResponseCache {
  static constexpr std::size_t kMaxEntries = 4096;
  std::mutex mu;
  const storage::StateStore* db = nullptr;
  std::uint64_t sequence = 0;
  std::map<std::string, ApiResponse, std::less<>> entries;
};

ResponseCache& response_cache() {
  static ResponseCache c;
  return c;
}

ApiResponse route(storage::StateStore& db, const ScoringParams& scoring, std::string_view path,
                  std::string_view query) {
  const bool history = path == "/v1/progress" || path == "/v1/weights/history" || path == "/v1/windows" ||
                       path.starts_with("/v1/miners/");
  Page page;
  if (history) {
    auto p = page_of(query);
    if (!p.is_ok()) return error(400, p.status().message());
    page = *p;
  } else if (!query.empty()) {
    return error(400, "this route takes no parameters");
  }
  if (path == "/v1/scores") return scores(db, scoring);
  if (path == "/v1/weights") return weights_route(db);
  if (path == "/v1/weights/history") return weights_history_route(db, page);
  if (path == "/v1/progress") return progress_route(db, page);
  if (path.starts_with("/v1/miners/")) return miner(db, scoring, path.substr(11), page);
  if (path == "/v1/windows") return windows_route(db, page);
  if (path.starts_with("/v1/windows/")) return window(db, path.substr(12));
  return error(404, "unknown path");
}

}  // namespace

ApiResponse handle_get(storage::StateStore& db, const ScoringParams& scoring, std::string_view target) {
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  if (path == "/healthz") return health(db);
  if (auto page = dashboard_get(path)) return *page;  // the same files whatever the query
  if (path == "/metrics") return {200, "text/plain; version=0.0.4", metrics::global().render(), "no-store"};
  ResponseCache& c = response_cache();
  const std::uint64_t seq = db.sequence();
  {
    std::lock_guard lock(c.mu);
    if (c.db != &db || c.sequence != seq) {
      c.entries.clear();
      c.db = &db;
      c.sequence = seq;
    }
    if (auto it = c.entries.find(target); it != c.entries.end()) return it->second;
  }
  ApiResponse r = route(db, scoring, path, query);
  if (r.status == 500) return r;                        // a failed read is not an answer to keep
  if (r.status == 200) r.etag = http::etag_of(r.body);  // once per state, not per request
  std::lock_guard lock(c.mu);
  if (c.db == &db && c.sequence == seq) {
    if (c.entries.size() >= ResponseCache::kMaxEntries) c.entries.clear();
    c.entries.emplace(std::string(target), r);
  }
  return r;
}

}  // namespace crucible::validator
