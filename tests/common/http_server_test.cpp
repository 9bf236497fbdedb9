// The codebase's one HTTP server (common/http_server.h) over loopback: tags,
// conditional requests, what a failing handler turns into, and the limits
// that keep slow clients from denying it to others.
#include "crucible/common/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "support/http_client.h"
#include "support/slow_clients.h"

namespace crucible::http {
namespace {

using ::testing::HasSubstr;
using testing::header_of;
using testing::http_get;

TEST(ETag, IsAQuotedHashOfTheBody) {
  EXPECT_EQ(etag_of("a"), etag_of("a"));
  EXPECT_NE(etag_of("a"), etag_of("b"));
  EXPECT_EQ(etag_of("").size(), 18u);
  EXPECT_EQ(etag_of("").front(), '"');
  EXPECT_EQ(etag_of("").back(), '"');
}

TEST(ETag, IfNoneMatchListsWeakTagsAndStar) {
  const std::string t = etag_of("body");
  EXPECT_TRUE(etag_matches(t, t));
  EXPECT_TRUE(etag_matches("*", t));
  EXPECT_TRUE(etag_matches(" \"x\" ,W/" + t, t));
  EXPECT_TRUE(etag_matches("\"x\",  " + t + "  ", t));
  EXPECT_FALSE(etag_matches("\"x\", \"y\"", t));
  EXPECT_FALSE(etag_matches("", t));
  EXPECT_FALSE(etag_matches(",,,", t));
  EXPECT_FALSE(etag_matches(t.substr(1), t));  // unquoted is another tag
}

TEST(Server, AnswersWithTheHandlersStatusTypeAndCaching) {
  auto s = Server::start({}, [](const Request& r) -> Response {
    if (r.target == "/boom") throw std::runtime_error("handler bug");
    if (r.target == "/page?x=1") return {200, "text/html", "<p>hi</p>", "max-age=5"};
    return {404, "application/json", "{\"error\":\"unknown path\"}\n", "no-store"};
  });
  ASSERT_TRUE(s.is_ok()) << s.status();
  const auto port = (*s)->port();
  auto page = http_get(port, "/page?x=1");
  EXPECT_THAT(page, HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(header_of(page, "Content-Type"), "text/html");
  EXPECT_EQ(header_of(page, "Cache-Control"), "max-age=5");
  EXPECT_EQ(header_of(page, "ETag"), etag_of("<p>hi</p>"));
  EXPECT_EQ(header_of(page, "Server"), "crucible");
  auto boom = http_get(port, "/boom");
  EXPECT_THAT(boom, HasSubstr("HTTP/1.1 500"));
  EXPECT_EQ(testing::body_of(boom), "{\"error\":\"internal error\"}\n");
  EXPECT_THAT(http_get(port, "/page?x=1"), HasSubstr("HTTP/1.1 200"));  // still serving
  EXPECT_THAT(http_get(port, "/other"), HasSubstr("HTTP/1.1 404"));
}

TEST(Server, RefusesABadBindAddressAndABusyPort) {
  ServerOptions o;
  o.bind = "not-an-ip";
  auto bad = Server::start(o, [](const Request&) { return Response{}; });
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().to_string(), HasSubstr("not an IP address"));
  auto first = Server::start({}, [](const Request&) { return Response{}; });
  ASSERT_TRUE(first.is_ok());
  ServerOptions same;
  same.port = (*first)->port();
  same.name = "the test server";
  auto busy = Server::start(same, [](const Request&) { return Response{}; });
  ASSERT_FALSE(busy.is_ok());
  EXPECT_THAT(busy.status().to_string(), HasSubstr("the test server"));
}

// What the server sends on `fd` until it closes it or `timeout_ms` passes
// (then "timeout" is appended).
std::string read_until_closed(int fd, int timeout_ms) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[1024];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) return out;
    if (n < 0) return out + "timeout";
    out.append(buf, static_cast<std::size_t>(n));
  }
}

Response ok(const Request&) { return Response{200, "text/plain", "ok"}; }

TEST(Server, OneAddressHoldsAtMostItsCapAndOthersAreServed) {
  ServerOptions o;
  o.max_connections_per_client = 2;
  o.header_timeout_s = 30;  // the held ones stay held through the test
  auto server = Server::start(o, ok);
  ASSERT_TRUE(server.is_ok());
  const auto port = (*server)->port();
  int held[2] = {testing::connect_from("127.0.0.2", port), testing::connect_from("127.0.0.2", port)};
  ASSERT_GE(held[0], 0);
  ASSERT_GE(held[1], 0);
  // Until the server has counted both, a third may still be let in: wait for the cap to bite.
  std::string third = "timeout";
  for (int i = 0; i < 50 && third == "timeout"; ++i) {
    int fd = testing::connect_from("127.0.0.2", port);
    ASSERT_GE(fd, 0);
    third = read_until_closed(fd, 100);
    close(fd);
  }
  EXPECT_EQ(third, "") << "over the cap: closed at once, before anything is read";
  EXPECT_THAT(http_get(port, "/"), HasSubstr("HTTP/1.1 200")) << "another address is served";
  close(held[0]);
  // One slot of 127.0.0.2 free again: its next connection is served.
  std::string again;
  for (int i = 0; i < 50 && again.find("HTTP/1.1 200") == std::string::npos; ++i) {
    int fd = testing::connect_from("127.0.0.2", port);
    ASSERT_GE(fd, 0);
    const std::string req = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    (void)!write(fd, req.data(), req.size());
    again = read_until_closed(fd, 1000);
    close(fd);
  }
  EXPECT_THAT(again, HasSubstr("HTTP/1.1 200"));
  close(held[1]);
}

TEST(Server, AHeadTrickledAByteAtATimeIsCutAtItsDeadline) {
  ServerOptions o;
  o.header_timeout_s = 1.0;
  o.idle_timeout_s = 30;
  auto server = Server::start(o, ok);
  ASSERT_TRUE(server.is_ok());
  int fd = testing::connect_from("127.0.0.1", (*server)->port());
  ASSERT_GE(fd, 0);
  // A byte every 100 ms would take 5 s to send this head; the server closes it long before.
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(10, 'a') + "\r\n\r\n";
  std::size_t sent = 0;
  for (; sent < head.size(); ++sent) {
    if (send(fd, &head[sent], 1, MSG_NOSIGNAL) != 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LT(sent, head.size()) << "the server waited for the whole trickled head";
  close(fd);
}

TEST(Server, OverTheTotalLimitANewConnectionGets503WithoutSendingARequest) {
  ServerOptions o;
  o.max_connections = 2;
  o.header_timeout_s = 30;
  auto server = Server::start(o, ok);
  ASSERT_TRUE(server.is_ok());
  const auto port = (*server)->port();
  int held[2] = {testing::connect_from("127.0.0.2", port), testing::connect_from("127.0.0.3", port)};
  std::string third;
  for (int i = 0; i < 50 && third.find("503") == std::string::npos; ++i) {
    int fd = testing::connect_from("127.0.0.4", port);
    ASSERT_GE(fd, 0);
    third = read_until_closed(fd, 200);
    close(fd);
  }
  EXPECT_THAT(third, HasSubstr("HTTP/1.1 503"));
  EXPECT_THAT(third, HasSubstr("too many connections"));
  close(held[0]);
  close(held[1]);
}

}  // namespace
}  // namespace crucible::http
