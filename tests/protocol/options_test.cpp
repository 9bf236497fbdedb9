#include "crucible/protocol/options.h"

#include <gtest/gtest.h>

#include <limits>

namespace crucible::protocol {
namespace {

Status load(Options& o, std::vector<config::FlagValue> flags) {
  config::Schema schema;
  bind_options(schema, o);
  config::LoadInputs in;
  in.flags = std::move(flags);
  return config::load(schema, in);
}

TEST(ProtocolOptions, EveryKeyAcceptsItsOwnDefault) {
  Options o;
  config::Schema schema;
  bind_options(schema, o);
  std::vector<config::FlagValue> flags;
  for (const auto& f : schema.fields()) {
    std::string text = f.render();
    if (text.size() >= 2 && text.front() == '"') text = text.substr(1, text.size() - 2);
    flags.push_back({f.key, text, ""});
  }
  Options again;
  Status st = load(again, flags);
  EXPECT_TRUE(st.is_ok()) << st;
  EXPECT_EQ(again.init_seed, o.init_seed);
  EXPECT_EQ(again.scoring.weight_power, o.scoring.weight_power);
}

TEST(ProtocolOptions, InitSeedTakesTheWholeUnsignedRange) {
  for (std::uint64_t seed :
       {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 63, std::numeric_limits<std::uint64_t>::max()}) {
    Options o;
    Status st = load(o, {{"protocol.init_seed", std::to_string(seed), ""}});
    ASSERT_TRUE(st.is_ok()) << seed << ": " << st;
    EXPECT_EQ(o.init_seed, seed);
  }
  Options o;
  EXPECT_FALSE(load(o, {{"protocol.init_seed", "-1", ""}}).is_ok());
  EXPECT_FALSE(load(o, {{"protocol.init_seed", "18446744073709551616", ""}}).is_ok());
}

// The outer learning rate's schedule (protocol.md §3): Covenant-72B's 1
// then 0.65, then 0.4 by default, any schedule as keys, each drop off with
// its rate 0.
TEST(ProtocolOptions, TheOuterRateDropsAtItsGlobalStepUnlessTheLateRateIsZero) {
  Options o;
  EXPECT_EQ(o.outer().at(0), 1.0);
  EXPECT_EQ(o.outer().at(49), 1.0);
  EXPECT_EQ(o.outer().at(50), 0.65);
  EXPECT_EQ(o.outer().at(74), 0.65);
  EXPECT_EQ(o.outer().at(75), 0.4);
  EXPECT_EQ(o.outer().at(1'000'000), 0.4);
  ASSERT_TRUE(load(o, {{"protocol.outer_lr_last", "0", ""}}).is_ok());
  EXPECT_EQ(o.outer().at(1'000'000), 0.65);  // the second drop off: the first holds
  ASSERT_TRUE(load(o, {{"protocol.outer_lr", "0.8", ""},
                       {"protocol.outer_lr_late", "0.4", ""},
                       {"protocol.outer_lr_late_from", "200", ""}})
                  .is_ok());
  EXPECT_EQ(o.outer().at(199), 0.8);
  EXPECT_EQ(o.outer().at(200), 0.4);
  ASSERT_TRUE(load(o, {{"protocol.outer_lr_late", "0", ""}}).is_ok());
  EXPECT_EQ(o.outer().at(5'000), 0.8);  // off: outer_lr throughout
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_late", "-0.1", ""}}).is_ok());
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_late", "11", ""}}).is_ok());
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_late_from", "-1", ""}}).is_ok());
}

// The second drop moves with its keys, and takes over from the first.
TEST(ProtocolOptions, ASecondDropTakesOverFromItsGlobalStep) {
  Options o;
  ASSERT_TRUE(load(o, {{"protocol.outer_lr_last", "0.3", ""}, {"protocol.outer_lr_last_from", "120", ""}}).is_ok());
  EXPECT_EQ(o.outer().at(50), 0.65);
  EXPECT_EQ(o.outer().at(119), 0.65);
  EXPECT_EQ(o.outer().at(120), 0.3);
  ASSERT_TRUE(load(o, {{"protocol.outer_lr_late", "0", ""}}).is_ok());
  EXPECT_EQ(o.outer().at(119), 1.0);  // the first drop off, the second still on
  EXPECT_EQ(o.outer().at(120), 0.3);
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_last", "-1", ""}}).is_ok());
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_last", "11", ""}}).is_ok());
}

TEST(ProtocolOptions, ScoringParametersAreKeys) {
  Options o;
  ASSERT_TRUE(load(o, {{"protocol.bma_alpha", "0.2", ""},
                       {"protocol.openskill_beta", "3", ""},
                       {"protocol.weight_power", "1", ""},
                       {"protocol.missing_penalty", "0.5", ""},
                       {"protocol.sync_max_steps", "4", ""},
                       {"protocol.sync_power", "1.5", ""},
                       {"protocol.openskill_tau", "0", ""},
                       {"protocol.openskill_kappa", "0.001", ""}})
                  .is_ok());
  EXPECT_EQ(o.scoring.bma_alpha, 0.2);
  EXPECT_EQ(o.scoring.openskill_beta, 3);
  EXPECT_EQ(o.scoring.weight_power, 1);
  EXPECT_EQ(o.scoring.missing_penalty, 0.5);
  EXPECT_EQ(o.scoring.sync_max_steps, 4);
  EXPECT_EQ(o.scoring.sync_power, 1.5);
  EXPECT_EQ(o.scoring.openskill_tau, 0);
  EXPECT_EQ(o.scoring.openskill_kappa, 0.001);
  EXPECT_FALSE(load(o, {{"protocol.bma_alpha", "2", ""}}).is_ok());
  EXPECT_FALSE(load(o, {{"protocol.validator_offset", "1", ""}}).is_ok());  // removed: nothing read it
}

}  // namespace
}  // namespace crucible::protocol
