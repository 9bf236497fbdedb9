// `crucible chain up`: the local test chain (anvil + the stand-in contracts).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "crucible/chain/local_chain.h"
#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"

namespace crucible::cli {
namespace {

struct ChainUpArgs {
  std::uint16_t port = 8545;
  double block_time_s = 1.0;
  std::uint64_t chain_id = chain::kLocalChainId;
  std::uint16_t netuid = 1;
  std::string anvil;
  std::string dir = ".crucible/chain";
  std::string state;
  std::uint64_t tempo = 10;
  bool commit_reveal = false;
  std::uint64_t rate_limit = 0;
};

int chain_up(const ChainUpArgs& args) {
  // Block the stop signals so that sigwait() below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  chain::LocalChainOptions o;
  o.anvil_path = args.anvil.empty() ? find_anvil() : args.anvil;
  o.work_dir = std::filesystem::absolute(args.dir).string();
  o.port = args.port;
  o.chain_id = args.chain_id;
  o.block_time_s = args.block_time_s;
  o.netuid = args.netuid;
  o.state_file = args.state;
  o.tempo = args.tempo;
  o.commit_reveal = args.commit_reveal;
  o.rate_limit = args.rate_limit;
  auto chain = chain::LocalChain::start(o);
  if (!chain.is_ok()) {
    fmt::print(stderr, "crucible chain up: {}\n", chain.status().message());
    return kExitFailure;
  }
  fmt::print("local chain ready\n");
  if (!args.state.empty()) {
    fmt::print("  state     {} ({})\n", args.state,
               (*chain)->resumed() ? "resumed: registrations, stake and balances as they were" : "new");
  }
  fmt::print("  rpc_url   {}\n", (*chain)->url());
  fmt::print("  chain_id  {}\n", (*chain)->chain_id());
  fmt::print(
      "  netuid    {} (tempo {}; stand-in precompiles at 0x802, 0x803, 0x804, 0x807, 0x80b; "
      "commitments read at 0x...c0c0)\n",
      (*chain)->netuid(), o.tempo);
  fmt::print("  dev accounts (public test keys, funded; keys in {}/anvil-accounts.json):\n", o.work_dir);
  for (std::size_t i = 0; i < (*chain)->dev_keys().size(); ++i) {
    fmt::print("    [{}] {}{}\n", i, (*chain)->dev_keys()[i].address().checksum(), i == 0 ? "  (stand-in admin)" : "");
  }
  fmt::print("Ctrl-C stops it.\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  fmt::print(stderr, "stopping the local chain ({})\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  Status st = (*chain)->stop();
  if (!st.is_ok()) {
    fmt::print(stderr, "crucible chain up: {}\n", st.message());
    return exit_code_of(st);
  }
  fmt::print("local chain stopped\n");
  return kExitOk;
}

}  // namespace

std::string find_anvil() {
  if (const char* env = std::getenv("CRUCIBLE_ANVIL"); env != nullptr && *env != '\0') return env;
  // Next to the checkout this binary was built from: build/bin/ -> tools/node_modules/.bin/anvil.
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto candidate = exe.parent_path().parent_path().parent_path() / "tools/node_modules/.bin/anvil";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::string(CRUCIBLE_SOURCE_DIR) + "/tools/node_modules/.bin/anvil";
}

void add_chain_commands(CLI::App& app, int& exit_code, char** envp) {
  CLI::App* group = app.add_subcommand("chain", "The local test chain, and the subnet as an operator sees it");
  group->require_subcommand(1);
  auto args = std::make_shared<ChainUpArgs>();
  CLI::App* up = group->add_subcommand(
      "up", "Start anvil on 127.0.0.1 with the Bittensor stand-in contracts and funded dev accounts");
  up->add_option("--port", args->port, "RPC port (0: any free port)")->capture_default_str();
  up->add_option("--block-time", args->block_time_s, "Seconds per block (0: a block per transaction)")
      ->capture_default_str();
  up->add_option("--chain-id", args->chain_id, "Chain id")->capture_default_str();
  up->add_option("--netuid", args->netuid, "Subnet to create")->capture_default_str();
  up->add_option("--anvil", args->anvil, "anvil binary (default: $CRUCIBLE_ANVIL, else tools/node_modules/.bin/anvil)");
  up->add_option("--dir", args->dir, "Folder for anvil's log and account list")->capture_default_str();
  up->add_option("--state", args->state,
                 "Keep the chain in this file: loaded at start if it exists, saved every 5 s and on Ctrl-C "
                 "(without it the chain forgets everything when it stops)");
  up->add_option("--tempo", args->tempo, "Blocks per subnet epoch")->capture_default_str()->check(CLI::Range(1, 65535));
  up->add_flag("--commit-reveal", args->commit_reveal, "Turn commit-reveal weights on (subtensor's default)");
  up->add_option("--rate-limit", args->rate_limit, "Blocks between a uid's weight posts")->capture_default_str();
  up->callback([args, &exit_code] { exit_code = chain_up(*args); });
  add_chain_ops_commands(*group, exit_code, envp);
  add_preflight_command(*group, exit_code, envp);
}

}  // namespace crucible::cli
