#include "crucible/common/http_server.h"

#include <sys/resource.h>

#include <fmt/format.h>
#include <xxhash.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace crucible::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

std::string etag_of(std::string_view body) { return fmt::format("\"{:016x}\"", XXH64(body.data(), body.size(), 0)); }

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  if (trim(if_none_match) == "*") return true;
  while (!if_none_match.empty()) {
    const auto comma = if_none_match.find(',');
    std::string_view tag = trim(if_none_match.substr(0, comma));
    if (tag.starts_with("W/")) tag.remove_prefix(2);  // If-None-Match compares weakly
    if (!tag.empty() && tag == etag) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

struct Shared {
  ServerOptions options;
  Handler handler;
  std::atomic<std::uint32_t> connections{0};
  std::mutex clients_mutex;
  std::unordered_map<std::string, std::uint32_t> clients;  // open connections per remote address

  // Counts one more connection from `client`, unless it already holds the cap.
  bool admit(const std::string& client) {
    if (options.max_connections_per_client == 0) return true;
    std::lock_guard lock(clients_mutex);
    auto& n = clients[client];
    if (n >= options.max_connections_per_client) return false;
    ++n;
    return true;
  }
  void release(const std::string& client) {
    if (options.max_connections_per_client == 0) return;
    std::lock_guard lock(clients_mutex);
    auto it = clients.find(client);
    if (it != clients.end() && --it->second == 0) clients.erase(it);
  }
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared, std::string client)
      : stream_(std::move(socket)), shared_(shared), client_(std::move(client)) {
    ++shared_.connections;
  }
  ~Session() {
    --shared_.connections;
    shared_.release(client_);
  }

  void start(bool over_limit) {
    // Over the limit: answered at once, without waiting for a request that
    // a slow client would take its time to send.
    if (over_limit) return send(error(503, "too many connections"), false);
    read();
  }

 private:
  // Waits for the next request's first byte (a new connection: within the
  // head's deadline; a kept-alive one: within the idle timeout), then reads
  // its head against the deadline.
  void read() {
    parser_.emplace();
    parser_->header_limit(shared_.options.max_header_bytes);
    parser_->body_limit(0);
    if (buffer_.size() > 0) return read_head();  // pipelined: already here
    stream_.expires_after(seconds(first_ ? shared_.options.header_timeout_s : shared_.options.idle_timeout_s));
    first_ = false;
    stream_.async_read_some(buffer_.prepare(1024), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->buffer_.commit(n);
      if (ec) return self->close();
      self->read_head();
    });
  }

  void read_head() {
    stream_.expires_after(seconds(shared_.options.header_timeout_s));
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout) return close();
    if (ec == bhttp::error::body_limit) return send(error(413, "requests carry no body"), false);
    if (ec == bhttp::error::header_limit) return send(error(431, "request head too large"), false);
    if (ec) return send(error(400, "malformed request"), false);
    const auto& req = parser_->get();
    if (req.method() != bhttp::verb::get) return send(error(405, "only GET"), false);
    Response r;
    try {
      r = shared_.handler(Request{std::string_view(req.target().data(), req.target().size())});
    } catch (const std::exception& e) {
      r = error(500, "internal error");
    }
    std::string etag;
    if (r.status == 200) {
      etag = r.etag.empty() ? etag_of(r.body) : std::move(r.etag);
      const auto inm = req[bhttp::field::if_none_match];
      if (!inm.empty() && etag_matches(std::string_view(inm.data(), inm.size()), etag)) {
        r.status = 304;
        r.body.clear();
      }
    }
    send(std::move(r), req.keep_alive(), etag);
  }

  static Response error(int status, std::string_view message) {
    return {status, "application/json", fmt::format("{{\"error\":\"{}\"}}\n", message), "no-store"};
  }

  void send(Response r, bool keep_alive, const std::string& etag = {}) {
    res_ = {};
    res_.result(static_cast<bhttp::status>(r.status));
    res_.version(11);
    res_.set(bhttp::field::server, shared_.options.name);
    res_.set(bhttp::field::cache_control, r.cache_control);
    if (!etag.empty()) res_.set(bhttp::field::etag, etag);
    if (r.status != 304) res_.set(bhttp::field::content_type, r.content_type);
    res_.set("X-Content-Type-Options", "nosniff");
    if (!r.content_security_policy.empty()) res_.set("Content-Security-Policy", r.content_security_policy);
    res_.keep_alive(keep_alive);
    res_.body() = std::move(r.body);
    res_.prepare_payload();
    stream_.expires_after(seconds(shared_.options.header_timeout_s));  // a client that does not read is let go
    bhttp::async_write(stream_, res_, [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
      if (ec || !keep_alive) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::empty_body>> parser_;
  bhttp::response<bhttp::string_body> res_;
  Shared& shared_;
  const std::string client_;
  bool first_ = true;
};

// The remote address a per-client cap counts against (IPv4-mapped IPv6 as IPv4).
std::string client_of(const tcp::socket& socket) {
  beast::error_code ec;
  auto address = socket.remote_endpoint(ec).address();
  if (ec) return {};
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  }
  return address.to_string();
}

}  // namespace

struct Server::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer pause{ioc};
  Shared shared;
  std::vector<std::thread> threads;
  void accept() {
    // Each connection on its own strand: its handlers never run concurrently.
    acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (ec) {  // e.g. out of file descriptors: try again shortly, as connections close
        pause.expires_after(std::chrono::milliseconds(50));
        pause.async_wait([this](beast::error_code e) {
          if (!e) accept();
        });
        return;
      }
      std::string client = client_of(socket);
      if (!shared.admit(client)) {  // over its address's cap: closed before anything is read
        beast::error_code ignored;
        socket.close(ignored);
      } else {
        const bool over = shared.connections.load() >= shared.options.max_connections;
        std::make_shared<Session>(std::move(socket), shared, std::move(client))->start(over);
      }
      accept();
    });
  }
};

Server::Server() : impl_(std::make_unique<Impl>()) {}
Server::~Server() {
  impl_->ioc.stop();
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
}
std::uint16_t Server::port() const { return impl_->acceptor.local_endpoint().port(); }

Result<std::unique_ptr<Server>> Server::start(const ServerOptions& options, Handler handler) {
  std::unique_ptr<Server> s(new Server());
  s->impl_->shared.options = options;
  s->impl_->shared.handler = std::move(handler);
  beast::error_code ec;
  auto address = asio::ip::make_address(options.bind, ec);
  if (ec) return invalid_argument("{}: '{}' is not an IP address", options.name, options.bind);
  tcp::endpoint ep(address, options.port);
  auto& a = s->impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return unavailable("{} {}:{}: {}", options.name, options.bind, options.port, ec.message());
  s->impl_->accept();
  for (std::uint32_t i = 0; i < std::max<std::uint32_t>(1, options.threads); ++i) {
    s->impl_->threads.emplace_back([impl = s->impl_.get()] { impl->ioc.run(); });
  }
  return s;
}

std::uint64_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<std::uint64_t>(limit.rlim_cur);
}

}  // namespace crucible::http
