#include "crucible/chain/rpc_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "crucible/chain/abi.h"

namespace crucible::chain {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Sink {
  std::string body;
  std::size_t cap = 0;
  bool overflow = false;
};

std::size_t on_data(char* data, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  std::size_t bytes = size * n;
  if (sink->body.size() + bytes > sink->cap) {
    sink->overflow = true;
    return 0;  // aborts the transfer
  }
  sink->body.append(data, bytes);
  return bytes;
}

bool transient_curl(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return true;
    default:
      return false;
  }
}

std::chrono::milliseconds jittered(std::chrono::milliseconds base) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<std::int64_t> dist(base.count() / 2, base.count());
  return std::chrono::milliseconds(dist(rng));
}

}  // namespace

RpcClient::RpcClient(RpcOptions options) : options_(std::move(options)) {
  global_init();
  curl_ = curl_easy_init();
}

RpcClient::~RpcClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

Result<std::string> RpcClient::post(std::string_view what, const std::string& body) {
  if (curl_ == nullptr) return internal_error("curl_easy_init failed");
  CURL* curl = static_cast<CURL*>(curl_);
  const auto deadline = Clock::now() + options_.call_timeout;
  auto backoff = options_.backoff_initial;
  Status last = unavailable("no attempt made");
  for (int attempt = 1; attempt <= std::max(1, options_.max_attempts); ++attempt) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    Sink sink;
    sink.cap = options_.max_response_bytes;
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, options_.url.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::min(left, options_.connect_timeout).count()));
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(curl);
    long http = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http);
    curl_slist_free_all(headers);

    bool retry = false;
    if (sink.overflow) {
      return resource_exhausted("rpc {} to {}: response exceeds {} bytes", what, options_.url,
                                options_.max_response_bytes);
    } else if (rc != CURLE_OK) {
      bool timeout = rc == CURLE_OPERATION_TIMEDOUT;
      std::string msg =
          fmt::format("rpc {} to {}: {} (attempt {})", what, options_.url, curl_easy_strerror(rc), attempt);
      last = timeout ? deadline_exceeded("{}", msg) : unavailable("{}", msg);
      retry = transient_curl(rc);
    } else if (http == 429 || http >= 500) {
      last = unavailable("rpc {} to {}: HTTP {} (attempt {})", what, options_.url, http, attempt);
      retry = true;
    } else if (http != 200) {
      return failed_precondition("rpc {} to {}: HTTP {}: {}", what, options_.url, http, sink.body.substr(0, 200));
    } else {
      return std::move(sink.body);
    }
    if (!retry) return last;
    auto pause = jittered(backoff);
    if (Clock::now() + pause >= deadline) break;
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, options_.backoff_max);
  }
  if (Clock::now() >= deadline && last.code() != StatusCode::kDeadlineExceeded) {
    return deadline_exceeded("rpc {} to {}: deadline of {} ms passed; last error: {}", what, options_.url,
                             options_.call_timeout.count(), last.message());
  }
  return last;
}

Status RpcClient::error_status(std::string_view method, const json& error) {
  std::int64_t code = error.value("code", std::int64_t{0});
  std::string message =
      error.contains("message") && error["message"].is_string() ? error["message"].get<std::string>() : "";
  std::string data_hex;
  if (error.contains("data")) {
    const json& d = error["data"];
    if (d.is_string()) data_hex = d.get<std::string>();
    if (d.is_object() && d.contains("data") && d["data"].is_string()) data_hex = d["data"].get<std::string>();
  }
  bool reverted = code == 3 || message.find("revert") != std::string::npos;
  if (reverted) {
    std::string reason;
    if (auto data = from_hex(data_hex); data.is_ok() && !data->empty()) reason = abi::describe_revert(*data);
    if (reason.empty()) {
      auto colon = message.find("reverted");
      reason = colon == std::string::npos ? message : message.substr(colon + 8);
      reason.erase(0, reason.find_first_not_of(": "));
      if (reason.empty()) reason = "reverted without a reason";
    }
    return failed_precondition("{}: execution reverted: {}", method, reason);
  }
  std::string text = fmt::format("{}: rpc error {}: {}", method, code, message.substr(0, 500));
  switch (code) {
    case -32601:
      return unimplemented("{}", text);
    case -32602:
    case -32600:
    case -32700:
      return invalid_argument("{}", text);
    case -32005:
      return unavailable("{}", text);  // rate limited
    default:
      return failed_precondition("{}", text);
  }
}

Result<json> RpcClient::call(std::string_view method, json params) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto results, batch({RpcRequest{std::string(method), std::move(params)}}));
  return std::move(results.at(0));
}

Result<std::vector<Result<json>>> RpcClient::batch(const std::vector<RpcRequest>& requests) {
  if (requests.empty()) return std::vector<Result<json>>{};
  std::lock_guard lock(mu_);
  json body = json::array();
  std::map<std::uint64_t, std::size_t> index_of_id;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    std::uint64_t id = next_id_++;
    index_of_id[id] = i;
    body.push_back({{"jsonrpc", "2.0"}, {"id", id}, {"method", requests[i].method}, {"params", requests[i].params}});
  }
  bool single = requests.size() == 1;
  std::string what = single ? requests[0].method : fmt::format("batch of {}", requests.size());
  CRUCIBLE_ASSIGN_OR_RETURN(std::string text, post(what, single ? body[0].dump() : body.dump()));
  json reply = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded()) return data_loss("rpc {} to {}: response is not JSON", what, options_.url);
  if (single && reply.is_object()) reply = json::array({reply});
  if (!reply.is_array()) {
    // Some nodes answer a whole batch with one error object.
    if (reply.is_object() && reply.contains("error")) return error_status(what, reply["error"]);
    return data_loss("rpc {} to {}: response is neither an object nor an array", what, options_.url);
  }
  std::vector<Result<json>> out(requests.size(), Result<json>(data_loss("rpc: no response for this call")));
  for (const json& item : reply) {
    if (!item.is_object() || !item.contains("id") || !item["id"].is_number_unsigned()) continue;
    auto it = index_of_id.find(item["id"].get<std::uint64_t>());
    if (it == index_of_id.end()) continue;
    const std::string& method = requests[it->second].method;
    if (item.contains("error") && !item["error"].is_null()) {
      out[it->second] = error_status(method, item["error"]);
    } else if (item.contains("result")) {
      out[it->second] = item["result"];
    } else {
      out[it->second] = data_loss("{}: response has neither result nor error", method);
    }
  }
  return out;
}

}  // namespace crucible::chain
