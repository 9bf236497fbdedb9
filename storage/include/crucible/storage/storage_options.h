// The [storage] section of a node's config: where its own objects go, and
// the credentials for writing them and for reading others'.
#pragma once

#include <string>

#include "crucible/common/config.h"
#include "crucible/storage/object_store.h"
#include "crucible/storage/s3_credentials.h"

namespace crucible::storage {

struct StorageOptions {
  std::string url = "file:///var/lib/crucible/store";
  std::string read_access_key_id;
  std::string read_secret_access_key;
  std::string write_access_key_id;
  std::string write_secret_access_key;
  double call_timeout_s = 60.0;
  int max_attempts = 5;
  std::uint64_t max_object_bytes = 1ull << 30;  // cap on any object read
  // Peers' store locations come from the chain and are untrusted URLs:
  bool peer_file_urls = false;          // accept file:// peers (a local network on one machine)
  bool peer_private_endpoints = false;  // accept S3 endpoints on loopback, private or link-local addresses

  S3Credentials read_credentials() const;
  S3Credentials write_credentials() const;
  RetryPolicy retry_policy() const;
};

void bind_options(config::Schema& schema, StorageOptions& options);

}  // namespace crucible::storage
