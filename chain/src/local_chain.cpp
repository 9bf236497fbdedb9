#include "crucible/chain/local_chain.h"

#include "crucible/common/child_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "crucible/chain/abi.h"
#include "crucible/chain/evm_chain.h"
#include "crucible/chain/standins.h"
#include "crucible/chain/substrate.h"
#include "crucible/chain/tx_sender.h"

namespace crucible::chain {
namespace {

using abi::Value;
using nlohmann::json;

// How often anvil writes its state file, when it has one.
constexpr int kStateIntervalS = 5;

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > 800 ? s.substr(s.size() - 800) : s;
}

// anvil's command line: loopback, the port and chain id, the accounts file
// it writes once up, the block time, the state file (loaded if it exists,
// dumped on exit and every kStateIntervalS seconds, so that a kill -9
// loses at most that much).
Result<std::vector<std::string>> anvil_argv(const LocalChainOptions& o, const std::string& accounts_path) {
  std::vector<std::string> argv = {o.anvil_path,
                                   "--host",
                                   "127.0.0.1",
                                   "--port",
                                   std::to_string(o.port),
                                   "--chain-id",
                                   std::to_string(o.chain_id),
                                   "--config-out",
                                   accounts_path};
  if (o.block_time_s > 0) {
    argv.push_back("--block-time");
    argv.push_back(fmt::format("{}", o.block_time_s));
  }
  if (!o.state_file.empty()) {
    const auto parent = std::filesystem::absolute(o.state_file).parent_path();
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) return unavailable("cannot create the folder of the state file {}: {}", parent.string(), ec.message());
    argv.insert(argv.end(), {"--state", o.state_file, "--state-interval", std::to_string(kStateIntervalS)});
  }
  return argv;
}

// Waits (at most 15 s) until the anvil just started answers on `url` and has
// written its accounts; an exit during start-up (pid becomes -1, reaped)
// is an error with its log.
Status wait_for_anvil(pid_t& pid, const std::string& url, const std::string& log_path,
                      const std::string& accounts_path) {
  RpcOptions rpc_options;
  rpc_options.url = url;
  rpc_options.call_timeout = std::chrono::milliseconds(500);
  rpc_options.max_attempts = 1;
  RpcClient rpc(rpc_options);
  EthClient eth(rpc);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (true) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return unavailable("anvil exited during start-up; its log says: {}", tail_of(log_path));
    }
    auto id = eth.chain_id();
    if (id.is_ok() && std::filesystem::exists(accounts_path)) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return deadline_exceeded("anvil did not answer on {} within 15 s; log: {}", url, tail_of(log_path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<LocalChain>> LocalChain::start(const LocalChainOptions& options) {
  std::unique_ptr<LocalChain> chain(new LocalChain(options));
  CRUCIBLE_RETURN_IF_ERROR(chain->launch());
  // A chain loaded from its state file has its stand-ins and subnet already.
  CRUCIBLE_ASSIGN_OR_RETURN(chain->resumed_, chain->standins_present());
  if (!chain->resumed_) CRUCIBLE_RETURN_IF_ERROR(chain->install_standins());
  return chain;
}

LocalChain::~LocalChain() { (void)stop(); }

Status LocalChain::launch() {
  if (access(options_.anvil_path.c_str(), X_OK) != 0) {
    return not_found("anvil not found at '{}' (scripts/setup.sh installs it under tools/node_modules)",
                     options_.anvil_path);
  }
  std::error_code ec;
  std::filesystem::create_directories(options_.work_dir, ec);
  if (options_.port == 0) {
    CRUCIBLE_ASSIGN_OR_RETURN(options_.port, free_loopback_port());
  }
  url_ = fmt::format("http://127.0.0.1:{}", options_.port);
  std::string log_path = options_.work_dir + "/anvil.log";
  std::string accounts_path = options_.work_dir + "/anvil-accounts.json";
  std::filesystem::remove(accounts_path, ec);

  CRUCIBLE_ASSIGN_OR_RETURN(std::vector<std::string> argv, anvil_argv(options_, accounts_path));
  pid_ = fork();
  if (pid_ < 0) return unavailable("fork: {}", std::strerror(errno));
  if (pid_ == 0) {
    reset_child_for_exec(SIGTERM);  // a clean signal mask; never outlive the process that started it
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }

  CRUCIBLE_RETURN_IF_ERROR(wait_for_anvil(pid_, url_, log_path, accounts_path));
  std::ifstream in(accounts_path);
  json accounts = json::parse(in, nullptr, false);
  if (accounts.is_discarded() || !accounts.contains("private_keys")) {
    return data_loss("anvil's account list {} is unreadable", accounts_path);
  }
  for (const auto& k : accounts["private_keys"]) {
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes raw, from_hex(k.get<std::string>()));
    CRUCIBLE_ASSIGN_OR_RETURN(PrivateKey key, PrivateKey::from_bytes(raw));
    dev_keys_.push_back(std::move(key));
  }
  if (dev_keys_.empty()) return data_loss("anvil reported no dev accounts");
  return Status::ok();
}

Status LocalChain::admin_call(const Bytes& data) {
  RpcOptions rpc_options;
  rpc_options.url = url_;
  RpcClient rpc(rpc_options);
  EthClient eth(rpc);
  TxOptions tx_options;
  tx_options.receipt_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(30'000 + 4'000 * options_.block_time_s));
  TxSender sender(eth, dev_keys_[0], options_.chain_id, tx_options);
  auto sent = sender.send(Address::from_low_u64(standins::kStateAddress), data);
  return sent.status();
}

Result<bool> LocalChain::standins_present() {
  if (options_.state_file.empty()) return false;
  RpcOptions rpc_options;
  rpc_options.url = url_;
  RpcClient rpc(rpc_options);
  CRUCIBLE_ASSIGN_OR_RETURN(json code,
                            rpc.call("eth_getCode", json::array({Address::from_low_u64(0x802).hex(), "latest"})));
  return code.is_string() && code.get<std::string>().size() > 2;
}

Status LocalChain::install_standins() {
  RpcOptions rpc_options;
  rpc_options.url = url_;
  RpcClient rpc(rpc_options);
  const std::pair<std::uint64_t, const char*> codes[] = {
      {standins::kStateAddress, standins::kSubtensorStateRuntime},
      {0x802, standins::kMetagraphStandInRuntime},
      {0x803, standins::kSubnetStandInRuntime},
      {0x804, standins::kNeuronStandInRuntime},
      {standins::kCommitmentsAddress, standins::kCommitmentsStandInRuntime},
      {standins::kStorageQueryAddress, standins::kStorageQueryStandInRuntime},
      {standins::kProxyAddress, standins::kProxyStandInRuntime},
      {standins::kStakingAddress, standins::kStakingStandInRuntime}};
  for (const auto& [addr, code] : codes) {
    auto r = rpc.call("anvil_setCode", json::array({Address::from_low_u64(addr).hex(), code}));
    if (!r.is_ok()) return r.status().with_context("installing stand-in contracts");
  }
  CRUCIBLE_ASSIGN_OR_RETURN(
      Bytes create,
      abi::encode_call("createSubnet(uint16,uint16)", {Value::uint(options_.netuid), Value::uint(options_.max_uids)}));
  CRUCIBLE_RETURN_IF_ERROR(admin_call(create).with_context("createSubnet"));
  CRUCIBLE_RETURN_IF_ERROR(set_hyperparameter("tempo", options_.tempo));
  CRUCIBLE_RETURN_IF_ERROR(set_hyperparameter("burn", options_.burn));
  return set_subnet_params(options_.commit_reveal, options_.version_key, options_.rate_limit);
}

Status LocalChain::set_hyperparameter(std::string_view name, std::uint64_t value) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes data,
                            abi::encode_call("setHyperparameter(uint16,string,uint64)",
                                             {Value::uint(options_.netuid), Value::string(name), Value::uint(value)}));
  return admin_call(data).with_context(fmt::format("setHyperparameter {}", name));
}

Status LocalChain::set_subnet_params(bool commit_reveal, std::uint64_t version_key, std::uint64_t rate_limit) {
  CRUCIBLE_RETURN_IF_ERROR(set_hyperparameter("commit_reveal", commit_reveal ? 1 : 0));
  CRUCIBLE_RETURN_IF_ERROR(set_hyperparameter("version_key", version_key));
  return set_hyperparameter("rate_limit", rate_limit);
}

namespace {

// Blocks from the head to the subnet's next epoch (StorageQuery reads, as a
// node makes them).
Result<std::uint64_t> blocks_to_next_epoch(const std::string& url, std::uint16_t netuid) {
  EvmChainOptions o;
  o.rpc.url = url;
  CRUCIBLE_ASSIGN_OR_RETURN(auto reader, EvmChain::connect(o, std::nullopt));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t head, reader->block_number());
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes tempo_raw, reader->storage(substrate::subtensor_storage_key("Tempo", netuid)));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t tempo, substrate::decode_storage_uint(tempo_raw, 2, 0));
  if (tempo == 0) return failed_precondition("subnet {} has tempo 0: no epochs, so no permits change", netuid);
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes last_raw,
                            reader->storage(substrate::subtensor_storage_key("LastEpochBlock", netuid)));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t last, substrate::decode_storage_uint(last_raw, 8, 0));
  // The next transaction lands in head + 1; the epoch fires at last + tempo.
  const std::uint64_t next = last + tempo;
  return next > head ? next - head : 0;
}

Status mine_blocks(const std::string& url, std::uint64_t n) {
  if (n == 0) return Status::ok();
  RpcOptions rpc_options;
  rpc_options.url = url;
  RpcClient rpc(rpc_options);
  return rpc.call("anvil_mine", json::array({U256(n).to_quantity()})).status();
}

Status mine_to_epoch(const std::string& url, std::uint16_t netuid) {
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t n, blocks_to_next_epoch(url, netuid));
  return mine_blocks(url, n);
}

}  // namespace

Status LocalChain::mine_to_next_epoch() { return mine_to_epoch(url_, options_.netuid); }

Status LocalChain::set_stake(std::uint16_t uid, std::uint64_t stake, bool until_permit) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes data,
                            abi::encode_call("setStake(uint16,uint16,uint64)",
                                             {Value::uint(options_.netuid), Value::uint(uid), Value::uint(stake)}));
  CRUCIBLE_RETURN_IF_ERROR(admin_call(data).with_context("setStake"));
  if (!until_permit) return Status::ok();
  return mine_to_next_epoch().with_context("waiting for the epoch that hands out permits");
}

Status LocalChain::prune_next(std::uint16_t uid) {
  CRUCIBLE_ASSIGN_OR_RETURN(
      Bytes data, abi::encode_call("pruneNext(uint16,uint16)", {Value::uint(options_.netuid), Value::uint(uid)}));
  return admin_call(data).with_context("pruneNext");
}

Status LocalChain::mine(std::uint64_t n) { return mine_blocks(url_, n); }

Status LocalChain::stop() {
  if (pid_ <= 0) return Status::ok();
  kill(pid_, SIGTERM);
  // anvil writes its state file on the way out: give it time to.
  const int polls = options_.state_file.empty() ? 100 : 1000;
  for (int i = 0; i < polls; ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  return Status::ok();
}

namespace {

// The stand-ins' admin (contracts/SubtensorState.sol): anvil's first dev account.
constexpr const char* kAdminAddress = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

// A call of anvil's own, as failed_precondition when the node is not anvil.
Result<nlohmann::json> anvil_call(RpcClient& rpc, std::string_view method, nlohmann::json params) {
  auto r = rpc.call(method, std::move(params));
  if (!r.is_ok() && r.status().code() != StatusCode::kUnavailable &&
      r.status().code() != StatusCode::kDeadlineExceeded) {
    return failed_precondition("{} failed: this works only on the local chain (anvil): {}", method,
                               r.status().message());
  }
  return r;
}

}  // namespace

Status local_fund(const std::string& rpc_url, const Address& to, const U256& wei) {
  RpcOptions o;
  o.url = rpc_url;
  RpcClient rpc(o);
  return anvil_call(rpc, "anvil_setBalance", json::array({to.hex(), wei.to_quantity()})).status();
}

namespace {

constexpr std::uint64_t kAdminCallGas = 2'000'000;

// An admin call on the stand-ins of a running local chain, as the admin
// (anvil_impersonateAccount), seen through to its receipt.
Status impersonated_admin_call(const std::string& rpc_url, const Bytes& data, std::string_view what) {
  RpcOptions o;
  o.url = rpc_url;
  RpcClient rpc(o);
  EthClient eth(rpc);
  CRUCIBLE_RETURN_IF_ERROR(anvil_call(rpc, "anvil_impersonateAccount", json::array({kAdminAddress})).status());
  auto sent =
      rpc.call("eth_sendTransaction", json::array({{{"from", kAdminAddress},
                                                    {"to", Address::from_low_u64(standins::kStateAddress).hex()},
                                                    // anvil's own estimate falls short for some admin
                                                    // calls (a refund at the end): a fixed, ample limit.
                                                    {"gas", U256(kAdminCallGas).to_quantity()},
                                                    {"data", to_hex(data)}}}));
  (void)rpc.call("anvil_stopImpersonatingAccount", json::array({kAdminAddress}));
  if (!sent.is_ok()) return sent.status().with_context(std::string(what));
  if (!sent->is_string()) return data_loss("eth_sendTransaction returned no transaction hash");
  CRUCIBLE_ASSIGN_OR_RETURN(Hash32 tx, from_hex_fixed<32>(sent->get<std::string>()));
  for (int i = 0; i < 600; ++i) {  // a minute at most: blocks come every few seconds at worst
    CRUCIBLE_ASSIGN_OR_RETURN(auto receipt, eth.receipt(tx));
    if (receipt) {
      if (!receipt->success) {
        auto reason =
            eth.call(Address::from_low_u64(standins::kStateAddress), data, Address::parse(kAdminAddress).value());
        return failed_precondition("{} reverted: {}", what,
                                   reason.is_ok() ? std::string("no reason") : reason.status().message());
      }
      return Status::ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return deadline_exceeded("{} was sent but not mined within a minute", what);
}

}  // namespace

Status local_set_stake(const std::string& rpc_url, std::uint16_t netuid, std::uint16_t uid, std::uint64_t stake,
                       bool until_permit) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes data, abi::encode_call("setStake(uint16,uint16,uint64)",
                                                         {Value::uint(netuid), Value::uint(uid), Value::uint(stake)}));
  CRUCIBLE_RETURN_IF_ERROR(impersonated_admin_call(rpc_url, data, "setStake"));
  if (!until_permit) return Status::ok();
  return mine_to_epoch(rpc_url, netuid);
}

Status local_mine_to_next_epoch(const std::string& rpc_url, std::uint16_t netuid) {
  // Refuse any node but anvil before mining: anvil_mine would fail anyway.
  RpcOptions o;
  o.url = rpc_url;
  RpcClient rpc(o);
  CRUCIBLE_RETURN_IF_ERROR(anvil_call(rpc, "anvil_nodeInfo", json::array()).status());
  return mine_to_epoch(rpc_url, netuid);
}

Status local_set_hyperparameter(const std::string& rpc_url, std::uint16_t netuid, std::string_view name,
                                std::uint64_t value) {
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes data,
                            abi::encode_call("setHyperparameter(uint16,string,uint64)",
                                             {Value::uint(netuid), Value::string(name), Value::uint(value)}));
  return impersonated_admin_call(rpc_url, data, fmt::format("setHyperparameter {}", name));
}

}  // namespace crucible::chain
