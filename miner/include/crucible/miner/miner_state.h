// What a miner keeps across restarts (protocol.md §3 [crucible]): the model
// as of its last applied aggregate, AdamW state, the error-feedback buffer
// and its progress. Each save is a new generation folder (gen-N/) made
// complete before CURRENT is switched to it atomically, so a crash at any
// point leaves the previous generation intact. A lock file keeps two
// miners off one state folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "crucible/chain/keccak.h"
#include "crucible/common/status.h"
#include "crucible/common/tensor_spec.h"
#include "crucible/protocol/model_chain.h"

namespace crucible::miner {

using model::TensorSpec;

struct MinerState {
  std::optional<std::uint64_t> trained_window;   // last window whose gradient was made
  std::optional<std::uint64_t> uploaded_window;  // last window whose gradient was uploaded
  protocol::ChainState chain;                    // the model's place in the lead's set chain (window, basis, step)
  std::uint64_t inner_steps = 0;                 // AdamW steps taken (for the schedule)
  std::vector<std::vector<float>> ef;            // error feedback, per tensor
};

class StateDir {
 public:
  // Creates the folder and takes its lock (failed_precondition if another process holds it).
  static Result<StateDir> open(const std::filesystem::path& dir);
  StateDir(StateDir&&) noexcept;
  StateDir& operator=(StateDir&&) noexcept;
  ~StateDir();

  // The current generation's folder and state, or nullopt for a fresh folder.
  // EF tensors are checked against the specs.
  Result<std::optional<std::pair<std::filesystem::path, MinerState>>> load(const std::vector<TensorSpec>& specs) const;
  // A new generation: `write_files(dir)` writes the model and optimizer into
  // it, then the EF buffer and state.json are added and CURRENT switched.
  Status commit(const MinerState& state, const std::vector<TensorSpec>& specs,
                const std::function<Status(const std::filesystem::path&)>& write_files);
  const std::filesystem::path& path() const { return dir_; }

 private:
  StateDir(std::filesystem::path dir, int lock_fd) : dir_(std::move(dir)), lock_fd_(lock_fd) {}
  std::filesystem::path dir_;
  int lock_fd_ = -1;
  std::uint64_t next_gen_ = 0;
};

}  // namespace crucible::miner
