#include "crucible/protocol/window_clock.h"

#include <gtest/gtest.h>

namespace crucible::protocol {
namespace {

TEST(WindowClock, WindowsAreRunsOfBlocks) {
  Options o;
  o.blocks_per_window = 10;
  WindowClock c(o);
  EXPECT_EQ(c.window_of(0), 0u);
  EXPECT_EQ(c.window_of(9), 0u);
  EXPECT_EQ(c.window_of(10), 1u);
  EXPECT_EQ(c.first_block(3), 30u);
  EXPECT_EQ(c.slot_block(3), 40u);  // w's slot opens with w+1
  EXPECT_EQ(c.blocks_left(3, 35), 5u);
  EXPECT_EQ(c.blocks_left(3, 40), 0u);
  EXPECT_EQ(c.blocks_left(3, 99), 0u);
}

TEST(UploadSlot, ClassifiesWithSkewOnBothSides) {
  Options o;
  o.upload_slot_s = 70;
  o.clock_skew_s = 5;
  o.reveal_s = 20;
  const UploadSlot s = WindowClock(o).slot(1000);
  EXPECT_EQ(s.start_s, 1000);
  EXPECT_EQ(s.end_s(), 1070);
  EXPECT_EQ(s.classify(994.9), SlotTiming::kEarly);
  EXPECT_EQ(s.classify(995), SlotTiming::kInside);
  EXPECT_EQ(s.classify(1075), SlotTiming::kInside);
  EXPECT_EQ(s.classify(1075.1), SlotTiming::kLate);
  EXPECT_TRUE(s.accepts(1030));
  // An uploader keeps to the slot itself; a validator waits out the skew.
  EXPECT_TRUE(s.open_for_upload(1070));
  EXPECT_FALSE(s.open_for_upload(1070.5));
  EXPECT_FALSE(s.closed(1074.9));
  EXPECT_TRUE(s.closed(1075));
  // Miners reveal their committed packets once it has closed; validators gather after reveal_s.
  EXPECT_EQ(s.reveal_end_s(), 1095);
  EXPECT_FALSE(s.revealed(1094.9));
  EXPECT_TRUE(s.revealed(1095));
}

}  // namespace
}  // namespace crucible::protocol
