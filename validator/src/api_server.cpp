#include "crucible/validator/api_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <thread>

namespace crucible::validator {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Shared {
  ApiOptions options;
  storage::StateStore* db = nullptr;
  ScoringParams scoring;
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
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout) return close();
    if (ec == http::error::body_limit) return send(413, "{\"error\":\"requests carry no body\"}\n", false);
    if (ec == http::error::header_limit) return send(431, "{\"error\":\"request head too large\"}\n", false);
    if (ec) return send(400, "{\"error\":\"malformed request\"}\n", false);
    const auto& req = parser_->get();
    if (over_limit_) return send(503, "{\"error\":\"too many connections\"}\n", false);
    if (req.method() != http::verb::get) return send(405, "{\"error\":\"only GET\"}\n", false);
    ApiResponse r =
        handle_get(*shared_.db, shared_.scoring, std::string_view(req.target().data(), req.target().size()));
    send(r.status, std::move(r.body), req.keep_alive(), r.content_type);
  }

  void send(int status, std::string body, bool keep_alive, const std::string& type = "application/json") {
    res_ = {};
    res_.result(static_cast<http::status>(status));
    res_.version(11);
    res_.set(http::field::content_type, type);
    res_.set(http::field::server, "crucible-validator");
    res_.keep_alive(keep_alive);
    res_.body() = std::move(body);
    res_.prepare_payload();
    http::async_write(stream_, res_, [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
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
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> res_;
  Shared& shared_;
  bool over_limit_ = false;
};

}  // namespace

struct ApiServer::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  Shared shared;
  std::vector<std::thread> threads;
  void accept() {
    // Each connection on its own strand: its handlers never run concurrently.
    acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      bool over = shared.connections.load() >= shared.options.max_connections;
      std::make_shared<Session>(std::move(socket), shared)->start(over);
      accept();
    });
  }
};

ApiServer::ApiServer() : impl_(std::make_unique<Impl>()) {}
ApiServer::~ApiServer() {
  impl_->ioc.stop();
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
}
std::uint16_t ApiServer::port() const { return impl_->acceptor.local_endpoint().port(); }

Result<std::unique_ptr<ApiServer>> ApiServer::start(const ApiOptions& options, storage::StateStore& state,
                                                    const ScoringParams& scoring) {
  std::unique_ptr<ApiServer> s(new ApiServer());
  s->impl_->shared.options = options;
  s->impl_->shared.scoring = scoring;
  s->impl_->shared.db = &state;
  beast::error_code ec;
  auto address = asio::ip::make_address(options.bind, ec);
  if (ec) return invalid_argument("api.bind '{}' is not an IP address", options.bind);
  tcp::endpoint ep(address, options.port);
  auto& a = s->impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return unavailable("score API {}:{}: {}", options.bind, options.port, ec.message());
  s->impl_->accept();
  for (std::uint32_t i = 0; i < std::max<std::uint32_t>(1, options.threads); ++i) {
    s->impl_->threads.emplace_back([impl = s->impl_.get()] { impl->ioc.run(); });
  }
  return s;
}

}  // namespace crucible::validator
