#include "crucible/storage/peer_location.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "crucible/storage/local_store.h"
#include "crucible/storage/s3_store.h"
#include "crucible/storage/store_url.h"

namespace crucible::storage {

std::string encode_location(const StorageOptions& o) {
  S3Credentials read = o.read_credentials();
  nlohmann::json j = {{"v", 1}, {"url", o.url}};
  if (!read.empty()) {
    j["read_key_id"] = read.access_key_id;
    j["read_secret"] = read.secret_access_key.reveal();
  }
  return j.dump();
}

Result<PeerLocation> decode_location(std::string_view text) {
  if (text.size() > kMaxLocationBytes) {
    return invalid_argument("store location of {} bytes exceeds {}", text.size(), kMaxLocationBytes);
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  // Typed checks only: a field of the wrong type is a refusal, never an exception.
  if (!j.is_object() || !j.contains("v") || j["v"] != 1 || !j.contains("url") || !j["url"].is_string()) {
    return invalid_argument("store location is not a v1 location object");
  }
  PeerLocation loc;
  loc.url = j["url"].get<std::string>();
  CRUCIBLE_RETURN_IF_ERROR(parse_store_url(loc.url).status().with_context("store location url"));
  if (j.contains("read_key_id")) {
    if (!j["read_key_id"].is_string() || !j.contains("read_secret") || !j["read_secret"].is_string()) {
      return invalid_argument("store location has a malformed read key pair");
    }
    loc.read.access_key_id = j["read_key_id"].get<std::string>();
    loc.read.secret_access_key = Secret(j["read_secret"].get<std::string>());
  }
  return loc;
}

bool is_private_host(std::string_view host) {
  std::string h(host);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  for (auto& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (h == "localhost" || h.ends_with(".localhost")) return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    const std::uint32_t a = ntohl(v4.s_addr);
    auto in = [a](std::uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
    return in(0x00000000, 8) || in(0x7F000000, 8) || in(0x0A000000, 8) || in(0xAC100000, 12) || in(0xC0A80000, 16) ||
           in(0xA9FE0000, 16) || in(0x64400000, 10);
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    const auto* b = v6.s6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v6) || IN6_IS_ADDR_UNSPECIFIED(&v6) || IN6_IS_ADDR_LINKLOCAL(&v6)) return true;
    if ((b[0] & 0xFE) == 0xFC) return true;  // unique local fc00::/7
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      char text[INET_ADDRSTRLEN];
      return inet_ntop(AF_INET, b + 12, text, sizeof text) != nullptr && is_private_host(text);
    }
  }
  return false;
}

namespace {

std::string_view host_of(std::string_view endpoint) {
  if (auto p = endpoint.find("://"); p != std::string_view::npos) endpoint = endpoint.substr(p + 3);
  endpoint = endpoint.substr(0, endpoint.find('/'));
  if (auto at = endpoint.rfind('@'); at != std::string_view::npos) endpoint = endpoint.substr(at + 1);
  if (!endpoint.empty() && endpoint.front() == '[') return endpoint.substr(0, endpoint.find(']') + 1);
  return endpoint.substr(0, endpoint.find(':'));
}

}  // namespace

Result<std::shared_ptr<ObjectStore>> open_peer_store(const PeerLocation& location, const PeerPolicy& policy) {
  CRUCIBLE_ASSIGN_OR_RETURN(StoreUrl parsed, parse_store_url(location.url));
  if (parsed.kind == StoreUrl::Kind::kFile) {
    if (!policy.allow_file) {
      return permission_denied("peer store {}: file:// locations are refused (storage.peer_file_urls)", location.url);
    }
    CRUCIBLE_ASSIGN_OR_RETURN(auto local, LocalStore::open_existing(parsed.path, policy.retry));
    return std::shared_ptr<ObjectStore>(std::move(local));
  }
  if (!parsed.s3.endpoint.empty() && !policy.allow_private_endpoints && is_private_host(host_of(parsed.s3.endpoint))) {
    return permission_denied("peer store {}: endpoint on a private address is refused (storage.peer_private_endpoints)",
                             location.url);
  }
  parsed.s3.read = location.read;
  parsed.s3.write = location.read;
  parsed.s3.request_timeout = std::min(parsed.s3.request_timeout, policy.retry.deadline);
  parsed.s3.connect_timeout = std::min(parsed.s3.connect_timeout, policy.retry.deadline);
  parsed.s3.low_speed_bytes_per_s = 1024;
  parsed.s3.low_speed_time = std::chrono::seconds(10);
  CRUCIBLE_ASSIGN_OR_RETURN(auto s3, S3Store::open(std::move(parsed.s3), policy.retry));
  return std::shared_ptr<ObjectStore>(std::move(s3));
}

}  // namespace crucible::storage
