// AWS Signature Version 4 for S3 requests (header-based). libcurl 7.88's
// built-in SigV4 does not send x-amz-content-sha256, which S3 servers
// require, so crucible signs itself (build-notes.md).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "crucible/storage/s3_credentials.h"

namespace crucible::storage {

struct SigV4Request {
  std::string method;                                        // "GET"
  std::string host;                                          // as sent in the Host header, with :port if any
  std::string path;                                          // "/bucket/key", not yet encoded
  std::vector<std::pair<std::string, std::string>> query;    // raw names and values
  std::vector<std::pair<std::string, std::string>> headers;  // to sign (besides host)
  std::string payload_sha256;                                // hex, or "UNSIGNED-PAYLOAD"
};

// RFC 3986 percent-encoding as SigV4 wants it; '/' is kept when `keep_slash`.
std::string uri_encode(std::string_view s, bool keep_slash);

// "20130524T000000Z" for now.
std::string amz_date_now();

// The Authorization header value. `amz_date` must also be sent as x-amz-date
// (put it in `headers`).
std::string sigv4_authorization(const SigV4Request& request, const S3Credentials& credentials, std::string_view region,
                                std::string_view amz_date, std::string_view service = "s3");

// Exposed for tests.
std::string sigv4_canonical_request(const SigV4Request& request);
std::string sha256_hex(std::string_view data);

}  // namespace crucible::storage
