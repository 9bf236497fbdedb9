// Opening stores: this node's own from its URL, and a peer's from its
// untrusted location under the node's PeerPolicy.
#include <algorithm>

#include "crucible/storage/local_store.h"
#include "crucible/storage/peer_location.h"
#include "crucible/storage/s3_store.h"
#include "crucible/storage/store_url.h"

namespace crucible::storage {

Result<std::shared_ptr<ObjectStore>> open_store(std::string_view url, const S3Credentials& read,
                                                const S3Credentials& write, RetryPolicy policy) {
  CRUCIBLE_ASSIGN_OR_RETURN(StoreUrl parsed, parse_store_url(url));
  if (parsed.kind == StoreUrl::Kind::kFile) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto local, LocalStore::open(parsed.path, policy));
    return std::shared_ptr<ObjectStore>(std::move(local));
  }
  parsed.s3.read = read;
  parsed.s3.write = write;
  CRUCIBLE_ASSIGN_OR_RETURN(auto s3, S3Store::open(std::move(parsed.s3), policy));
  return std::shared_ptr<ObjectStore>(std::move(s3));
}

Result<std::shared_ptr<ObjectStore>> open_peer_store(const PeerLocation& location, const PeerPolicy& policy) {
  CRUCIBLE_ASSIGN_OR_RETURN(StoreUrl parsed, parse_store_url(location.url));
  if (parsed.kind == StoreUrl::Kind::kFile) {
    if (!policy.allow_file) {
      return permission_denied("peer store {}: file:// locations are refused (storage.peer_file_urls)", location.url);
    }
    CRUCIBLE_ASSIGN_OR_RETURN(auto local, LocalStore::open_existing(parsed.path, policy.retry));
    return std::shared_ptr<ObjectStore>(std::move(local));
  }
  if (!parsed.s3.endpoint.empty() && !policy.allow_private_endpoints &&
      is_private_host(endpoint_host(parsed.s3.endpoint))) {
    return permission_denied("peer store {}: endpoint on a private address is refused (storage.peer_private_endpoints)",
                             location.url);
  }
  parsed.s3.read = location.read;
  parsed.s3.write = location.read;
  parsed.s3.request_timeout = std::min(parsed.s3.request_timeout, policy.retry.deadline);
  parsed.s3.connect_timeout = std::min(parsed.s3.connect_timeout, policy.retry.deadline);
  parsed.s3.low_speed_bytes_per_s = 1024;
  parsed.s3.low_speed_time = std::chrono::seconds(10);
  parsed.s3.refuse_private_addresses = !policy.allow_private_endpoints;
  CRUCIBLE_ASSIGN_OR_RETURN(auto s3, S3Store::open(std::move(parsed.s3), policy.retry));
  return std::shared_ptr<ObjectStore>(std::move(s3));
}

}  // namespace crucible::storage
