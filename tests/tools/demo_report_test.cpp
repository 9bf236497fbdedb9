// The demo's report, from API answers shaped as the validator gives them:
// the figures it computes, summary.json and progress.svg.
#include "crucible/cli/demo_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "support/temp_dir.h"

namespace crucible::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// Two windows, miners 1-3 (3 uploads nothing valid in window 5); uid 9 is an
// attacker, aggregated once; two weights posts.
DemoReport sample() {
  json progress = {{"windows",
                    {{{"window", 5}, {"heldout_loss", 7.5}, {"aggregate", {1, 2, 9}}, {"bytes_received", 100}},
                     {{"window", 6}, {"heldout_loss", 7.0}, {"aggregate", {1}}, {"bytes_received", 120}}}}};
  std::vector<json> windows{{{"window", 5},
                             {"uids",
                              {{{"uid", 1}, {"valid", true}, {"final", 0.5}},
                               {{"uid", 2}, {"valid", true}, {"final", 0.25}},
                               {{"uid", 3}, {"valid", false}, {"reason", "too_late"}, {"final", 0}},
                               {{"uid", 9}, {"valid", true}, {"final", -1}}}}},
                            {{"window", 6},
                             {"uids",
                              {{{"uid", 1}, {"valid", true}, {"final", 0.6}},
                               {{"uid", 2}, {"valid", true}, {"final", 0.3}},
                               {{"uid", 3}, {"valid", true}, {"final", 0.1}}}}}};
  json posts = {{"posts",
                 {{{"epoch", 2},
                   {"window", 5},
                   {"uids", {1, 2}},
                   {"values", {65535, 21845}},
                   {"status", "confirmed"},
                   {"tx", "0xaa"}},
                  {{"epoch", 3}, {"window", 6}, {"uids", {1, 2, 3}}, {"values", {3, 1, 0}}, {"status", "pending"}}}}};
  auto r = demo_report_from_json(progress, windows, posts, {1, 2, 3});
  EXPECT_TRUE(r.is_ok()) << r.status();
  return std::move(r).value();
}

TEST(DemoReport, ParsesTheApiAndCountsAggregatedUploads) {
  const DemoReport r = sample();
  ASSERT_EQ(r.windows.size(), 2u);
  EXPECT_EQ(r.windows[0].set, (std::vector<std::uint16_t>{1, 2, 9}));
  EXPECT_EQ(r.windows[0].valid, (std::vector<std::uint16_t>{1, 2, 9}));
  EXPECT_EQ(r.windows[0].reasons.at(3), "too_late");
  EXPECT_DOUBLE_EQ(*r.windows[1].heldout_loss, 7.0);
  ASSERT_EQ(r.posts.size(), 2u);
  EXPECT_DOUBLE_EQ(r.posts[0].weights.at(1), 0.75);
  EXPECT_EQ(r.posts[0].tx, "0xaa");
  const DemoFigures f = demo_figures(r);
  EXPECT_EQ(f.valid_uploads, 5u);  // the miners' valid uploads: 1, 2 in window 5; 1, 2, 3 in window 6
  EXPECT_EQ(f.aggregated, 3u);     // 1, 2 in window 5; 1 in window 6 (the attacker is not a miner of the demo)
  EXPECT_DOUBLE_EQ(f.final_weights.at(1), 0.75);
  EXPECT_DOUBLE_EQ(f.final_weights.at(3), 0.0);
}

TEST(DemoReport, RefusesAProgressAnswerWithoutWindows) {
  EXPECT_FALSE(demo_report_from_json(json::object(), {}, json::object(), {1}).is_ok());
}

TEST(DemoReport, WritesSummaryAndPlot) {
  testing::TempDir dir;
  const DemoReport r = sample();
  ASSERT_TRUE(write_demo_outputs(r, dir.path() / "out").is_ok());
  std::ifstream in(dir.path() / "out/summary.json");
  json s = json::parse(in);
  ASSERT_EQ(s["windows"].size(), 2u);
  EXPECT_DOUBLE_EQ(s["windows"][0]["heldout_loss"].get<double>(), 7.5);
  EXPECT_EQ(s["windows"][0]["set"], json({1, 2, 9}));
  EXPECT_EQ(s["windows"][0]["rejected"]["3"], "too_late");
  EXPECT_EQ(s["weight_posts"][0]["tx"], "0xaa");
  EXPECT_DOUBLE_EQ(s["figures"]["aggregated_share"].get<double>(), 0.6);
  std::ifstream svg_in(dir.path() / "out/progress.svg");
  const std::string svg((std::istreambuf_iterator<char>(svg_in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("held-out loss"));
  EXPECT_THAT(svg, HasSubstr("uid 3"));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  // The loss line: the first window at the left of the plot and highest
  // (7.5 at the top), a point per window.
  EXPECT_THAT(svg, HasSubstr("points=\"84.0,40.0 656.0,280.0 \""));
  EXPECT_THAT(svg, HasSubstr("<title>window 6: 7.0000</title>"));
  // Each post a stacked bar of its shares; a uid with no weight draws nothing.
  EXPECT_THAT(svg, HasSubstr("<title>window 5: uid 1 0.750</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>window 5: uid 2 0.250</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>window 6: uid 1 0.750</title>"));
  EXPECT_THAT(svg, Not(HasSubstr("window 6: uid 3")));
  // Every window labelled, not only the first and last.
  EXPECT_THAT(svg, HasSubstr(">5</text>"));
  EXPECT_THAT(svg, HasSubstr(">6</text>"));
}

// Equal weights, which as lines lay on top of each other (only one uid
// visible), are equal segments of one bar, each its own colour.
TEST(DemoReport, EqualWeightsShowAsEqualSegments) {
  DemoReport r;
  r.miners = {1, 2, 3, 4};
  for (std::uint64_t w = 0; w < 30; ++w) {
    DemoWindow dw;
    dw.window = w;
    r.windows.push_back(dw);
  }
  DemoPost post;
  post.epoch = 1;
  post.window = 29;
  post.weights = {{1, 0.25}, {2, 0.25}, {3, 0.25}, {4, 0.25}};
  r.posts.push_back(post);
  const std::string svg = progress_svg(r);
  std::vector<std::string> heights, fills;
  const std::regex seg(
      R"re(<rect x="[0-9.]+" y="[0-9.]+" width="[0-9.]+" height="([0-9.]+)" fill="(#[0-9a-f]+)" stroke)re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), seg), end; it != end; ++it) {
    heights.push_back((*it)[1]);
    fills.push_back((*it)[2]);
  }
  ASSERT_EQ(heights.size(), 4u) << svg;
  EXPECT_EQ(std::set<std::string>(heights.begin(), heights.end()).size(), 1u);
  EXPECT_EQ(std::set<std::string>(fills.begin(), fills.end()).size(), 4u);
  // 30 windows: labels every third window, not 30 labels on top of each other.
  EXPECT_THAT(svg, HasSubstr(">0</text>"));
  EXPECT_THAT(svg, HasSubstr(">27</text>"));
  EXPECT_THAT(svg, Not(HasSubstr(">28</text>")));
}

}  // namespace
}  // namespace crucible::cli
