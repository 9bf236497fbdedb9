// A raw HTTP/1.1 client for tests of crucible's server: it sends exactly the
// bytes given, so tests can also send what no library would.
#pragma once

#include <cstdint>
#include <string>

namespace crucible::testing {

// Connect to 127.0.0.1:port, send `request`, read until the server closes or
// `timeout_ms` passes. "connect failed" when nothing listens.
std::string http_exchange(std::uint16_t port, const std::string& request, int timeout_ms = 3000);
// GET `path` with Connection: close and the extra header lines (each "K: V\r\n").
std::string http_get(std::uint16_t port, const std::string& path, const std::string& headers = {});
// The part after the head.
std::string body_of(const std::string& response);
// The value of header `name` (case-insensitive), "" when absent.
std::string header_of(const std::string& response, const std::string& name);

}  // namespace crucible::testing
