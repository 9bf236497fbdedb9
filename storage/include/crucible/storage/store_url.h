// A node's store location in one string:
//   file:///var/lib/crucible/store          LocalStore in that directory
//   s3://bucket/prefix?endpoint=http://127.0.0.1:7480&region=us-east-1&style=path
//                                            S3Store (AWS when no endpoint; R2: region=auto)
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "crucible/storage/object_store.h"
#include "crucible/storage/s3_store.h"

namespace crucible::storage {

struct StoreUrl {
  enum class Kind : std::uint8_t { kFile, kS3 } kind = Kind::kFile;
  std::string path;  // kFile
  S3Options s3;      // kS3: bucket, prefix, endpoint, region, path_style (no credentials)
};

// Unknown query parameters and malformed URLs are invalid_argument naming the part.
Result<StoreUrl> parse_store_url(std::string_view url);

// Opens the store a URL names, with these credentials for S3 (ignored for file://).
Result<std::shared_ptr<ObjectStore>> open_store(std::string_view url, const S3Credentials& read,
                                                const S3Credentials& write, RetryPolicy policy = {});

}  // namespace crucible::storage
