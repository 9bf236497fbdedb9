#include "crucible/common/status.h"

#include <gtest/gtest.h>

#include <set>

namespace crucible {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return invalid_argument("value {} is not positive", x);
  return x;
}

Status double_it(int x, int* out) {
  CRUCIBLE_ASSIGN_OR_RETURN(int v, parse_positive(x));
  *out = 2 * v;
  return Status::ok();
}

Status chain(int x) {
  int ignored = 0;
  CRUCIBLE_RETURN_IF_ERROR(double_it(x, &ignored));
  return not_found("reached the end with {}", ignored);
}

TEST(Status, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.to_string(), "ok");
  EXPECT_TRUE(Status(StatusCode::kOk, "ignored").message().empty());
}

TEST(Status, CarriesCodeAndFormattedMessage) {
  Status s = invalid_argument("key '{}' in {} line {}", "miner.steps", "m.toml", 4);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "key 'miner.steps' in m.toml line 4");
  EXPECT_EQ(s.to_string(), "invalid_argument: key 'miner.steps' in m.toml line 4");
  EXPECT_EQ(fmt::format("{}", s), s.to_string());
}

TEST(Status, TransientCodes) {
  EXPECT_TRUE(unavailable("503").is_transient());
  EXPECT_TRUE(deadline_exceeded("slow").is_transient());
  EXPECT_FALSE(permission_denied("403").is_transient());
  EXPECT_FALSE(not_found("404").is_transient());
  EXPECT_FALSE(Status::ok().is_transient());
}

TEST(Status, ContextKeepsCode) {
  Status s = data_loss("checksum mismatch").with_context("get gradient/12.crg");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "get gradient/12.crg: checksum mismatch");
  EXPECT_TRUE(Status::ok().with_context("x").is_ok());
}

TEST(Status, EveryCodeHasADistinctName) {
  std::set<std::string_view> names;
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    names.insert(status_code_name(static_cast<StatusCode>(c)));
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(StatusCode::kInternal) + 1);
  EXPECT_EQ(names.count("unknown"), 0u);
}

TEST(Result, HoldsValueOrError) {
  Result<int> good = parse_positive(3);
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ(*good, 3);
  EXPECT_TRUE(good.status().is_ok());

  Result<int> bad = parse_positive(-1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(7), 7);
  EXPECT_THROW((void)bad.value(), BadResultAccess);
}

TEST(Result, OkStatusWithoutValueIsAnError) {
  Result<int> r = Status::ok();
  EXPECT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(Result, MacrosPropagate) {
  int out = 0;
  EXPECT_TRUE(double_it(4, &out).is_ok());
  EXPECT_EQ(out, 8);
  Status s = double_it(0, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(chain(-5).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(chain(5).code(), StatusCode::kNotFound);
  EXPECT_EQ(chain(5).message(), "reached the end with 10");
}

}  // namespace
}  // namespace crucible
