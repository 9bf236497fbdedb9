// Where a node's objects can be read by others: what it commits on the
// chain (protocol.md §9). One line of space-separated fields:
//   v2 s3://bucket/prefix?endpoint=... READ_KEY_ID READ_SECRET
// (the read pair is left out for public buckets and file:// stores). It
// must fit the Commitments pallet: three Raw fields of 128 bytes, 384 bytes
// in all (chain/substrate.h). The JSON form of version 1
//   {"v":1,"url":"...","read_key_id":"...","read_secret":"..."}
// is still read. Peers' commitments are untrusted: size-capped, strictly
// parsed, URL validated.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <string>
#include <string_view>

#include "crucible/storage/object_store.h"
#include "crucible/storage/s3_credentials.h"
#include "crucible/storage/storage_options.h"

namespace crucible::storage {

inline constexpr std::size_t kMaxLocationBytes = 384;  // substrate::kMaxCommitmentText

struct PeerLocation {
  std::string url;
  S3Credentials read;
};

// This node's location, from its own [storage] section (its read pair).
std::string encode_location(const StorageOptions& options);
std::string encode_location(const PeerLocation& location);
// This node's location, refused (invalid_argument naming the limit and the
// parts' sizes) when it is longer than kMaxLocationBytes.
Result<std::string> encode_location_checked(const StorageOptions& options);
Result<PeerLocation> decode_location(std::string_view text);
// What a node accepts from peers' locations.
struct PeerPolicy {
  RetryPolicy retry;                     // every call on the peer's store ends within retry.deadline
  bool allow_file = false;               // file:// locations (a local network on one machine)
  bool allow_private_endpoints = false;  // S3 endpoints on loopback, private, link-local addresses
};

// Opens a peer's store with the read credentials only. Refused
// (permission_denied) unless the policy allows it: file:// locations, and
// S3 endpoints whose host is localhost or a loopback, private, link-local,
// shared or unspecified IP literal; host names are resolved by curl and
// every address it connects to is checked again (a name that resolves to
// a private address, "127.1", a decimal IPv4 number: permission_denied). A
// file:// peer must name an existing folder: nothing is created where a
// peer says. S3 requests of a peer's store time out within the policy's
// deadline and abort below 1 KiB/s for 10 s.
Result<std::shared_ptr<ObjectStore>> open_peer_store(const PeerLocation& location, const PeerPolicy& policy);
// True for localhost and loopback, private, link-local, shared (100.64/10)
// and unspecified IPv4/IPv6 literals.
bool is_private_host(std::string_view host);
// The same test on a resolved address (IPv4, IPv6, v4-mapped); true for
// anything that is not an internet address.
bool is_private_address(const sockaddr* address);
// The host of an endpoint URL ("http://user@[::1]:9000/x" -> "[::1]").
std::string_view endpoint_host(std::string_view endpoint);

}  // namespace crucible::storage
