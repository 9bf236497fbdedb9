#include "crucible/storage/object_store.h"

#include <openssl/evp.h>

#include <random>
#include <thread>

#include "crucible/common/log.h"
#include "crucible/common/metrics.h"

namespace crucible::storage {
namespace {

using Clock = std::chrono::steady_clock;

bool retryable(const Status& s) {
  // Transient transport trouble, and bodies that arrived damaged (a re-read may be whole).
  return s.is_transient() || s.code() == StatusCode::kDataLoss;
}

std::chrono::milliseconds jittered(std::chrono::milliseconds base) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<std::int64_t> dist(base.count() / 2, std::max<std::int64_t>(base.count(), 1));
  return std::chrono::milliseconds(dist(rng));
}

// Runs `attempt` until it succeeds, fails permanently, or the policy runs out.
template <typename T, typename F>
T with_retries(const RetryPolicy& policy, std::string_view what, std::string_view key, F attempt) {
  const auto deadline = Clock::now() + policy.deadline;
  auto backoff = policy.backoff_initial;
  for (int n = 1;; ++n) {
    metrics::global().add(metrics::Counter::kStoreRequests, 1, {{"op", std::string(what)}});
    T result = attempt();
    Status st = [&] {
      if constexpr (std::is_same_v<T, Status>) {
        return result;
      } else {
        return result.status();
      }
    }();
    if (st.is_ok() || !retryable(st) || n >= policy.max_attempts) return result;
    auto pause = jittered(backoff);
    if (Clock::now() + pause >= deadline) {
      if constexpr (std::is_same_v<T, Status>) {
        return deadline_exceeded("{} {}: deadline passed after {} attempts; last error: {}", what, key, n,
                                 st.message());
      } else {
        return T(
            deadline_exceeded("{} {}: deadline passed after {} attempts; last error: {}", what, key, n, st.message()));
      }
    }
    log::debug("object store: retrying",
               {{"op", std::string(what)}, {"key", std::string(key)}, {"attempt", n}, {"error", st.message()}});
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, policy.backoff_max);
  }
}

bool valid_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

Sha256 sha256_of(ByteSpan data) {
  Sha256 out{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

Status validate_key(std::string_view key) {
  if (key.empty()) return invalid_argument("object key is empty");
  if (key.size() > kMaxKeyBytes) return invalid_argument("object key of {} bytes exceeds {}", key.size(), kMaxKeyBytes);
  std::size_t start = 0;
  while (start <= key.size()) {
    std::size_t slash = key.find('/', start);
    if (slash == std::string_view::npos) slash = key.size();
    std::string_view seg = key.substr(start, slash - start);
    if (seg.empty())
      return invalid_argument("object key '{}' has an empty segment (leading, trailing or double '/')", key);
    if (seg == "." || seg == "..") return invalid_argument("object key '{}' has a '{}' segment", key, seg);
    for (char c : seg) {
      if (!valid_char(c)) {
        return invalid_argument("object key '{}' has a character outside [A-Za-z0-9._-/]", key);
      }
    }
    start = slash + 1;
  }
  return Status::ok();
}

Status ObjectStore::put(std::string_view key, ByteSpan data) {
  CRUCIBLE_RETURN_IF_ERROR(validate_key(key));
  Sha256 digest = sha256_of(data);
  return with_retries<Status>(policy_, "put", key, [&] { return do_put(key, data, digest); });
}

Result<Fetched> ObjectStore::get(std::string_view key, std::uint64_t max_bytes) {
  CRUCIBLE_RETURN_IF_ERROR(validate_key(key));
  return with_retries<Result<Fetched>>(policy_, "get", key, [&]() -> Result<Fetched> {
    CRUCIBLE_ASSIGN_OR_RETURN(Fetched f, do_get(key, max_bytes));
    if (f.data.size() > max_bytes) {
      return resource_exhausted("get {}: {} bytes exceeds the cap of {}", key, f.data.size(), max_bytes);
    }
    if (f.data.size() != f.info.size) {
      return data_loss("get {}: body has {} bytes, the store says {}", key, f.data.size(), f.info.size);
    }
    if (f.info.sha256 && sha256_of(f.data) != *f.info.sha256) {
      return data_loss("get {}: body does not match its recorded SHA-256 (corrupted in store or transit)", key);
    }
    metrics::global().add(metrics::Counter::kStoreBytesRead, static_cast<double>(f.data.size()));
    return f;
  });
}

Result<Bytes> ObjectStore::get_range(std::string_view key, std::uint64_t offset, std::uint64_t length) {
  CRUCIBLE_RETURN_IF_ERROR(validate_key(key));
  return with_retries<Result<Bytes>>(policy_, "get_range", key, [&]() -> Result<Bytes> {
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes b, do_get_range(key, offset, length));
    if (b.size() > length) return data_loss("get_range {}: {} bytes for a range of {}", key, b.size(), length);
    metrics::global().add(metrics::Counter::kStoreBytesRead, static_cast<double>(b.size()));
    return b;
  });
}

Result<ObjectInfo> ObjectStore::head(std::string_view key) {
  CRUCIBLE_RETURN_IF_ERROR(validate_key(key));
  return with_retries<Result<ObjectInfo>>(policy_, "head", key, [&] { return do_head(key); });
}

Result<ListPage> ObjectStore::list(std::string_view prefix, const std::optional<std::string>& token,
                                   std::size_t max_keys) {
  if (max_keys == 0 || max_keys > kMaxListPage) {
    return invalid_argument("list: max_keys must be in [1, {}], got {}", kMaxListPage, max_keys);
  }
  if (prefix.size() > kMaxKeyBytes) return invalid_argument("list: prefix too long");
  return with_retries<Result<ListPage>>(policy_, "list", prefix, [&] { return do_list(prefix, token, max_keys); });
}

Result<std::vector<ObjectInfo>> ObjectStore::list_all(std::string_view prefix, std::size_t limit) {
  std::vector<ObjectInfo> out;
  std::optional<std::string> token;
  do {
    CRUCIBLE_ASSIGN_OR_RETURN(ListPage page, list(prefix, token));
    for (auto& o : page.objects) out.push_back(std::move(o));
    if (out.size() > limit) return resource_exhausted("list {}: more than {} keys", prefix, limit);
    if (page.next && page.next == token) return data_loss("list {}: the store repeated a continuation token", prefix);
    token = page.next;
  } while (token);
  return out;
}

Status ObjectStore::remove(std::string_view key) {
  CRUCIBLE_RETURN_IF_ERROR(validate_key(key));
  return with_retries<Status>(policy_, "remove", key, [&] { return do_remove(key); });
}

}  // namespace crucible::storage
