// The ranks of one miner (issue #27): data-parallel workers that train the
// same window together, each on its share of every micro-batch, and average
// their gradients with c10d's all-reduce (Gloo on the CPU) before each AdamW
// step, so that every rank holds the same model and the update is the one a
// single rank computes on the whole micro-batch. Rank 0 owns the key, the
// chain, the state folder and the upload.
//
// Built on libtorch's c10d where the libtorch has it with Gloo (Debian's
// 1.13 does; its headers need libgloo-dev); elsewhere `available()` is false
// and joining more than one rank is a clear error.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "crucible/common/bytes.h"
#include "crucible/common/status.h"

namespace crucible::miner {

struct RankLayout {
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::string store = "127.0.0.1:29500";  // host:port of the rendezvous; rank 0 listens there
  double timeout_s = 120;                 // the rendezvous and every collective
};

// "host:port" -> (host, port), or an error naming the text.
Result<std::pair<std::string, std::uint16_t>> parse_store_address(const std::string& text);

class RankGroup {
 public:
  // Whether this build has c10d with Gloo.
  static bool available();
  // Meets the other ranks at layout.store (rank 0 serves it); fails with
  // deadline_exceeded when they are not all there within the timeout.
  static Result<std::unique_ptr<RankGroup>> join(const RankLayout& layout);
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  std::uint32_t rank() const { return layout_.rank; }
  std::uint32_t world_size() const { return layout_.world_size; }

  // values <- the mean of every rank's values (all of the same length).
  // An error, never a hang, when a rank has gone or does not answer within
  // the timeout; the group is then unusable.
  Status all_reduce_mean(std::span<float> values);

  // all <- every rank's `mine`, rank by rank (all.size() is world_size
  // times mine.size(), the same on every rank).
  Status all_gather(std::span<const float> mine, std::span<float> all);
  // The same into rank 0's `all` only; the other ranks pass an empty one.
  Status gather_to_rank0(std::span<const float> mine, std::span<float> all);

  // bytes <- rank 0's bytes (every rank passes a buffer of the same size).
  // `timeout_s` > 0 replaces the group's timeout for this call: a worker
  // waiting for rank 0's next window waits as long as a window may take,
  // and still learns at once when rank 0 has gone.
  Status broadcast(std::span<std::uint8_t> bytes, double timeout_s = 0);
  // The same for a buffer whose length only rank 0 knows (at most max_bytes).
  Status broadcast_bytes(Bytes& bytes, std::uint64_t max_bytes, double timeout_s = 0);

 private:
  explicit RankGroup(const RankLayout& layout);
  struct Impl;
  enum class Gather { kAll, kToRank0 };
  Status gather(Gather kind, std::span<const float> mine, std::span<float> all);
  RankLayout layout_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crucible::miner
