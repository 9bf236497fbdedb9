// libFuzzer target for a peer's store location, the commitment it posts on
// the chain (storage/peer_location.h), and the host checks applied to it.
// The decoder must refuse bad input with a Status and never throw; what it
// accepts must name a URL that parses, and encode back to the same location.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "crucible/storage/peer_location.h"
#include "crucible/storage/store_url.h"

using namespace crucible;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void location(std::string_view text) {
  auto loc = storage::decode_location(text);
  if (!loc.is_ok()) return;
  auto url = storage::parse_store_url(loc->url);
  check(url.is_ok());
  if (url->kind == storage::StoreUrl::Kind::kS3)
    (void)storage::is_private_host(storage::endpoint_host(url->s3.endpoint));
  auto again = storage::decode_location(storage::encode_location(*loc));
  check(again.is_ok() && again->url == loc->url && again->read.access_key_id == loc->read.access_key_id &&
        again->read.secret_access_key.reveal() == loc->read.secret_access_key.reveal());
}

// Any bytes as a resolved address: IPv4 or IPv6 by the first byte.
void address(const std::uint8_t* data, std::size_t size) {
  if (size < 17) return;
  sockaddr_in6 v6{};
  v6.sin6_family = (data[0] & 1) ? AF_INET6 : AF_INET;
  if (v6.sin6_family == AF_INET) {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    std::memcpy(&v4.sin_addr, data + 1, 4);
    (void)storage::is_private_address(reinterpret_cast<const sockaddr*>(&v4));
    return;
  }
  std::memcpy(&v6.sin6_addr, data + 1, 16);
  (void)storage::is_private_address(reinterpret_cast<const sockaddr*>(&v6));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0:
      location(text);
      break;
    case 1:
      (void)storage::is_private_host(text);
      (void)storage::endpoint_host(text);
      break;
    default:
      address(data + 1, size - 1);
      break;
  }
  return 0;
}
