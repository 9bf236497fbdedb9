// `crucible scores --url U` against a scripted HTTP server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/process.h"
#include "support/scripted_http.h"

namespace crucible {
namespace {

using ::testing::HasSubstr;

TEST(ScoresCli, PrintsATableHighestFirst) {
  testing::ScriptedHttpServer server(
      {{200,
        R"({"window":12,"uids":[{"uid":3,"final":0.5,"mu":27,"sigma":7,"bma":0.1,"sync":1,"weight":0.2,"last_evaluated":11},)"
        R"({"uid":1,"final":2.0,"mu":30,"sigma":5,"bma":0.3,"sync":1,"weight":0.8,"last_evaluated":12}]})",
        false}});
  auto r = testing::run_process({testing::bin("crucible"), "scores", "--url", server.url()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("window 12"));
  auto first = r.out.find("    1 ");
  auto second = r.out.find("    3 ");
  ASSERT_NE(first, std::string::npos) << r.out;
  ASSERT_NE(second, std::string::npos) << r.out;
  EXPECT_LT(first, second);  // uid 1 has the higher final score
  EXPECT_THAT(r.out, HasSubstr("0.8000"));
}

TEST(ScoresCli, ReportsHttpErrorsAndGarbage) {
  testing::ScriptedHttpServer not_found({{404, R"({"error":"unknown path"})", false}});
  auto r = testing::run_process({testing::bin("crucible"), "scores", "--url", not_found.url()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("HTTP 404: unknown path"));
  testing::ScriptedHttpServer garbage({{200, "<html>hello</html>", false}});
  auto g = testing::run_process({testing::bin("crucible"), "scores", "--url", garbage.url()});
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_THAT(g.err, HasSubstr("not a /v1/scores response"));
  auto down = testing::run_process({testing::bin("crucible"), "scores", "--url", "http://127.0.0.1:1"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_THAT(down.err, HasSubstr("GET http://127.0.0.1:1/v1/scores"));
}

}  // namespace
}  // namespace crucible
