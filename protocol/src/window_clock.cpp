#include "crucible/protocol/window_clock.h"

namespace crucible::protocol {

SlotTiming UploadSlot::classify(double t) const {
  if (t < start_s - skew_s) return SlotTiming::kEarly;
  if (t > end_s() + skew_s) return SlotTiming::kLate;
  return SlotTiming::kInside;
}

}  // namespace crucible::protocol
