#include "crucible/common/json_fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace crucible {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(JsonFields, ReadsEachTypeWhenPresentAndWellTyped) {
  const json j = json::parse(R"({"a":7,"b":-3,"c":1.5,"d":true,"e":"x","f":[1,2],"g":null})");
  JsonFields f(j, "rec");
  EXPECT_EQ(f.get<std::uint16_t>("a"), 7);
  EXPECT_EQ(f.get<int>("b"), -3);
  EXPECT_EQ(f.get<double>("c"), 1.5);
  EXPECT_EQ(f.get<double>("a"), 7.0);  // an integer is a number
  EXPECT_TRUE(f.get<bool>("d"));
  EXPECT_EQ(f.get<std::string>("e"), "x");
  EXPECT_EQ(f.get<std::vector<std::uint16_t>>("f"), (std::vector<std::uint16_t>{1, 2}));
  EXPECT_EQ(f.opt<std::uint64_t>("g"), std::nullopt);     // null
  EXPECT_EQ(f.opt<std::uint64_t>("nope"), std::nullopt);  // absent
  EXPECT_EQ(f.get_or<std::string>("nope", "dflt"), "dflt");
  EXPECT_TRUE(f.ok()) << f.status();
}

// Each of these was either an exception (nlohmann's type_error) or a silent
// narrowing with get<T>; each is now data_loss naming the field.
TEST(JsonFields, AMissingMistypedOrOutOfRangeFieldIsDataLossNamingIt) {
  struct Case {
    std::string text;
    std::function<void(JsonFields&)> read;
  };
  const std::vector<Case> cases{
      {R"({})", [](JsonFields& f) { f.get<double>("k"); }},
      {R"({"k":null})", [](JsonFields& f) { f.get<double>("k"); }},
      {R"({"k":"1"})", [](JsonFields& f) { f.get<double>("k"); }},
      {R"({"k":65536})", [](JsonFields& f) { f.get<std::uint16_t>("k"); }},
      {R"({"k":-1})", [](JsonFields& f) { f.get<std::uint64_t>("k"); }},
      {R"({"k":1.5})", [](JsonFields& f) { f.get<std::uint32_t>("k"); }},
      {R"({"k":2147483648})", [](JsonFields& f) { f.get<int>("k"); }},
      {R"({"k":-2147483649})", [](JsonFields& f) { f.get<int>("k"); }},
      {R"({"k":1})", [](JsonFields& f) { f.get<bool>("k"); }},
      {R"({"k":[1,70000]})", [](JsonFields& f) { f.get<std::vector<std::uint16_t>>("k"); }},
      {R"({"k":{"a":1}})", [](JsonFields& f) { f.get<std::vector<std::uint16_t>>("k"); }},
      {R"({"k":5})", [](JsonFields& f) { f.opt<std::string>("k"); }},
      {R"({"k":5})", [](JsonFields& f) { f.get_or<std::string>("k", ""); }},
  };
  for (const auto& c : cases) {
    const json j = json::parse(c.text);
    JsonFields f(j, "rec");
    c.read(f);
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_EQ(f.status().code(), StatusCode::kDataLoss) << c.text;
    EXPECT_THAT(f.status().message(), HasSubstr("rec: field 'k'")) << c.text;
  }
}

TEST(JsonFields, TheFirstErrorStaysAndLaterReadsGiveDefaults) {
  const json j = json::parse(R"({"a":"x","b":3})");
  JsonFields f(j, "rec");
  EXPECT_EQ(f.get<int>("a"), 0);
  EXPECT_EQ(f.get<int>("b"), 0);  // after an error, nothing more is read
  f.check(false, "b", "is wrong too");
  EXPECT_THAT(f.status().message(), HasSubstr("field 'a'"));
}

TEST(JsonFields, NotAnObjectIsAnError) {
  for (const char* text : {"[]", "3", "null", R"("s")"}) {
    const json j = json::parse(text);
    JsonFields f(j, "rec");
    EXPECT_FALSE(f.ok()) << text;
    EXPECT_EQ(f.get<int>("a"), 0);
    EXPECT_THAT(f.status().message(), HasSubstr("not a JSON object"));
  }
}

TEST(JsonFields, ACallersCheckNamesTheField) {
  const json j = json::parse(R"({"n":3})");
  JsonFields f(j, "rec");
  f.check(f.get<int>("n") < 2, "n", "must be below 2");
  EXPECT_EQ(f.status().message(), "rec: field 'n' must be below 2");
}

}  // namespace
}  // namespace crucible
