// The codebase's one HTTP server (common/http_server.h) over loopback: tags,
// conditional requests and what a failing handler turns into.
#include "crucible/common/http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "support/http_client.h"

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

}  // namespace
}  // namespace crucible::http
