// The one HTTP server of the codebase (Boost.Beast, asynchronous): the
// validator's score API and the miner's metrics endpoint both run on it,
// each with its own handler. Read-only: GET only, no request
// bodies. Limits on the request head, open connections and idle time.
//
// Slow clients (slowloris) are held at bay by three limits: a client
// address holds at most `max_connections_per_client` connections (one more
// is closed as soon as it is accepted, before anything is read), a request's
// head must arrive within `header_timeout_s` (a new connection's first byte
// too; a byte now and then does not extend it), and past `max_connections`
// open connections a new one is answered 503 at once, without waiting for
// its request. Accept errors (out of file descriptors) pause accepting for
// a moment instead of ending it.
//
// Every answer carries X-Content-Type-Options: nosniff. Every 200 answer carries a strong ETag (XXH64 of the body) and
// the handler's Cache-Control; a request whose If-None-Match names that tag gets 304 and no body. Errors are JSON: 400
// malformed request, 405 other methods, 413 a request with a body, 431 a head over the limit, 503 over the connection
// limit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "crucible/common/status.h"

namespace crucible::http {

struct Request {
  std::string_view target;  // path and query, as sent
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string cache_control = "no-cache";    // revalidate with the ETag before reuse
  std::string etag = {};                     // of a 200's body; the server computes it when empty
  std::string content_security_policy = {};  // sent when set (the dashboard's pages)
};

using Handler = std::function<Response(const Request&)>;

struct ServerOptions {
  std::string bind = "127.0.0.1";
  std::uint16_t port = 0;  // 0: any free port
  std::uint32_t max_connections = 256;
  std::uint32_t max_connections_per_client = 0;  // per remote address; 0: no cap
  double idle_timeout_s = 10.0;                  // a kept-alive connection's wait for its next request
  double header_timeout_s = 5.0;                 // a request head's deadline, from its first byte
  std::uint32_t max_header_bytes = 8192;
  std::uint32_t threads = 1;      // I/O threads; the handler may run on several at once
  std::string name = "crucible";  // the Server header, and what errors say failed to listen
};

// "\"<16 hex digits>\"": XXH64 of the body, quoted as RFC 9110 wants.
std::string etag_of(std::string_view body);
// Whether an If-None-Match value ("*", or a comma-separated list of tags,
// weak or strong) names `etag`.
bool etag_matches(std::string_view if_none_match, std::string_view etag);

// Raises this process's open-file soft limit to its hard limit, as servers
// do (a descriptor per connection, beside the process's own files), and
// returns the soft limit now: UINT64_MAX when unlimited, 0 when unreadable.
std::uint64_t raise_open_file_limit();

class Server {
 public:
  static Result<std::unique_ptr<Server>> start(const ServerOptions& options, Handler handler);
  ~Server();  // stops and joins
  std::uint16_t port() const;

 private:
  Server();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::http
