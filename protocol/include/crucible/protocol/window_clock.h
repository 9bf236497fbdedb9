// The window clock (protocol.md §1): windows are runs of blocks; the upload
// slot for window w's gradient opens at the timestamp of w+1's first block
// and lasts upload_slot_s; checks of an upload's time allow clock_skew_s on
// either side. Pure arithmetic: the caller reads blocks and the time, so the
// miner, the validator and the tests compute the same answers.
#pragma once

#include <cstdint>

#include "crucible/protocol/options.h"

namespace crucible::protocol {

enum class SlotTiming { kEarly, kInside, kLate };

struct UploadSlot {
  double start_s = 0;  // Unix seconds: timestamp of the first block of window w+1
  double length_s = 0;
  double skew_s = 0;
  double reveal_s = 0;

  double end_s() const { return start_s + length_s; }
  // Where time t (Unix seconds, as observed) falls, skew allowed on both sides.
  SlotTiming classify(double t) const;
  bool accepts(double t) const { return classify(t) == SlotTiming::kInside; }
  // An uploader may still put its object: t is not past the slot's end.
  bool open_for_upload(double t) const { return t <= end_s(); }
  // Every upload a skewed clock could call in time has had its chance.
  bool closed(double t) const { return t >= end_s() + skew_s; }
  // Packets committed in the slot have been uploaded (revealed): gather may start.
  double reveal_end_s() const { return end_s() + skew_s + reveal_s; }
  bool revealed(double t) const { return t >= reveal_end_s(); }
};

class WindowClock {
 public:
  explicit WindowClock(const Options& o)
      : blocks_per_window_(o.blocks_per_window),
        slot_s_(o.upload_slot_s),
        skew_s_(o.clock_skew_s),
        reveal_s_(o.reveal_s) {}

  std::uint32_t blocks_per_window() const { return blocks_per_window_; }
  std::uint64_t window_of(std::uint64_t block) const { return block / blocks_per_window_; }
  std::uint64_t first_block(std::uint64_t window) const { return window * blocks_per_window_; }
  // The block whose timestamp opens window w's upload slot: the first of w+1.
  std::uint64_t slot_block(std::uint64_t window) const { return first_block(window + 1); }
  // Window w's slot, given the timestamp of slot_block(w).
  UploadSlot slot(std::uint64_t slot_block_timestamp) const {
    return {static_cast<double>(slot_block_timestamp), slot_s_, skew_s_, reveal_s_};
  }
  // Blocks still to come before window w ends, seen from block `head`.
  std::uint64_t blocks_left(std::uint64_t window, std::uint64_t head) const {
    const std::uint64_t end = first_block(window + 1);
    return end > head ? end - head : 0;
  }

 private:
  std::uint32_t blocks_per_window_;
  double slot_s_;
  double skew_s_;
  double reveal_s_;
};

}  // namespace crucible::protocol
