// Where a node's objects can be read by others: what it commits on the
// chain (protocol.md §9). A small JSON object:
//   {"v":1,"url":"s3://bucket/prefix?endpoint=...","read_key_id":"...","read_secret":"..."}
// (the read pair may be empty: public buckets and file:// stores). Peers'
// commitments are untrusted: size-capped, strictly parsed, URL validated.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "crucible/storage/object_store.h"
#include "crucible/storage/sigv4.h"
#include "crucible/storage/storage_options.h"

namespace crucible::storage {

inline constexpr std::size_t kMaxLocationBytes = 1024;

struct PeerLocation {
  std::string url;
  S3Credentials read;
};

// This node's location, from its own [storage] section (its read pair).
std::string encode_location(const StorageOptions& options);
Result<PeerLocation> decode_location(std::string_view text);
// A read-only view is the caller's discipline: the store is opened with the
// read credentials only.
Result<std::shared_ptr<ObjectStore>> open_peer_store(const PeerLocation& location, RetryPolicy policy = {});

}  // namespace crucible::storage
