#include "crucible/miner/metrics_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <thread>

#include "crucible/common/metrics.h"

namespace crucible::miner {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kMaxHeaderBytes = 8 << 10;
constexpr auto kIdle = std::chrono::seconds(10);

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket socket) : stream_(std::move(socket)) {}
  void start() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(0);
    stream_.expires_after(kIdle);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec) return;  // timeout, reset or a request over the limits: drop the connection
    const auto& req = parser_->get();
    res_.version(req.version());
    res_.keep_alive(false);
    if (req.method() != http::verb::get) {
      res_.result(http::status::method_not_allowed);
      res_.set(http::field::content_type, "text/plain");
      res_.body() = "only GET\n";
    } else if (req.target() == "/metrics") {
      res_.result(http::status::ok);
      res_.set(http::field::content_type, "text/plain; version=0.0.4");
      res_.body() = metrics::global().render();
    } else if (req.target() == "/healthz") {
      res_.result(http::status::ok);
      res_.set(http::field::content_type, "text/plain");
      res_.body() = "ok\n";
    } else {
      res_.result(http::status::not_found);
      res_.set(http::field::content_type, "text/plain");
      res_.body() = "not found\n";
    }
    res_.prepare_payload();
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code, std::size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> res_;
};

}  // namespace

struct MetricsServer::Impl {
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  std::thread thread;
  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      std::make_shared<Session>(std::move(socket))->start();
      accept();
    });
  }
};

MetricsServer::MetricsServer() : impl_(std::make_unique<Impl>()) {}

MetricsServer::~MetricsServer() {
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t MetricsServer::port() const { return impl_->acceptor.local_endpoint().port(); }

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& bind, std::uint16_t port) {
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  beast::error_code ec;
  auto address = asio::ip::make_address(bind, ec);
  if (ec) return invalid_argument("metrics_bind '{}' is not an IP address", bind);
  tcp::endpoint ep(address, port);
  auto& a = s->impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return unavailable("metrics endpoint {}:{}: {}", bind, port, ec.message());
  s->impl_->accept();
  s->impl_->thread = std::thread([impl = s->impl_.get()] { impl->ioc.run(); });
  return s;
}

}  // namespace crucible::miner
