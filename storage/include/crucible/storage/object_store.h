// ObjectStore: where miners publish gradients and validators fetch them.
// One contract, several backends (LocalStore: a directory; S3Store: S3, R2,
// Ceph, MinIO...), and wrappers (FaultInjectingStore) for tests.
//
// The public calls are non-virtual and do what every backend needs the same
// way: validate the key, bound sizes, retry transient failures with jittered
// exponential backoff inside one deadline, and verify the SHA-256 that put()
// recorded, so a truncated or corrupted body is an error, never data.
// Backends implement the do_* calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crucible/common/bytes.h"
#include "crucible/common/secret.h"

namespace crucible::storage {

using Sha256 = std::array<std::uint8_t, 32>;

struct ObjectInfo {
  std::string key;
  std::uint64_t size = 0;
  std::int64_t last_modified_ms = 0;  // store-side time, ms since the epoch
  std::string etag;
  std::optional<Sha256> sha256;  // recorded at put() time, when the backend keeps it
};

struct ListPage {
  std::vector<ObjectInfo> objects;  // in key order
  std::optional<std::string> next;  // continuation token, if more
};

// What a backend hands back for a whole-object read.
struct Fetched {
  Bytes data;
  ObjectInfo info;
};

struct RetryPolicy {
  std::chrono::milliseconds deadline{30'000};  // one call, all attempts
  int max_attempts = 5;
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5'000};
};

inline constexpr std::size_t kMaxKeyBytes = 1024;
inline constexpr std::size_t kMaxListPage = 1000;

// Keys are relative paths: [A-Za-z0-9._-] segments separated by '/', no
// empty, '.' or '..' segment, at most 1024 bytes.
Status validate_key(std::string_view key);

class ObjectStore {
 public:
  explicit ObjectStore(RetryPolicy policy = {}) : policy_(policy) {}
  virtual ~ObjectStore() = default;
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  // Atomic: a reader sees the old object or the whole new one.
  Status put(std::string_view key, ByteSpan data);
  // Refuses (resource_exhausted) an object larger than max_bytes before reading its body.
  Result<Fetched> get(std::string_view key, std::uint64_t max_bytes);
  // Bytes [offset, offset + length) of the object; short only at its end.
  Result<Bytes> get_range(std::string_view key, std::uint64_t offset, std::uint64_t length);
  Result<ObjectInfo> head(std::string_view key);
  // Up to max_keys (<= 1000) keys under `prefix`, after the `token` of a previous page.
  Result<ListPage> list(std::string_view prefix, const std::optional<std::string>& token = std::nullopt,
                        std::size_t max_keys = kMaxListPage);
  // Every key under prefix, following pages; refuses more than `limit`.
  Result<std::vector<ObjectInfo>> list_all(std::string_view prefix, std::size_t limit = 1'000'000);
  // Succeeds when the key is already absent.
  Status remove(std::string_view key);

  virtual std::string describe() const = 0;  // "file:///data/store", "s3://bucket/prefix"
  const RetryPolicy& retry_policy() const noexcept { return policy_; }

  // The raw backend calls, without retries or verification. Wrappers
  // (FaultInjectingStore) call these on the store they wrap.
  virtual Status do_put(std::string_view key, ByteSpan data, const Sha256& sha256) = 0;
  virtual Result<Fetched> do_get(std::string_view key, std::uint64_t max_bytes) = 0;
  virtual Result<Bytes> do_get_range(std::string_view key, std::uint64_t offset, std::uint64_t length) = 0;
  virtual Result<ObjectInfo> do_head(std::string_view key) = 0;
  virtual Result<ListPage> do_list(std::string_view prefix, const std::optional<std::string>& token,
                                   std::size_t max_keys) = 0;
  virtual Status do_remove(std::string_view key) = 0;

 private:
  RetryPolicy policy_;
};

Sha256 sha256_of(ByteSpan data);

}  // namespace crucible::storage
