#include "crucible/storage/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <ctime>

#include <fmt/format.h>

#include "crucible/common/bytes.h"

namespace crucible::storage {
namespace {

using Mac = std::array<std::uint8_t, 32>;

Mac hmac(ByteSpan key, std::string_view data) {
  Mac out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out.data(), &len);
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  if (b == std::string_view::npos) return "";
  // Sequential spaces inside collapse to one.
  std::string out;
  bool space = false;
  for (char c : s.substr(b, e - b + 1)) {
    if (c == ' ') {
      if (!space) out += c;
      space = true;
    } else {
      out += c;
      space = false;
    }
  }
  return out;
}

// Lower-cased, trimmed, sorted headers to sign, host first among equals.
std::vector<std::pair<std::string, std::string>> canonical_headers(const SigV4Request& r) {
  std::vector<std::pair<std::string, std::string>> h = {{"host", r.host}};
  for (const auto& [k, v] : r.headers) h.emplace_back(lower(k), trim(v));
  std::sort(h.begin(), h.end());
  return h;
}

std::string signed_header_names(const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string names;
  for (const auto& [k, v] : headers) names += (names.empty() ? "" : ";") + k;
  return names;
}

}  // namespace

std::string uri_encode(std::string_view s, bool keep_slash) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  std::array<std::uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr);
  return to_hex(out, false);
}

std::string amz_date_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string sigv4_canonical_request(const SigV4Request& r) {
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [k, v] : r.query) q.emplace_back(uri_encode(k, false), uri_encode(v, false));
  std::sort(q.begin(), q.end());
  std::string query;
  for (const auto& [k, v] : q) query += (query.empty() ? "" : "&") + k + "=" + v;

  auto h = canonical_headers(r);
  std::string headers;
  for (const auto& [k, v] : h) headers += k + ":" + v + "\n";
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}", r.method, uri_encode(r.path, true), query, headers,
                     signed_header_names(h), r.payload_sha256);
}

std::string sigv4_authorization(const SigV4Request& r, const S3Credentials& c, std::string_view region,
                                std::string_view amz_date, std::string_view service) {
  std::string date(amz_date.substr(0, 8));
  std::string scope = fmt::format("{}/{}/{}/aws4_request", date, region, service);
  std::string canonical = sigv4_canonical_request(r);
  std::string to_sign = fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope, sha256_hex(canonical));

  std::string k0 = "AWS4" + c.secret_access_key.reveal();
  Mac k_date = hmac(as_bytes(k0), date);
  Mac k_region = hmac(k_date, region);
  Mac k_service = hmac(k_region, service);
  Mac k_signing = hmac(k_service, "aws4_request");
  Mac signature = hmac(k_signing, to_sign);
  Secret wipe(std::move(k0));

  return fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}", c.access_key_id, scope,
                     signed_header_names(canonical_headers(r)), to_hex(signature, false));
}

}  // namespace crucible::storage
