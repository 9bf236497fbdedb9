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
// then 0.65, then 0.4 by default, the drops counted in samples a miner has
// trained (global step × samples_per_window), any schedule as keys, each
// drop off with its rate 0.
TEST(ProtocolOptions, TheOuterRateDropsAtItsSampleCountUnlessTheLateRateIsZero) {
  Options o;
  ASSERT_EQ(o.samples_per_window, 64u);
  // 6000 and 9000 samples: the steps that follow 94 and 141 sets of 64.
  EXPECT_EQ(o.outer().at(0), 1.0);
  EXPECT_EQ(o.outer().at(93), 1.0);    // 5952 samples
  EXPECT_EQ(o.outer().at(94), 0.65);   // 6016
  EXPECT_EQ(o.outer().at(140), 0.65);  // 8960
  EXPECT_EQ(o.outer().at(141), 0.4);   // 9024
  EXPECT_EQ(o.outer().at(1'000'000), 0.4);
  ASSERT_TRUE(load(o, {{"protocol.outer_lr_last", "0", ""}}).is_ok());
  EXPECT_EQ(o.outer().at(1'000'000), 0.65);  // the second drop off: the first holds
  ASSERT_TRUE(load(o, {{"protocol.outer_lr", "0.8", ""},
                       {"protocol.outer_lr_late", "0.4", ""},
                       {"protocol.outer_lr_late_from_samples", "200", ""},
                       {"protocol.samples_per_window", "1", ""}})
                  .is_ok());
  EXPECT_EQ(o.outer().at(199), 0.8);
  EXPECT_EQ(o.outer().at(200), 0.4);
  ASSERT_TRUE(load(o, {{"protocol.outer_lr_late", "0", ""}}).is_ok());
  EXPECT_EQ(o.outer().at(5'000), 0.8);  // off: outer_lr throughout
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_late", "-0.1", ""}}).is_ok());
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_late", "11", ""}}).is_ok());
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_late_from_samples", "-1", ""}}).is_ok());
}

// The same count of samples is reached in fewer sets when each set holds
// more of them: the drops stay at one point of training whatever the
// window's size.
TEST(ProtocolOptions, TheDropsComeAtTheSameSamplesWhateverAWindowHolds) {
  for (std::uint32_t per_window : {16u, 64u, 120u, 6'000u, 9'000u}) {
    Options o;
    ASSERT_TRUE(load(o, {{"protocol.samples_per_window", std::to_string(per_window), ""}}).is_ok());
    const std::uint64_t first_late = (6'000 + per_window - 1) / per_window;  // ceil(6000 / per_window)
    const std::uint64_t first_last = (9'000 + per_window - 1) / per_window;
    SCOPED_TRACE(per_window);
    if (first_late > 0) {
      EXPECT_EQ(o.outer().at(first_late - 1), 1.0);
    }
    EXPECT_EQ(o.outer().at(first_late), first_late == first_last ? 0.4 : 0.65);
    EXPECT_EQ(o.outer().at(first_last - 1), first_late == first_last ? 1.0 : 0.65);
    EXPECT_EQ(o.outer().at(first_last), 0.4);
  }
}

// A global step far past any real network's does not wrap the sample count
// around to before the drops.
TEST(ProtocolOptions, TheSampleCountSaturatesInsteadOfWrapping) {
  Options o;
  ASSERT_TRUE(load(o, {{"protocol.samples_per_window", "1000000", ""}}).is_ok());
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max() / 1'000'000 + 1;  // × 1e6 overflows
  EXPECT_EQ(o.outer().samples_at(huge), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(o.outer().at(huge), 0.4);
  EXPECT_EQ(o.outer().at(std::numeric_limits<std::uint64_t>::max()), 0.4);
}

// The second drop moves with its keys, and takes over from the first.
TEST(ProtocolOptions, ASecondDropTakesOverFromItsSampleCount) {
  Options o;
  ASSERT_TRUE(load(o, {{"protocol.outer_lr_last", "0.3", ""},
                       {"protocol.outer_lr_last_from_samples", "12000", ""},
                       {"protocol.samples_per_window", "100", ""}})
                  .is_ok());
  EXPECT_EQ(o.outer().at(60), 0.65);
  EXPECT_EQ(o.outer().at(119), 0.65);
  EXPECT_EQ(o.outer().at(120), 0.3);
  ASSERT_TRUE(load(o, {{"protocol.outer_lr_late", "0", ""}}).is_ok());
  EXPECT_EQ(o.outer().at(119), 1.0);  // the first drop off, the second still on
  EXPECT_EQ(o.outer().at(120), 0.3);
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_last", "-1", ""}}).is_ok());
  EXPECT_FALSE(load(o, {{"protocol.outer_lr_last", "11", ""}}).is_ok());
}

// The keys that counted the drops in global steps are refused with what
// replaced them, not ignored: a network that kept them would drop its rate
// at another point than its operator meant.
TEST(ProtocolOptions, TheRetiredGlobalStepKeysAreRefusedWithTheirReplacement) {
  for (const char* key : {"protocol.outer_lr_late_from", "protocol.outer_lr_last_from"}) {
    Options o;
    Status st = load(o, {{key, "50", ""}});
    ASSERT_FALSE(st.is_ok()) << key;
    EXPECT_NE(st.message().find("no longer read"), std::string::npos) << st;
    EXPECT_NE(st.message().find("_from_samples"), std::string::npos) << st;
    EXPECT_NE(st.message().find("samples_per_window"), std::string::npos) << st;
  }
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
