#include "crucible/chain/fault_chain.h"

#include <thread>

namespace crucible::chain {

FaultInjectingChain::FaultInjectingChain(std::shared_ptr<Chain> inner, ChainFaults faults)
    : ChainWrapper(std::move(inner)), faults_(faults), rng_(faults.seed) {}

void FaultInjectingChain::set_faults(const ChainFaults& faults) {
  std::lock_guard lock(mu_);
  faults_ = faults;
}

ChainFaultCounts FaultInjectingChain::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

Status FaultInjectingChain::read_fault(std::string_view what) {
  std::chrono::milliseconds latency{0};
  {
    std::lock_guard lock(mu_);
    latency = faults_.latency;
    if (faults_.read_error_rate > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < faults_.read_error_rate) {
      ++counts_.read_errors;
      return unavailable("injected fault: {} failed", what);
    }
  }
  if (latency.count() > 0) std::this_thread::sleep_for(latency);
  return Status::ok();
}

template <typename F>
Result<SentTx> FaultInjectingChain::transaction(std::string_view what, F&& send) {
  bool lose = false;
  {
    std::lock_guard lock(mu_);
    if (faults_.fail_next_transactions > 0) {
      --faults_.fail_next_transactions;
      ++counts_.failed_transactions;
      return unavailable("injected fault: {} was not sent", what);
    }
    if (faults_.lose_next_transactions > 0) {
      --faults_.lose_next_transactions;
      ++counts_.lost_transactions;
      lose = true;
    }
  }
  auto sent = send();
  if (lose && sent.is_ok()) return unavailable("injected fault: {} was sent but its receipt was lost", what);
  return sent;
}

Result<std::uint64_t> FaultInjectingChain::block_number() {
  CRUCIBLE_RETURN_IF_ERROR(read_fault("block_number"));
  return inner().block_number();
}
Result<BlockHeader> FaultInjectingChain::block(std::uint64_t number) {
  CRUCIBLE_RETURN_IF_ERROR(read_fault("block"));
  return inner().block(number);
}
Result<Metagraph> FaultInjectingChain::metagraph(std::uint16_t netuid) {
  CRUCIBLE_RETURN_IF_ERROR(read_fault("metagraph"));
  return inner().metagraph(netuid);
}
Result<SubnetParams> FaultInjectingChain::subnet_params(std::uint16_t netuid) {
  CRUCIBLE_RETURN_IF_ERROR(read_fault("subnet_params"));
  return inner().subnet_params(netuid);
}
Result<std::optional<std::string>> FaultInjectingChain::commitment(std::uint16_t netuid, std::uint16_t uid) {
  CRUCIBLE_RETURN_IF_ERROR(read_fault("commitment"));
  return inner().commitment(netuid, uid);
}
Result<SentTx> FaultInjectingChain::set_weights(std::uint16_t netuid, const std::vector<std::uint16_t>& uids,
                                                const std::vector<std::uint16_t>& values, std::uint64_t version_key) {
  return transaction("setWeights", [&] { return inner().set_weights(netuid, uids, values, version_key); });
}
Result<SentTx> FaultInjectingChain::commit_weights(const WeightsCommit& commit) {
  return transaction("commitWeights", [&] { return inner().commit_weights(commit); });
}
Result<SentTx> FaultInjectingChain::reveal_weights(const WeightsCommit& commit) {
  return transaction("revealWeights", [&] { return inner().reveal_weights(commit); });
}
Result<SentTx> FaultInjectingChain::set_commitment(std::uint16_t netuid, const std::string& data) {
  return transaction("setCommitment", [&] { return inner().set_commitment(netuid, data); });
}

}  // namespace crucible::chain
