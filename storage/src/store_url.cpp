#include "crucible/storage/store_url.h"

#include <cctype>

namespace crucible::storage {
namespace {

Result<std::string> percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        return invalid_argument("bad percent-escape in '{}'", s);
      }
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

Result<StoreUrl> parse_store_url(std::string_view url) {
  StoreUrl out;
  if (url.starts_with("file://")) {
    out.kind = StoreUrl::Kind::kFile;
    out.path = std::string(url.substr(7));
    if (out.path.empty() || out.path[0] != '/') {
      return invalid_argument("store url '{}': file:// needs an absolute path (file:///var/lib/crucible)", url);
    }
    return out;
  }
  if (!url.starts_with("s3://")) {
    return invalid_argument("store url '{}': expected file:///path or s3://bucket/prefix", url);
  }
  out.kind = StoreUrl::Kind::kS3;
  std::string_view rest = url.substr(5);
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  auto slash = rest.find('/');
  out.s3.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) out.s3.prefix = std::string(rest.substr(slash + 1));
  if (out.s3.bucket.empty()) return invalid_argument("store url '{}': no bucket", url);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    std::string_view name = pair.substr(0, eq);
    CRUCIBLE_ASSIGN_OR_RETURN(std::string value,
                              percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1)));
    if (name == "endpoint") {
      out.s3.endpoint = value;
    } else if (name == "region") {
      out.s3.region = value;
    } else if (name == "style") {
      if (value != "path" && value != "virtual") {
        return invalid_argument("store url '{}': style must be path or virtual", url);
      }
      out.s3.path_style = value == "path";
    } else {
      return invalid_argument("store url '{}': unknown parameter '{}' (endpoint, region, style)", url, name);
    }
  }
  // AWS itself defaults to virtual-host style; custom endpoints (Ceph, MinIO, R2) to path style.
  if (out.s3.endpoint.empty() && url.find("style=") == std::string_view::npos) out.s3.path_style = false;
  return out;
}

}  // namespace crucible::storage
