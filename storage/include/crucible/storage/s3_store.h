// S3Store: an ObjectStore on any S3-compatible service (AWS S3, Cloudflare
// R2, Ceph radosgw, MinIO) over libcurl, with requests signed by crucible
// (AWS SigV4). Path-style or virtual-host style; multipart upload above a
// threshold; parallel ranged GETs for large objects; payload integrity (the
// upload is signed with its SHA-256, which the server checks, and the same
// digest is kept as x-amz-meta-crucible-sha256 and checked on every read).
// Separate read and write credentials: a miner publishes read-only ones.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "crucible/storage/object_store.h"
#include "crucible/storage/s3_credentials.h"

namespace crucible::storage {

struct S3Options {
  std::string bucket;
  std::string prefix;    // keys live under "<prefix>/"; may be empty
  std::string endpoint;  // "http://127.0.0.1:7480"; empty: AWS, https://s3.<region>.amazonaws.com
  std::string region = "us-east-1";
  bool path_style = true;  // false: https://<bucket>.<host>/key
  S3Credentials read;      // GET, HEAD, LIST
  S3Credentials write;     // PUT, DELETE, multipart
  std::uint64_t multipart_threshold = 64ull << 20;
  std::uint64_t part_size = 16ull << 20;  // >= 5 MiB, S3's minimum
  std::uint64_t parallel_get_threshold = 32ull << 20;
  int parallelism = 4;  // concurrent parts / ranges
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds request_timeout{120'000};
  std::uint32_t low_speed_bytes_per_s = 0;  // abort a transfer slower than this for low_speed_time (0: off)
  std::chrono::seconds low_speed_time{10};
  bool refuse_private_addresses = false;  // connect only to public addresses (a peer's store)
};

class S3Store final : public ObjectStore {
 public:
  static Result<std::unique_ptr<S3Store>> open(S3Options options, RetryPolicy policy = {});
  ~S3Store() override;

  std::string describe() const override;
  // Creates the bucket (for tests and the local demo); ok if it exists and is ours.
  Status create_bucket();

  Status do_put(std::string_view key, ByteSpan data, const Sha256& sha256) override;
  Result<Fetched> do_get(std::string_view key, std::uint64_t max_bytes) override;
  Result<Bytes> do_get_range(std::string_view key, std::uint64_t offset, std::uint64_t length) override;
  Result<ObjectInfo> do_head(std::string_view key) override;
  Result<ListPage> do_list(std::string_view prefix, const std::optional<std::string>& token,
                           std::size_t max_keys) override;
  Status do_remove(std::string_view key) override;

  struct Response;  // one HTTP exchange (internal)

 private:
  explicit S3Store(S3Options options, RetryPolicy policy);
  struct Request;
  Result<Response> send(const Request& request) const;
  Status put_multipart(const std::string& path, ByteSpan data, const Sha256& sha256);
  std::string object_path(std::string_view key) const;

  // Idle libcurl handles: a request takes one and gives it back, so that
  // requests to this store reuse open connections (and TLS sessions)
  // rather than open one each; a peer polled every second costs one
  // connection, not one per poll.
  class HandlePool;
  std::unique_ptr<HandlePool> handles_;
  S3Options options_;
  std::string scheme_host_;  // "http://127.0.0.1:7480"
  std::string host_;         // Host header value
  std::string base_path_;    // "/bucket" (path style) or ""
};

// Parses an RFC 7231 date ("Wed, 02 Dec 2026 13:05:11 GMT") or an ISO 8601
// one ("2026-12-02T13:05:11.000Z") into ms since the epoch.
Result<std::int64_t> parse_http_date(std::string_view text);

}  // namespace crucible::storage
