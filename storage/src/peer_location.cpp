#include "crucible/storage/peer_location.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "crucible/storage/store_url.h"

namespace crucible::storage {

std::string encode_location(const PeerLocation& location) {
  std::string text = "v2 " + location.url;
  if (!location.read.empty()) {
    text += " " + location.read.access_key_id + " " + location.read.secret_access_key.reveal();
  }
  return text;
}

namespace {

bool printable_token(std::string_view t) {
  if (t.empty()) return false;
  for (unsigned char c : t)
    if (c <= 0x20 || c >= 0x7F) return false;
  return true;
}

Result<PeerLocation> decode_v1(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  // Typed checks only: a field of the wrong type is a refusal, never an exception.
  if (!j.is_object() || !j.contains("v") || j["v"] != 1 || !j.contains("url") || !j["url"].is_string()) {
    return invalid_argument("store location is not a v1 location object");
  }
  PeerLocation loc;
  loc.url = j["url"].get<std::string>();
  if (j.contains("read_key_id")) {
    if (!j["read_key_id"].is_string() || !j.contains("read_secret") || !j["read_secret"].is_string()) {
      return invalid_argument("store location has a malformed read key pair");
    }
    loc.read.access_key_id = j["read_key_id"].get<std::string>();
    loc.read.secret_access_key = Secret(j["read_secret"].get<std::string>());
  }
  return loc;
}

Result<PeerLocation> decode_v2(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t space = text.find(' ', at);
    parts.push_back(text.substr(at, space == std::string_view::npos ? std::string_view::npos : space - at));
    if (space == std::string_view::npos) break;
    at = space + 1;
  }
  if (parts.size() != 2 && parts.size() != 4) {
    return invalid_argument("store location: {} fields, expected 'v2 URL' or 'v2 URL KEY_ID SECRET'", parts.size());
  }
  for (auto p : parts)
    if (!printable_token(p)) return invalid_argument("store location: an empty field or one with control characters");
  PeerLocation loc;
  loc.url = std::string(parts[1]);
  if (parts.size() == 4) {
    loc.read.access_key_id = std::string(parts[2]);
    loc.read.secret_access_key = Secret(std::string(parts[3]));
  }
  return loc;
}

}  // namespace

Result<PeerLocation> decode_location(std::string_view text) {
  if (text.size() > kMaxLocationBytes) {
    return invalid_argument("store location of {} bytes exceeds {}", text.size(), kMaxLocationBytes);
  }
  Result<PeerLocation> loc = text.starts_with("v2 ") ? decode_v2(text) : decode_v1(text);
  if (!loc.is_ok()) return loc;
  // Either form: fields a v2 line can carry (no spaces or control
  // characters), a key id and secret together or neither. So whatever is
  // accepted encodes back to the same location.
  if (!printable_token(loc->url)) return invalid_argument("store location: the url is empty or has spaces");
  const bool has_id = !loc->read.access_key_id.empty();
  const bool has_secret = !loc->read.secret_access_key.reveal().empty();
  if (has_id != has_secret) return invalid_argument("store location: a read key id without its secret, or the reverse");
  if (has_id && (!printable_token(loc->read.access_key_id) || !printable_token(loc->read.secret_access_key.reveal()))) {
    return invalid_argument("store location: a read key with spaces or control characters");
  }
  CRUCIBLE_RETURN_IF_ERROR(parse_store_url(loc->url).status().with_context("store location url"));
  return loc;
}

bool is_private_address(const sockaddr* address) {
  if (address == nullptr) return true;
  if (address->sa_family == AF_INET) {
    const std::uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr);
    auto in = [a](std::uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
    return in(0x00000000, 8) || in(0x7F000000, 8) || in(0x0A000000, 8) || in(0xAC100000, 12) || in(0xC0A80000, 16) ||
           in(0xA9FE0000, 16) || in(0x64400000, 10);
  }
  if (address->sa_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    const auto* b = v6.s6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v6) || IN6_IS_ADDR_UNSPECIFIED(&v6) || IN6_IS_ADDR_LINKLOCAL(&v6)) return true;
    if ((b[0] & 0xFE) == 0xFC) return true;  // unique local fc00::/7
    if (IN6_IS_ADDR_V4MAPPED(&v6) || IN6_IS_ADDR_V4COMPAT(&v6)) {
      sockaddr_in v4{};
      v4.sin_family = AF_INET;
      std::memcpy(&v4.sin_addr, b + 12, 4);
      return is_private_address(reinterpret_cast<const sockaddr*>(&v4));
    }
    return false;
  }
  return true;  // not an internet address at all
}

bool is_private_host(std::string_view host) {
  std::string h(host);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  for (auto& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (h == "localhost" || h.ends_with(".localhost")) return true;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  if (inet_pton(AF_INET, h.c_str(), &v4.sin_addr) == 1) return is_private_address(reinterpret_cast<sockaddr*>(&v4));
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  if (inet_pton(AF_INET6, h.c_str(), &v6.sin6_addr) == 1) return is_private_address(reinterpret_cast<sockaddr*>(&v6));
  return false;
}

std::string_view endpoint_host(std::string_view endpoint) {
  if (auto p = endpoint.find("://"); p != std::string_view::npos) endpoint = endpoint.substr(p + 3);
  endpoint = endpoint.substr(0, endpoint.find('/'));
  if (auto at = endpoint.rfind('@'); at != std::string_view::npos) endpoint = endpoint.substr(at + 1);
  if (!endpoint.empty() && endpoint.front() == '[') return endpoint.substr(0, endpoint.find(']') + 1);
  return endpoint.substr(0, endpoint.find(':'));
}

}  // namespace crucible::storage
