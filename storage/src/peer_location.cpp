#include "crucible/storage/peer_location.h"

#include <nlohmann/json.hpp>

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
  if (!j.is_object() || j.value("v", 0) != 1 || !j.contains("url") || !j["url"].is_string()) {
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

Result<std::shared_ptr<ObjectStore>> open_peer_store(const PeerLocation& location, RetryPolicy policy) {
  return open_store(location.url, location.read, location.read, policy);
}

}  // namespace crucible::storage
