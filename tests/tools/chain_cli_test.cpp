// `crucible chain up` through the real binary: a usable local chain, and a
// clean stop on SIGINT.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <csignal>
#include <regex>

#include <unistd.h>
#include "crucible/chain/abi.h"
#include "crucible/chain/eth.h"
#include "crucible/chain/local_chain.h"
#include "crucible/chain/rpc_client.h"

#include <fmt/format.h>

#include "crucible/chain/evm_chain.h"
#include "support/process.h"
#include "support/scripted_http.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using ::testing::HasSubstr;

// `crucible chain up` in dir, automining; the child and its RPC URL ("" if it did not come up).
std::pair<std::unique_ptr<testing::Child>, std::string> chain_up(const testing::TempDir& dir,
                                                                 std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {testing::bin("crucible"), "chain", "up",    "--port",           "0",
                                   "--block-time",           "0",     "--dir", dir.path().string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto up = std::make_unique<testing::Child>(argv);
  std::string out = up->read_until("Ctrl-C stops it.", 20'000);
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("rpc_url +(http://127\\.0\\.0\\.1:[0-9]+)"))) {
    ADD_FAILURE() << out;
    return {std::move(up), ""};
  }
  return {std::move(up), m[1]};
}

// Dev account 1 of anvil's standard mnemonic.
constexpr const char* kDevKey1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

// Dev account 1 as a keystore in dir (password "pw"), imported by the CLI; "" on failure.
std::string import_dev_key(const testing::TempDir& dir) {
  std::string key = dir.write("k.hex", kDevKey1);
  chmod(key.c_str(), 0600);
  const std::string ks = (dir.path() / "ks.json").string();
  auto r = testing::run_process(
      {testing::bin("crucible"), "wallet", "import", "--private-key-file", key, "--out", ks, "--scrypt-n", "1024"},
      {{"CRUCIBLE_WALLET_PASSWORD", "pw"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? ks : std::string();
}

TEST(ChainUp, ServesTheStandInsAndStopsOnCtrlC) {
  testing::TempDir dir;
  testing::Child up({testing::bin("crucible"), "chain", "up", "--port", "0", "--block-time", "0", "--netuid", "3",
                     "--dir", dir.path().string()});
  std::string out = up.read_until("Ctrl-C stops it.", 20'000);
  ASSERT_THAT(out, HasSubstr("local chain ready")) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("rpc_url +(http://127\\.0\\.0\\.1:[0-9]+)")));
  EXPECT_THAT(out, HasSubstr("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266  (stand-in admin)"));

  chain::RpcOptions o;
  o.url = m[1];
  chain::RpcClient rpc(o);
  chain::EthClient eth(rpc);
  EXPECT_EQ(eth.chain_id().value(), chain::kLocalChainId);
  // The subnet exists and is empty; another netuid does not (its version key reverts).
  auto call = chain::abi::encode_call("getUidCount(uint16)", {chain::abi::Value::uint(3)}).value();
  auto count = eth.call(chain::Address::from_low_u64(0x802), call);
  ASSERT_TRUE(count.is_ok()) << count.status();
  EXPECT_EQ(to_hex(*count, false), std::string(64, '0'));
  auto unknown = chain::abi::encode_call("getWeightsVersionKey(uint16)", {chain::abi::Value::uint(4)}).value();
  EXPECT_THAT(eth.call(chain::Address::from_low_u64(0x803), unknown).status().message(), HasSubstr("SubnetNotExists"));

  up.signal(SIGINT);
  EXPECT_EQ(up.wait(10'000), 0);
  EXPECT_THAT(up.read_until("local chain stopped", 1'000), HasSubstr("local chain stopped"));
  o.call_timeout = std::chrono::milliseconds(500);
  chain::RpcClient after(o);
  EXPECT_FALSE(after.call("eth_chainId").is_ok());  // anvil went with it
}

TEST(ChainUp, RegisterAndMetagraphCommandsWorkAgainstIt) {
  testing::TempDir dir;
  auto [up, url] = chain_up(dir);
  ASSERT_FALSE(url.empty());
  const std::string ks = import_dev_key(dir);
  ASSERT_FALSE(ks.empty());
  std::map<std::string, std::string> pw = {{"CRUCIBLE_WALLET_PASSWORD", "pw"}};
  auto mirror = testing::run_process({testing::bin("crucible"), "wallet", "address", "--mirror", ks});
  std::smatch ss;
  ASSERT_TRUE(std::regex_search(mirror.out, ss, std::regex("mirror ss58 +(5[1-9A-HJ-NP-Za-km-z]{47})"))) << mirror.out;

  auto reg = testing::run_process({testing::bin("crucible"), "chain", "register", "--key", ks, "--set",
                                   "chain.rpc_url=" + url, "--set", "chain.chain_id=31337"},
                                  pw);
  EXPECT_EQ(reg.exit_code, 0) << reg.err;
  EXPECT_THAT(reg.out, HasSubstr("registered 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 on netuid 1 as uid 0"));
  auto again = testing::run_process(
      {testing::bin("crucible"), "chain", "register", "--key", ks, "--set", "chain.rpc_url=" + url}, pw);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("HotKeyAlreadyRegisteredInSubNet"));

  auto mg = testing::run_process({testing::bin("crucible"), "chain", "metagraph", "--set", "chain.rpc_url=" + url});
  EXPECT_EQ(mg.exit_code, 0) << mg.err;
  EXPECT_THAT(mg.out, HasSubstr("netuid 1 at block"));
  EXPECT_THAT(mg.out, HasSubstr(std::string(ss[1])));  // uid 0's hotkey is the key's mirror account

  auto wrong = testing::run_process(
      {testing::bin("crucible"), "chain", "metagraph", "--set", "chain.rpc_url=" + url, "--set", "chain.chain_id=964"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.err, HasSubstr("chain 31337, but chain 964 was configured"));
}

// A brand-new wallet on the local chain, by the CLI alone: funded for gas,
// registered, then given stake and a validator permit.
TEST(ChainUp, FundAndStakeMakeANewWalletAValidator) {
  testing::TempDir dir;
  auto [up, url] = chain_up(dir);
  ASSERT_FALSE(url.empty());
  std::map<std::string, std::string> pw = {{"CRUCIBLE_WALLET_PASSWORD", "pw"}};
  const std::string ks = (dir.path() / "new.json").string();
  ASSERT_EQ(testing::run_process({testing::bin("crucible"), "wallet", "new", "--out", ks, "--scrypt-n", "1024"}, pw)
                .exit_code,
            0);
  auto broke = testing::run_process(
      {testing::bin("crucible"), "chain", "register", "--key", ks, "--set", "chain.rpc_url=" + url}, pw);
  EXPECT_EQ(broke.exit_code, 1);  // no tokens for gas yet
  EXPECT_THAT(broke.err, HasSubstr("cannot pay for the transaction"));
  EXPECT_THAT(broke.err, HasSubstr("crucible chain fund --key"));  // what to do about it

  auto fund = testing::run_process(
      {testing::bin("crucible"), "chain", "fund", "--key", ks, "--amount", "5", "--set", "chain.rpc_url=" + url});
  ASSERT_EQ(fund.exit_code, 0) << fund.err;
  EXPECT_THAT(fund.out, HasSubstr("now holds 5 tokens"));
  auto reg = testing::run_process(
      {testing::bin("crucible"), "chain", "register", "--key", ks, "--set", "chain.rpc_url=" + url}, pw);
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  EXPECT_THAT(reg.out, HasSubstr("as uid 0"));

  auto stake = testing::run_process({testing::bin("crucible"), "chain", "stake", "--uid", "0", "--amount", "1000",
                                     "--permit", "--set", "chain.rpc_url=" + url});
  ASSERT_EQ(stake.exit_code, 0) << stake.err;
  auto mg = testing::run_process({testing::bin("crucible"), "chain", "metagraph", "--set", "chain.rpc_url=" + url});
  ASSERT_EQ(mg.exit_code, 0) << mg.err;
  EXPECT_THAT(mg.out, ::testing::ContainsRegex("1000\\.000000000 +yes"));

  // Against something that is not anvil: a clear refusal.
  auto not_anvil =
      testing::run_process({testing::bin("crucible"), "chain", "fund", "--to",
                            "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "--set", "chain.rpc_url=http://127.0.0.1:9"});
  EXPECT_NE(not_anvil.exit_code, 0);
}

// --state: what happened on the chain is there after a restart; without it, nothing is.
TEST(ChainUp, StateFileKeepsTheChainAcrossARestart) {
  testing::TempDir dir;
  const std::string state = (dir.path() / "chain/state.json").string();
  const std::string who = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
  auto balance_at = [&](const std::string& url) {
    chain::RpcOptions o;
    o.url = url;
    chain::RpcClient rpc(o);
    chain::EthClient eth(rpc);
    return eth.balance(chain::Address::parse(who).value()).value();
  };
  std::uint64_t head_before = 0;
  {
    auto [up, url] = chain_up(dir, {"--state", state});
    ASSERT_FALSE(url.empty());
    auto fund = testing::run_process(
        {testing::bin("crucible"), "chain", "fund", "--to", who, "--amount", "7", "--set", "chain.rpc_url=" + url});
    ASSERT_EQ(fund.exit_code, 0) << fund.err;
    chain::RpcOptions o;
    o.url = url;
    chain::RpcClient rpc(o);
    head_before = chain::EthClient(rpc).block_number().value();
    up->signal(SIGINT);
    ASSERT_EQ(up->wait(20'000), 0);
  }
  ASSERT_TRUE(std::filesystem::exists(state));
  auto [again, url] = chain_up(dir, {"--state", state});
  ASSERT_FALSE(url.empty());
  EXPECT_THAT(again->read_until("resumed", 100), HasSubstr("resumed"));
  EXPECT_EQ(balance_at(url), chain::U256::parse("7000000000000000000").value());
  chain::RpcOptions o;
  o.url = url;
  chain::RpcClient rpc(o);
  chain::EthClient eth(rpc);
  EXPECT_GE(eth.block_number().value(), head_before);
  // The stand-ins came back with it: the subnet answers.
  auto call = chain::abi::encode_call("getUidCount(uint16)", {chain::abi::Value::uint(1)}).value();
  EXPECT_TRUE(eth.call(chain::Address::from_low_u64(0x802), call).is_ok());
  again->signal(SIGINT);
  ASSERT_EQ(again->wait(20'000), 0);

  testing::TempDir other;
  auto [fresh, fresh_url] = chain_up(other);
  ASSERT_FALSE(fresh_url.empty());
  EXPECT_NE(balance_at(fresh_url), chain::U256::parse("7000000000000000000").value());
}

TEST(ChainUp, MissingAnvilIsAClearError) {
  testing::TempDir dir;
  auto r = testing::run_process(
      {testing::bin("crucible"), "chain", "up", "--anvil", "/nonexistent/anvil", "--dir", dir.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("anvil not found at '/nonexistent/anvil'"));
}

// `crucible chain preflight` against the local chain, in good and bad
// states, each failure with what to do.
TEST(ChainUp, PreflightChecksGoodAndBadStates) {
  testing::TempDir dir;
  auto [up, url] = chain_up(dir);
  ASSERT_FALSE(url.empty());
  const std::string ks = import_dev_key(dir);
  ASSERT_FALSE(ks.empty());
  std::map<std::string, std::string> pw = {{"CRUCIBLE_WALLET_PASSWORD", "pw"}};
  std::filesystem::create_directories(dir.path() / "store/v1");
  const std::string config = dir.write("node.toml", fmt::format(R"(
[chain]
rpc_url = "{}"
chain_id = 31337
[storage]
url = "file://{}"
peer_file_urls = true
)",
                                                                url, (dir.path() / "store").string()));
  auto crucible = [&](std::vector<std::string> args) {
    args.insert(args.begin(), testing::bin("crucible"));
    return testing::run_process(args, pw);
  };
  auto preflight = [&](std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"chain", "preflight", "--config", config, "--key", ks};
    args.insert(args.end(), extra.begin(), extra.end());
    return crucible(args);
  };

  auto unregistered = preflight();
  EXPECT_EQ(unregistered.exit_code, 1);
  EXPECT_THAT(unregistered.out, HasSubstr("[ok]   chain id               31337 (the local chain (anvil))"));
  EXPECT_THAT(unregistered.out, HasSubstr("[FAIL] registration"));
  EXPECT_THAT(unregistered.out, HasSubstr("what to do: crucible chain register --key"));

  ASSERT_EQ(crucible({"chain", "register", "--key", ks, "--config", config}).exit_code, 0);
  auto no_proxy = preflight();
  EXPECT_EQ(no_proxy.exit_code, 1);
  EXPECT_THAT(no_proxy.out, HasSubstr("[ok]   registration           uid 0"));
  EXPECT_THAT(no_proxy.out, HasSubstr("[FAIL] commitment proxy"));
  EXPECT_THAT(no_proxy.out, ::testing::ContainsRegex("\\[warn\\] commitment +none yet"));
  EXPECT_THAT(no_proxy.out, HasSubstr("[warn] validator permit"));

  auto proxy = crucible({"chain", "proxy", "--key", ks, "--config", config});
  ASSERT_EQ(proxy.exit_code, 0) << proxy.err;
  EXPECT_THAT(proxy.out, HasSubstr("as a NonTransfer proxy of"));
  auto commit = crucible({"chain", "commit", "--key", ks, "--config", config});
  ASSERT_EQ(commit.exit_code, 0) << commit.out << commit.err;
  auto stake = crucible({"chain", "stake", "--uid", "0", "--amount", "10", "--permit", "--config", config});
  ASSERT_EQ(stake.exit_code, 0) << stake.out << stake.err;
  auto good = preflight();
  EXPECT_EQ(good.exit_code, 0) << good.out;
  EXPECT_THAT(good.out, HasSubstr("[ok]   commitment proxy"));
  EXPECT_THAT(good.out, HasSubstr("[ok]   store                  reachable"));
  EXPECT_THAT(good.out, HasSubstr("[ok]   validator permit       yes"));
  EXPECT_THAT(good.out, HasSubstr("preflight passed"));

  // A stake threshold above the stake: a warning naming the chain's error.
  ASSERT_EQ(crucible({"chain", "set", "stake_threshold", "100000000000", "--config", config}).exit_code, 0);
  EXPECT_THAT(preflight().out, HasSubstr("below the threshold"));

  // The proxy removed: a failure, and how to put it back.
  ASSERT_EQ(crucible({"chain", "proxy", "--remove", "--key", ks, "--config", config}).exit_code, 0);
  auto removed = preflight();
  EXPECT_EQ(removed.exit_code, 1);
  EXPECT_THAT(removed.out, HasSubstr("[FAIL] commitment proxy"));
  EXPECT_THAT(removed.out, HasSubstr("what to do: crucible chain proxy --key"));

  // A commitment that is not a store location (any hotkey can write any text).
  {
    chain::EvmChainOptions o;
    o.rpc.url = url;
    auto raw = chain::PrivateKey::from_bytes(from_hex(kDevKey1).value());
    auto c = chain::EvmChain::connect(o, *raw);
    ASSERT_TRUE(c.is_ok());
    ASSERT_TRUE((*c)->set_commitment(1, "{not a location").is_ok());
  }
  auto garbage = preflight();
  EXPECT_EQ(garbage.exit_code, 1);
  EXPECT_THAT(garbage.out, ::testing::ContainsRegex("\\[FAIL\\] commitment +not a store location"));
  EXPECT_THAT(garbage.out, HasSubstr("[ok]   commitment proxy"));  // set_commitment put the proxy back

  // A subnet that does not exist; an endpoint that is not Bittensor (a bare anvil).
  auto other = crucible({"chain", "preflight", "--config", config, "--uid", "0", "--set", "chain.netuid=9"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.out, HasSubstr("netuid 9 does not exist"));
  const std::uint16_t port = testing::free_port();
  testing::Child bare({std::string(CRUCIBLE_SOURCE_DIR) + "/tools/node_modules/.bin/anvil", "--port",
                       std::to_string(port), "--chain-id", "945"});
  bare.read_until("Listening on", 10'000);
  auto not_bittensor = crucible({"chain", "preflight", "--config", config, "--uid", "0", "--set",
                                 fmt::format("chain.rpc_url=http://127.0.0.1:{}", port)});
  EXPECT_EQ(not_bittensor.exit_code, 1);
  EXPECT_THAT(not_bittensor.out,
              HasSubstr("[FAIL] chain id               945 (Bittensor testnet), but the config expects 31337"));
  EXPECT_THAT(not_bittensor.out, HasSubstr("[FAIL] precompiles"));
  EXPECT_THAT(not_bittensor.out, HasSubstr("not a Bittensor EVM"));
}

}  // namespace
}  // namespace crucible
