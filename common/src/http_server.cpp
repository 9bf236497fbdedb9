#include "crucible/common/http_server.h"

#include <fmt/format.h>
#include <xxhash.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <optional>
#include <thread>
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

struct Shared {
  ServerOptions options;
  Handler handler;
  std::atomic<std::uint32_t> connections{0};
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared) : stream_(std::move(socket)), shared_(shared) { ++shared_.connections; }
  ~Session() { --shared_.connections; }

  void start(bool over_limit) {
    over_limit_ = over_limit;
    read();
  }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(shared_.options.max_header_bytes);
    parser_->body_limit(0);
    stream_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(shared_.options.idle_timeout_s)));
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout) return close();
    if (ec == bhttp::error::body_limit) return send(error(413, "requests carry no body"), false);
    if (ec == bhttp::error::header_limit) return send(error(431, "request head too large"), false);
    if (ec) return send(error(400, "malformed request"), false);
    const auto& req = parser_->get();
    if (over_limit_) return send(error(503, "too many connections"), false);
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
  bool over_limit_ = false;
};

}  // namespace

struct Server::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  Shared shared;
  std::vector<std::thread> threads;
  void accept() {
    // Each connection on its own strand: its handlers never run concurrently.
    acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      const bool over = shared.connections.load() >= shared.options.max_connections;
      std::make_shared<Session>(std::move(socket), shared)->start(over);
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

}  // namespace crucible::http
