#include "crucible/validator/dashboard.h"

#include <algorithm>

namespace crucible::validator {
namespace {

// The page loads only its own files and talks only to its own server.
constexpr const char* kPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::optional<http::Response> asset(std::string_view path) {
  const auto all = dashboard_assets();
  const auto it = std::find_if(all.begin(), all.end(), [&](const EmbeddedAsset& a) { return a.path == path; });
  if (it == all.end()) return std::nullopt;
  http::Response r{200, std::string(it->content_type), std::string(it->bytes)};
  r.content_security_policy = kPolicy;
  return r;
}

bool is_uid_page(std::string_view path) {
  if (!path.starts_with("/uid/")) return false;
  const std::string_view n = path.substr(5);
  return !n.empty() && n.size() <= 5 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<http::Response> dashboard_get(std::string_view path) {
  if (path == "/" || path == "/index.html" || is_uid_page(path)) return asset("/index.html");
  if (path.starts_with("/assets/")) {
    if (auto r = asset(path)) return r;
    http::Response missing{404, "application/json", "{\"error\":\"no such asset\"}\n", "no-store"};
    return missing;
  }
  return std::nullopt;
}

}  // namespace crucible::validator
