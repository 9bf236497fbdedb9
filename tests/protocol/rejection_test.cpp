#include "crucible/protocol/rejection.h"

#include <gtest/gtest.h>

#include <set>

namespace crucible::protocol {
namespace {

TEST(Rejection, NamesAreDistinctSnakeCaseAndRoundTrip) {
  std::set<std::string_view> seen;
  for (Rejection r : kAllRejections) {
    const std::string_view n = name(r);
    EXPECT_TRUE(seen.insert(n).second) << n;
    EXPECT_NE(n, "unknown");
    for (char c : n) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_') << n;
    EXPECT_EQ(rejection_from_name(n), r);
  }
  EXPECT_FALSE(rejection_from_name("too late").has_value());
  EXPECT_FALSE(rejection_from_name("").has_value());
}

TEST(Rejection, OnlyAbsentOrMistimedUploadsEscapeTheLastRank) {
  for (Rejection r : {Rejection::kMissing, Rejection::kUnreachable, Rejection::kTooEarly, Rejection::kTooLate,
                      Rejection::kNotObserved}) {
    EXPECT_FALSE(ranks_last(r)) << name(r);
  }
  for (Rejection r : {Rejection::kBadPacket, Rejection::kWrongSigner, Rejection::kCopy, Rejection::kReplay,
                      Rejection::kNotAssignedData, Rejection::kWrongShape, Rejection::kNonFinite}) {
    EXPECT_TRUE(ranks_last(r)) << name(r);
  }
}

}  // namespace
}  // namespace crucible::protocol
