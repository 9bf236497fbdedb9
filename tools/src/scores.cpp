#include "crucible/cli/scores.h"

#include <curl/curl.h>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace crucible::cli {
namespace {

constexpr std::size_t kMaxBody = 16 << 20;

std::size_t on_data(char* p, std::size_t size, std::size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() + size * n > kMaxBody) return 0;  // aborts the transfer
  out->append(p, size * n);
  return size * n;
}

}  // namespace

Result<std::string> http_get(const std::string& url, double timeout_s) {
  CURL* c = curl_easy_init();
  if (c == nullptr) return internal_error("curl_easy_init failed");
  std::string body;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) return unavailable("GET {}: {}", url, curl_easy_strerror(rc));
  if (status != 200) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    std::string message = j.is_object() && j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>()
                                                                                         : body.substr(0, 200);
    return unavailable("GET {}: HTTP {}: {}", url, status, message);
  }
  return body;
}

Result<std::string> format_scores(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("uids") || !j["uids"].is_array()) {
    return data_loss("not a /v1/scores response");
  }
  std::vector<nlohmann::json> rows(j["uids"].begin(), j["uids"].end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.value("final", 0.0) > b.value("final", 0.0); });
  std::string out =
      fmt::format("window {}\n", j.contains("window") && !j["window"].is_null() ? j["window"].dump() : "-");
  out += fmt::format("{:>5}  {:>10}  {:>8}  {:>7}  {:>7}  {:>6}  {:>8}  {:>14}\n", "uid", "final", "evidence", "trust",
                     "bma", "sync", "weight", "last evaluated");
  for (const auto& r : rows) {
    std::string last =
        r.contains("last_evaluated") && r["last_evaluated"].is_number() ? r["last_evaluated"].dump() : "-";
    out += fmt::format("{:>5}  {:>10.4f}  {:>8.3f}  {:>7.3f}  {:>7.3f}  {:>6.3f}  {:>8.4f}  {:>14}\n",
                       r.value("uid", 0), r.value("final", 0.0), r.value("evidence", 0.0), r.value("trust", 0.0),
                       r.value("bma", 0.0), r.value("sync", 0.0), r.value("weight", 0.0), last);
  }
  return out;
}

}  // namespace crucible::cli
