// The local test chain: anvil (npm @foundry-rs/anvil-linux-amd64) on
// 127.0.0.1 with the Bittensor stand-in contracts at the precompile
// addresses, one subnet created, and anvil's funded dev accounts. Used by
// `crucible chain up`, the demo and the integration tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "crucible/chain/keys.h"
#include "crucible/chain/uint256.h"
#include "crucible/common/bytes.h"
#include "crucible/common/status.h"

namespace crucible::chain {

// The local chain's id: anvil's own default, so that a config meant for it
// and pointed at Bittensor testnet (945) or mainnet (964) by mistake is
// refused by the chain-id check, and the other way round.
inline constexpr std::uint64_t kLocalChainId = 31337;

struct LocalChainOptions {
  std::string anvil_path;  // the anvil binary
  std::string work_dir;    // anvil's log and account list go here
  std::uint16_t port = 0;  // 0: a free port
  std::uint64_t chain_id = kLocalChainId;
  double block_time_s = 0;  // 0: a block per transaction (automine)
  std::uint16_t netuid = 1;
  std::uint16_t max_uids = 256;
  // Hyperparameters (subtensor's defaults for a new subnet are commit-reveal
  // on, tempo 360, rate limit 100; the local chain's make a network that
  // runs in seconds, and tests choose theirs).
  bool commit_reveal = false;
  std::uint64_t version_key = 0;
  std::uint64_t rate_limit = 0;
  std::uint64_t tempo = 10;        // subtensor's fast-blocks tempo (runtime/src/lib.rs INITIAL_SUBNET_TEMPO)
  std::uint64_t burn = 1'000'000;  // rao burned by a registration (0.001 TAO)
  // anvil's state file: loaded at start when it exists (the stand-ins, the
  // subnet, registrations and balances come back, and blocks go on from the
  // saved head), written every few seconds and on stop. Empty: nothing is
  // kept when the chain stops.
  std::string state_file;
};

class LocalChain {
 public:
  static Result<std::unique_ptr<LocalChain>> start(const LocalChainOptions& options);
  ~LocalChain();  // stops anvil
  LocalChain(const LocalChain&) = delete;
  LocalChain& operator=(const LocalChain&) = delete;

  const std::string& url() const noexcept { return url_; }
  std::uint64_t chain_id() const noexcept { return options_.chain_id; }
  std::uint16_t netuid() const noexcept { return options_.netuid; }
  pid_t pid() const noexcept { return pid_; }
  // Whether the chain came back from options.state_file.
  bool resumed() const noexcept { return resumed_; }
  // anvil's funded dev accounts; [0] is the stand-ins' admin.
  const std::vector<PrivateKey>& dev_keys() const noexcept { return dev_keys_; }

  // Admin calls on the stand-in state (anvil's first account signs them).
  // A hyperparameter by name: tempo, commit_reveal, version_key, rate_limit,
  // reveal_period, min_allowed_weights, max_weights_limit, max_validators,
  // stake_threshold, burn, burn_increase_mille, registration_allowed.
  Status set_hyperparameter(std::string_view name, std::uint64_t value);
  Status set_subnet_params(bool commit_reveal, std::uint64_t version_key, std::uint64_t rate_limit);
  // The uid's hotkey stake (rao). Permits follow stake at each epoch (the
  // top max_validators with stake); with `until_permit`, blocks are mined
  // to the next epoch so the permit is in force when this returns.
  Status set_stake(std::uint16_t uid, std::uint64_t stake, bool until_permit);
  // Mines blocks until the subnet's next epoch begins.
  Status mine_to_next_epoch();
  // The next registration replaces `uid` (subtensor's pruning of a full
  // subnet): the uid keeps its number and gets a new hotkey.
  Status prune_next(std::uint16_t uid);
  // Mines `n` blocks now (anvil_mine).
  Status mine(std::uint64_t n);

  Status stop();

 private:
  explicit LocalChain(LocalChainOptions options) : options_(std::move(options)) {}
  Status launch();
  Status install_standins();
  Result<bool> standins_present();
  Status admin_call(const Bytes& data);

  LocalChainOptions options_;
  std::string url_;
  pid_t pid_ = -1;
  bool resumed_ = false;
  std::vector<PrivateKey> dev_keys_;
};

// Operator helpers for a local chain that is already running (`crucible
// chain up` in another terminal), by its RPC URL. They use anvil's own
// methods (anvil_setBalance; anvil_impersonateAccount of the stand-ins'
// admin), so on any other chain they fail with failed_precondition and
// change nothing.
Status local_fund(const std::string& rpc_url, const Address& to, const U256& wei);
// With until_permit, blocks are mined to the next epoch, when permits follow stake.
Status local_set_stake(const std::string& rpc_url, std::uint16_t netuid, std::uint16_t uid, std::uint64_t stake,
                       bool until_permit);
// Mines blocks until the subnet's next epoch (when permits follow stake).
Status local_mine_to_next_epoch(const std::string& rpc_url, std::uint16_t netuid);
// A subnet hyperparameter (LocalChain::set_hyperparameter's names).
Status local_set_hyperparameter(const std::string& rpc_url, std::uint16_t netuid, std::string_view name,
                                std::uint64_t value);

}  // namespace crucible::chain
