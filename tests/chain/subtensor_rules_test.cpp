// The local chain's stand-ins refuse what subtensor refuses, with the
// error name subtensor uses (opentensor/subtensor 14bc6f9; each test names
// the source of its rule). A real anvil, the stand-in contracts, and the
// client's own encodings: what passes here is what the chain would take.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "crucible/chain/abi.h"
#include "crucible/chain/evm_chain.h"
#include "crucible/chain/local_chain.h"
#include "crucible/chain/rpc_client.h"
#include "crucible/chain/standins.h"
#include "crucible/chain/substrate.h"
#include "crucible/chain/tx_sender.h"
#include "support/temp_dir.h"

namespace crucible::chain {
namespace {

using abi::Value;
using ::testing::HasSubstr;

class SubtensorRules : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalChainOptions o;
    o.anvil_path = std::string(CRUCIBLE_SOURCE_DIR) + "/tools/node_modules/.bin/anvil";
    o.work_dir = dir.path().string();
    auto started = LocalChain::start(o);
    ASSERT_TRUE(started.is_ok()) << started.status();
    local = std::move(*started);
  }

  std::unique_ptr<EvmChain> connect(std::size_t key_index) {
    EvmChainOptions o;
    o.rpc.url = local->url();
    auto c = EvmChain::connect(o, local->dev_keys().at(key_index));
    EXPECT_TRUE(c.is_ok()) << c.status();
    return std::move(*c);
  }

  // Registers dev accounts 1..n (their mirror accounts as hotkeys): uids 0..n-1.
  void register_keys(int n) {
    for (int i = 1; i <= n; ++i) {
      auto c = connect(static_cast<std::size_t>(i));
      auto sent =
          c->register_neuron(1, substrate::mirror_account(local->dev_keys()[static_cast<std::size_t>(i)].address()));
      ASSERT_TRUE(sent.is_ok()) << sent.status();
    }
  }

  // A raw call from dev key `i` (what a hand-made or hostile client could send).
  Status send(std::size_t i, std::uint64_t to, std::string_view signature, const std::vector<Value>& args) {
    RpcOptions ro;
    ro.url = local->url();
    RpcClient rpc(ro);
    EthClient eth(rpc);
    TxSender sender(eth, local->dev_keys().at(i), local->chain_id());
    auto data = abi::encode_call(signature, args);
    if (!data.is_ok()) return data.status();
    return sender.send(Address::from_low_u64(to), *data).status();
  }

  static Value bytes_array(const Bytes& b) {
    std::vector<Value> items;
    for (auto x : b) items.push_back(Value::uint(x));
    return Value::list(std::move(items));
  }

  Hash32 hotkey(std::size_t i) const { return substrate::mirror_account(local->dev_keys()[i].address()); }

  testing::TempDir dir;
  std::unique_ptr<LocalChain> local;
};

// subnets/weights.rs check_length: at least min(n, MinAllowedWeights) weights.
TEST_F(SubtensorRules, MinAllowedWeights) {
  register_keys(3);
  ASSERT_TRUE(local->set_stake(0, 1000, true).is_ok());
  ASSERT_TRUE(local->set_hyperparameter("min_allowed_weights", 3).is_ok());
  auto v = connect(1);
  EXPECT_THAT(v->set_weights(1, {1, 2}, {1, 1}, 0).status().message(), HasSubstr("WeightVecLengthIsLow"));
  EXPECT_TRUE(v->set_weights(1, {0, 1, 2}, {0, 1, 1}, 0).is_ok());
  // A self weight is exempt.
  ASSERT_TRUE(local->mine(1).is_ok());
  EXPECT_TRUE(v->set_weights(1, {0}, {1}, 0).is_ok());
}

// max_weight_limited / check_vec_max_limited: no share above limit / 65535.
TEST_F(SubtensorRules, MaxWeightLimit) {
  register_keys(3);
  ASSERT_TRUE(local->set_stake(0, 1000, true).is_ok());
  ASSERT_TRUE(local->set_hyperparameter("max_weights_limit", 32768).is_ok());  // ~50 %
  auto v = connect(1);
  EXPECT_THAT(v->set_weights(1, {1, 2}, {3, 1}, 0).status().message(), HasSubstr("MaxWeightExceeded"));
  EXPECT_TRUE(v->set_weights(1, {1, 2}, {1, 1}, 0).is_ok());
}

// check_version_key: any key >= the subnet's (or any key when it is 0).
TEST_F(SubtensorRules, VersionKeyAtLeastTheSubnets) {
  register_keys(2);
  ASSERT_TRUE(local->set_stake(0, 1000, true).is_ok());
  ASSERT_TRUE(local->set_hyperparameter("version_key", 5).is_ok());
  auto v = connect(1);
  EXPECT_THAT(v->set_weights(1, {1}, {1}, 4).status().message(), HasSubstr("IncorrectWeightVersionKey"));
  EXPECT_TRUE(v->set_weights(1, {1}, {1}, 6).is_ok());
}

// check_weights_min_stake (lib.rs) through guards/check_weights.rs: set, commit and reveal.
TEST_F(SubtensorRules, StakeThreshold) {
  register_keys(2);
  ASSERT_TRUE(local->set_stake(0, 1000, true).is_ok());
  ASSERT_TRUE(local->set_hyperparameter("stake_threshold", 1001).is_ok());
  auto v = connect(1);
  EXPECT_THAT(v->set_weights(1, {1}, {1}, 0).status().message(), HasSubstr("NotEnoughStakeToSetWeights"));
  EXPECT_EQ(v->subnet_params(1).value().stake_threshold, 1001u);
  ASSERT_TRUE(local->set_hyperparameter("commit_reveal", 1).is_ok());
  auto c = v->make_commit(1, {1}, {1}, 0).value();
  EXPECT_THAT(v->commit_weights(c).status().message(), HasSubstr("NotEnoughStakeToSetWeights"));
  ASSERT_TRUE(local->set_stake(0, 1001, false).is_ok());
  EXPECT_TRUE(v->commit_weights(c).is_ok());
}

// epoch/run_epoch.rs: permits go to the top MaxAllowedValidators uids with
// stake, at each epoch; stake added mid-epoch counts from the next.
TEST_F(SubtensorRules, PermitsAreTheTopStakesAtEachEpoch) {
  register_keys(3);
  ASSERT_TRUE(local->set_hyperparameter("max_validators", 1).is_ok());
  ASSERT_TRUE(local->set_stake(0, 1000, true).is_ok());
  auto reader = connect(4);
  auto mg = reader->metagraph(1).value();
  EXPECT_TRUE(mg.neurons[0].validator_permit);
  EXPECT_FALSE(mg.neurons[1].validator_permit);
  EXPECT_FALSE(mg.neurons[2].validator_permit);  // no stake: no permit
  // More stake on uid 1: it takes the only permit, but only at the next epoch.
  ASSERT_TRUE(local->set_stake(1, 2000, false).is_ok());
  mg = reader->metagraph(1).value();
  EXPECT_TRUE(mg.neurons[0].validator_permit);
  EXPECT_FALSE(mg.neurons[1].validator_permit);
  EXPECT_EQ(mg.neurons[1].stake, 2000u);  // getStake: the hotkey's stake now
  ASSERT_TRUE(local->mine_to_next_epoch().is_ok());
  mg = reader->metagraph(1).value();
  EXPECT_FALSE(mg.neurons[0].validator_permit);
  EXPECT_TRUE(mg.neurons[1].validator_permit);
  auto lost = connect(1);
  EXPECT_THAT(lost->set_weights(1, {1}, {1}, 0).status().message(), HasSubstr("NeuronNoValidatorPermit"));
}

// precompiles/src/staking.rs addStake (Staking V2, 0x805): the caller's own
// TAO to a hotkey that exists; the permit follows at the next epoch.
TEST_F(SubtensorRules, AddStakeThroughStakingV2) {
  register_keys(1);
  auto v = connect(1);
  EXPECT_THAT(v->add_stake(hotkey(7), 1000, 1).status().message(), HasSubstr("HotKeyAccountNotExists"));
  EXPECT_THAT(v->add_stake(hotkey(1), 100'000'000'000'000ull, 1).status().message(),
              HasSubstr("NotEnoughBalanceToStake"));  // 100,000 TAO: more than a dev account holds
  ASSERT_TRUE(v->add_stake(hotkey(1), 5'000'000'000, 1).is_ok());
  auto mg = v->metagraph(1).value();
  EXPECT_EQ(mg.neurons[0].stake, 5'000'000'000u);
  EXPECT_FALSE(mg.neurons[0].validator_permit);
  ASSERT_TRUE(local->mine_to_next_epoch().is_ok());
  EXPECT_TRUE(v->metagraph(1).value().neurons[0].validator_permit);
}

// subnets/registration.rs do_register: the burn from the caller's balance,
// the price bump after each registration, registration switched off.
TEST_F(SubtensorRules, RegistrationCostsItsBurn) {
  auto reader = connect(9);
  const std::uint64_t burn = reader->registration_burn(1).value();
  EXPECT_GT(burn, 0u);
  ASSERT_TRUE(local->set_hyperparameter("burn_increase_mille", 2000).is_ok());
  register_keys(1);
  EXPECT_EQ(reader->registration_burn(1).value(), 2 * burn);
  ASSERT_TRUE(local->set_hyperparameter("burn", 1'000'000'000'000'000ull).is_ok());  // more than a dev account holds
  auto poor = connect(2);
  EXPECT_THAT(poor->register_neuron(1, hotkey(2)).status().message(), HasSubstr("NotEnoughBalanceToStake"));
  ASSERT_TRUE(local->set_hyperparameter("burn", 1).is_ok());
  ASSERT_TRUE(local->set_hyperparameter("registration_allowed", 0).is_ok());
  EXPECT_THAT(poor->register_neuron(1, hotkey(2)).status().message(), HasSubstr("SubNetRegistrationDisabled"));
}

// subnets/weights.rs internal_commit_weights, guards/check_weights.rs check_reveal.
TEST_F(SubtensorRules, CommitRevealByEpoch) {
  register_keys(2);
  ASSERT_TRUE(local->set_stake(0, 1000, true).is_ok());
  auto v = connect(1);
  auto c = v->make_commit(1, {0, 1}, {1, 2}, 0).value();
  EXPECT_THAT(v->commit_weights(c).status().message(), HasSubstr("CommitRevealDisabled"));
  ASSERT_TRUE(local->set_hyperparameter("commit_reveal", 1).is_ok());
  ASSERT_TRUE(local->set_hyperparameter("reveal_period", 2).is_ok());
  EXPECT_EQ(v->subnet_params(1).value().reveal_period, 2u);
  EXPECT_THAT(v->reveal_weights(c).status().message(), HasSubstr("NoWeightsCommitFound"));
  ASSERT_TRUE(v->commit_weights(c).is_ok());
  EXPECT_THAT(v->reveal_weights(c).status().message(), HasSubstr("RevealTooEarly"));
  ASSERT_TRUE(local->mine_to_next_epoch().is_ok());
  EXPECT_THAT(v->reveal_weights(c).status().message(), HasSubstr("RevealTooEarly"));  // period 2: not yet
  ASSERT_TRUE(local->mine_to_next_epoch().is_ok());
  ASSERT_TRUE(local->mine_to_next_epoch().is_ok());
  // Past its epoch: still queued, so the guard reports it as RevealTooEarly too.
  EXPECT_THAT(v->reveal_weights(c).status().message(), HasSubstr("RevealTooEarly"));

  // The rate limit applies to commits too, from LastUpdate.
  ASSERT_TRUE(local->set_hyperparameter("rate_limit", 50).is_ok());
  auto c2 = v->make_commit(1, {0, 1}, {2, 1}, 0).value();
  EXPECT_THAT(v->commit_weights(c2).status().message(), HasSubstr("CommittingWeightsTooFast"));
  ASSERT_TRUE(local->set_hyperparameter("rate_limit", 0).is_ok());
  // At most 10 unrevealed commits (the expired first one was dropped by the first of these).
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(v->commit_weights(v->make_commit(1, {1}, {1}, 0).value()).is_ok()) << i;
  EXPECT_THAT(v->commit_weights(v->make_commit(1, {1}, {1}, 0).value()).status().message(),
              HasSubstr("TooManyUnrevealedCommits"));
}

// pallets/commitments/src/lib.rs set_commitment through Proxy.proxy.
TEST_F(SubtensorRules, CommitmentsThroughTheProxy) {
  register_keys(1);
  ASSERT_TRUE(local->set_hyperparameter("tempo", 30).is_ok());  // room for a dozen transactions in one epoch
  auto node = connect(1);
  // The client's path: it adds its commitment key as a proxy, then writes.
  ASSERT_TRUE(node->set_commitment(1, std::string(384, 'a')).is_ok());
  EXPECT_EQ(node->commitment(1, 0).value(), std::optional<std::string>(std::string(384, 'a')));
  EXPECT_EQ(node->set_commitment(1, std::string(385, 'a')).status().code(), StatusCode::kInvalidArgument);
  // 3,100 bytes per epoch (at least 100 a commit): 384 x 8 = 3,072, then no more.
  ASSERT_TRUE(local->mine_to_next_epoch().is_ok());
  Status last;
  int taken = 0;
  for (int i = 0; i < 9 && last.is_ok(); ++i) {
    last = node->set_commitment(1, std::string(384, static_cast<char>('b' + i))).status();
    taken += last.is_ok();
  }
  EXPECT_EQ(taken, 8);
  EXPECT_THAT(last.message(), HasSubstr("SpaceLimitExceeded"));
  ASSERT_TRUE(local->mine_to_next_epoch().is_ok());
  EXPECT_TRUE(node->set_commitment(1, "v2 file:///x").is_ok());

  // Raw calls through the proxy precompile, as the commitment key.
  const Hash32 real = hotkey(1);
  const PrivateKey proxy_key = commitment_proxy_key(local->dev_keys()[1]);
  ASSERT_TRUE(local_fund(local->url(), proxy_key.address(), U256(1'000'000'000'000'000'000ull)).is_ok());
  RpcOptions ro;
  ro.url = local->url();
  RpcClient rpc(ro);
  EthClient eth(rpc);
  TxSender as_proxy(eth, proxy_key, local->chain_id());
  auto proxy_call = [&](const Bytes& call, std::vector<std::uint8_t> force) {
    Bytes f(force.begin(), force.end());
    auto data =
        abi::encode_call("proxyCall(bytes32,uint8[],uint8[])", {Value::word(real), bytes_array(f), bytes_array(call)});
    return as_proxy.send(Address::from_low_u64(standins::kProxyAddress), *data).status();
  };
  Bytes four = {18, 0, 1, 0, 4 << 2, 2, 'a', 2, 'b', 2, 'c', 2, 'd'};  // MaxFields is 3: a decoding error
  EXPECT_THAT(proxy_call(four, {3}).message(), HasSubstr("The raw call data not correctly encoded"));
  Bytes bigraw = {18, 0, 1, 0, 1 << 2, 136};
  for (auto b : substrate::compact(513)) bigraw.push_back(b);
  bigraw.resize(bigraw.size() + 513, 'x');
  EXPECT_THAT(proxy_call(bigraw, {3}).message(), HasSubstr("The raw call data not correctly encoded"));
  Bytes ok_bigraw = {18, 0, 1, 0, 1 << 2, 136};
  for (auto b : substrate::compact(512)) ok_bigraw.push_back(b);
  ok_bigraw.resize(ok_bigraw.size() + 512, 'y');
  ASSERT_TRUE(proxy_call(ok_bigraw, {3}).is_ok());
  EXPECT_EQ(node->commitment(1, 0).value(), std::optional<std::string>(std::string(512, 'y')));  // BigRaw decoded
  EXPECT_THAT(proxy_call(ok_bigraw, {2}).message(), HasSubstr("NotProxy"));  // not a NonCritical proxy
  // A commitment on a netuid where the hotkey is not registered.
  Bytes other = *substrate::set_commitment_call(7, "x");
  EXPECT_THAT(proxy_call(other, {3}).message(), HasSubstr("SubnetNotExists"));

  // Proxy rules (pallets/proxy/src/lib.rs add_proxy_delegate, remove_proxy_delegate).
  const Hash32 delegate = substrate::mirror_account(proxy_key.address());
  EXPECT_THAT(send(1, standins::kProxyAddress, "addProxy(bytes32,uint8,uint32)",
                   {Value::word(delegate), Value::uint(3), Value::uint(0)})
                  .message(),
              HasSubstr("Duplicate"));
  EXPECT_THAT(send(1, standins::kProxyAddress, "addProxy(bytes32,uint8,uint32)",
                   {Value::word(real), Value::uint(3), Value::uint(0)})
                  .message(),
              HasSubstr("NoSelfProxy"));
  EXPECT_THAT(send(1, standins::kProxyAddress, "addProxy(bytes32,uint8,uint32)",
                   {Value::word(delegate), Value::uint(18), Value::uint(0)})
                  .message(),
              HasSubstr("Invalid proxy type"));
  // A Staking proxy may not write commitments (its allow-list does not name them).
  ASSERT_TRUE(send(1, standins::kProxyAddress, "addProxy(bytes32,uint8,uint32)",
                   {Value::word(delegate), Value::uint(8), Value::uint(0)})
                  .is_ok());
  EXPECT_THAT(proxy_call(*substrate::set_commitment_call(1, "x"), {8}).message(), HasSubstr("CallFiltered"));
  // A removed proxy writes nothing.
  ASSERT_TRUE(node->remove_commitment_proxy().is_ok());
  EXPECT_THAT(proxy_call(*substrate::set_commitment_call(1, "x"), {3}).message(), HasSubstr("NotProxy"));
  EXPECT_THAT(node->remove_commitment_proxy().status().message(), HasSubstr("NotFound"));
  // The client puts it back when it next commits.
  EXPECT_TRUE(node->set_commitment(1, "v2 file:///y").is_ok());
  EXPECT_EQ(node->commitment(1, 0).value(), std::optional<std::string>("v2 file:///y"));

  // Only a registered hotkey may commit.
  auto stranger = connect(6);
  EXPECT_THAT(stranger->set_commitment(1, "v2 file:///z").status().message(), HasSubstr("AccountNotAllowedCommit"));
}

// precompiles/src/storage_query.rs: SubtensorModule keys only; Commitments is not authorised.
TEST_F(SubtensorRules, StorageQueryAnswersSubtensorKeysOnly) {
  register_keys(1);
  auto reader = connect(2);
  auto tempo = reader->storage(substrate::subtensor_storage_key("Tempo", 1));
  ASSERT_TRUE(tempo.is_ok()) << tempo.status();
  EXPECT_EQ(substrate::decode_storage_uint(*tempo, 2, 0).value(), 10u);
  EXPECT_TRUE(reader->storage(substrate::subtensor_storage_key("Tempo", 9)).value().empty());  // no such subnet
  auto commitments = reader->storage(substrate::commitment_storage_key(1, hotkey(1)));
  EXPECT_THAT(commitments.status().message(), HasSubstr("Invalid key"));
  // The epoch counter moves every tempo blocks.
  const std::uint64_t e = reader->subnet_epoch(1, std::nullopt).value();
  ASSERT_TRUE(local->mine(10).is_ok());
  EXPECT_EQ(reader->subnet_epoch(1, std::nullopt).value(), e + 1);
}

}  // namespace
}  // namespace crucible::chain
