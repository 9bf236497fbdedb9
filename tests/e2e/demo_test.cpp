// `crucible demo`, the README's main job, end to end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using ::testing::HasSubstr;

TEST(Demo, RunsTheLocalNetworkAndPrintsScores) {
  testing::TempDir dir;
  auto r = testing::run_process(
      {testing::bin("crucible"), "demo", "--windows", "2", "--miners", "2", "--dir", dir.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("window done"));
  EXPECT_THAT(r.out, HasSubstr("uploads_valid=2"));
  EXPECT_THAT(r.out, HasSubstr("last evaluated"));  // the score table
  EXPECT_THAT(r.out, HasSubstr("demo: stopped"));
}

}  // namespace
}  // namespace crucible
