#include "crucible/storage/storage_options.h"

#include "crucible/storage/peer_location.h"

namespace crucible::storage {

void bind_options(config::Schema& schema, StorageOptions& o) {
  schema.add_string("storage.url", &o.url,
                    "This node's store: file:///path or s3://bucket/prefix?endpoint=...&region=...");
  schema.add_string("storage.read_access_key_id", &o.read_access_key_id,
                    "Key id used for GET/HEAD/LIST (a miner publishes read-only credentials).");
  schema.add_secret("storage.read_secret_access_key", &o.read_secret_access_key, "Secret for the read key id.");
  schema.add_string("storage.write_access_key_id", &o.write_access_key_id, "Key id used for PUT/DELETE.");
  schema.add_secret("storage.write_secret_access_key", &o.write_secret_access_key, "Secret for the write key id.");
  schema.add_double("storage.call_timeout_s", &o.call_timeout_s, "Deadline of one store call, retries included.", 1,
                    3600);
  schema.add_bool("storage.peer_file_urls", &o.peer_file_urls,
                  "Accept file:// store locations from peers (only for a local network on one machine).");
  schema.add_bool("storage.peer_private_endpoints", &o.peer_private_endpoints,
                  "Accept peers' S3 endpoints on loopback, private or link-local addresses.");
  schema.add_int("storage.max_attempts", &o.max_attempts, "Attempts per call on transient failures.", 1, 20);
  schema.add_int("storage.max_object_bytes", &o.max_object_bytes, "Largest object this node will read.", 1,
                 std::int64_t{1} << 40);
}

S3Credentials StorageOptions::read_credentials() const {
  // Read-only credentials default to the write ones (a node reading its own bucket).
  if (read_access_key_id.empty()) return write_credentials();
  return {read_access_key_id, Secret(read_secret_access_key), ""};
}

S3Credentials StorageOptions::write_credentials() const {
  return {write_access_key_id, Secret(write_secret_access_key), ""};
}

std::string encode_location(const StorageOptions& o) {
  return encode_location(PeerLocation{o.url, o.read_credentials()});
}

Result<std::string> encode_location_checked(const StorageOptions& options) {
  const PeerLocation location{options.url, options.read_credentials()};
  std::string text = encode_location(location);
  if (text.size() > kMaxLocationBytes) {
    return invalid_argument(
        "the store location is {} bytes (url {}, read key id {}, read secret {}); a commitment on chain holds at most "
        "{} (the Commitments pallet: 3 fields of 128 bytes): use a shorter bucket, prefix or endpoint",
        text.size(), location.url.size(), location.read.access_key_id.size(),
        location.read.secret_access_key.reveal().size(), kMaxLocationBytes);
  }
  return text;
}

RetryPolicy StorageOptions::retry_policy() const {
  RetryPolicy p;
  p.deadline = std::chrono::milliseconds(static_cast<std::int64_t>(call_timeout_s * 1000));
  p.max_attempts = max_attempts;
  return p;
}

}  // namespace crucible::storage
