// A small network in one process (as PCCL's end-to-end tests): two miners
// and the validator as objects, each on its own thread, sharing a FakeChain
// whose blocks the test mines, with LocalStores on disk. The miners train
// and upload inside their slots; the validator gathers, evaluates, fixes the
// sets and advances its model; the miners apply the lead's sets. On virtual
// time (support/virtual_clock.h): a 3-s window takes as long as its nodes
// compute, and a run's scores are the same on a loaded machine as on an
// idle one. Seconds, not minutes, and no binaries.
#include "validator/in_process_network.h"

#include "crucible/common/dataset.h"
#include "crucible/common/model_config.h"
#include "crucible/common/sampler.h"
#include "crucible/protocol/update.h"

namespace crucible {
namespace {

using testing_network::e2e_seed;
using testing_network::InProcessNetwork;
using testing_network::kBlocksPerWindow;
namespace fs = std::filesystem;

TEST_F(InProcessNetwork, MinersAndTheValidatorRunWindowsTogether) {
  for (std::size_t i = 0; i < miner_keys_.size(); ++i) add_miner(i, 3);
  add_validator(2);
  run();
  const std::uint64_t w0 = w0_;
  const auto& miner_uids = miner_uids_;
  auto& validator = validator_;
  // The validator processed w0 and w0+1: both miners' uploads valid, in the sets.
  expect_every_miner_valid_and_in_the_first_set(2);
  auto own = storage::LocalStore::open(dir_.path() / "validator-store");
  ASSERT_TRUE(own.is_ok());
  EXPECT_EQ(validator->model_window(), w0 + 1);
  // The set's packets were kept from the window's spool; the spool went with the window.
  for (std::uint16_t uid : miner_uids) EXPECT_TRUE((*own)->head(protocol::keys::set_packet(w0, uid)).is_ok()) << uid;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "validator-state" / "spool" / std::to_string(w0)));

  // The miners applied the lead's set of w0 (their third window waited for it).
  miners_.clear();  // releases the state folders' locks
  for (std::size_t i = 0; i < miner_keys_.size(); ++i) {
    const miner::MinerState st = miner_state(i);
    ASSERT_TRUE(st.chain.window.has_value()) << "miner " << i;
    EXPECT_GE(*st.chain.window, w0) << "miner " << i;
    EXPECT_GE(st.chain.global_step, 1u);
  }
}

// Equal work, with real training (issue #28): four miners running the same
// MinerNode on real English text (the Brown corpus, vocabulary 512, as the
// e2e networks and the demo use; the e2e networks' inner lr), the
// validator evaluating every uid every window on all of its 16 samples,
// admission as a network runs it; ten evaluated windows. Asserted: every
// miner valid and evaluated in at least eight of them, admitted at the end,
// evidence alike (the least at least 0.6 of the most), and the issue's
// band: no miner's weight below half of the four's mean. Printed: each
// one's accumulated own-data z, trust, final score and weight over the
// mean. The seed (the genesis model and the validator's private choices)
// comes from CRUCIBLE_E2E_SEED (default 1); docs/validator.md has the table
// over ten seeds (one line):
//   for s in $(seq 1 10); do CRUCIBLE_E2E_SEED=$s build/bin/network_tests
//     --gtest_filter='InProcessNetwork.FourEqualMinersShowAlikeEvidence'; done
TEST_F(InProcessNetwork, FourEqualMinersShowAlikeEvidence) {
  const std::uint64_t seed = e2e_seed();
  use_brown();
  for (std::uint32_t k : {504u, 505u}) {
    miner_keys_.push_back(testing::test_key(k));
    miner_uids_.push_back(fake_.add_neuron(miner_keys_.back()));
  }
  constexpr std::uint32_t kWindows = 10;
  for (std::size_t i = 0; i < miner_keys_.size(); ++i) add_learning_miner(i, kWindows + 1, seed, 4);
  add_learning_validator(kWindows, seed);
  run();
  const auto scores = ratings();
  const protocol::ScoringParams p;
  const auto w = validator::weights(scores, p);
  double mean = 0, least = 1, most = 0, least_weight = 1;
  for (std::uint16_t uid : miner_uids_) {
    ASSERT_TRUE(scores.count(uid)) << "uid " << uid << " was never scored";
    mean += w.at(uid) / static_cast<double>(miner_uids_.size());
    least = std::min(least, scores.at(uid).evidence);
    most = std::max(most, scores.at(uid).evidence);
  }
  for (std::uint16_t uid : miner_uids_) {
    const auto& s = scores.at(uid);
    fmt::print(
        "seed {} uid {}: evaluations {} evidence {:.3f} trust_z {:.2f} trust {:.3f} final {:.4f} "
        "weight/mean {:.3f}\n",
        seed, uid, s.evaluations, s.evidence, validator::accumulated_own_z(s), validator::trust(s, p), s.final_score,
        mean > 0 ? w.at(uid) / mean : 0.0);
    EXPECT_GE(s.evaluations, kWindows - 2) << "uid " << uid;
    EXPECT_FALSE(s.zeroed) << "uid " << uid;
    EXPECT_TRUE(validator::admitted(s, p)) << "uid " << uid;
    least_weight = std::min(least_weight, mean > 0 ? w.at(uid) / mean : 0.0);
  }
  EXPECT_GE(least, 0.6 * most) << "equal work, unequal evidence";
  EXPECT_GE(least_weight, 0.5) << "equal work, a miner below half of the mean weight";
}

// One learning network (two miners and the lead on the Brown corpus, four
// evaluated windows) in a fixture of its own, and what it ends with.
class OneLearningNetwork : public InProcessNetwork {
 public:
  struct Outcome {
    std::vector<std::pair<std::uint64_t, double>> heldout;  // window -> held-out loss
    std::map<std::uint16_t, std::string> ratings;           // uid -> its record, as stored
  };
  ~OneLearningNetwork() override { TearDown(); }
  void TestBody() override {}
  // `start_s`: where virtual time starts (Unix seconds).
  Outcome run_once(std::uint64_t seed, double start_s) {
    clock_ = testing::VirtualClock::create(start_s);
    setting_up_ = clock_->counted();
    SetUp();
    use_brown();
    constexpr std::uint32_t kWindows = 4;
    for (std::size_t i = 0; i < miner_keys_.size(); ++i) add_learning_miner(i, kWindows + 1, seed, 4);
    add_learning_validator(kWindows, seed);
    run();
    Outcome out;
    auto marks = validator_->state().scan(storage::Family::kWindowScores, validator::kProgressPrefix);
    EXPECT_TRUE(marks.is_ok()) << marks.status();
    if (!marks.is_ok()) return out;
    for (const auto& [k, v] : *marks) {
      auto r = validator::progress_from_json(nlohmann::json::parse(v.begin(), v.end()));
      EXPECT_TRUE(r.is_ok()) << k << ": " << r.status();
      if (r.is_ok() && r->heldout_loss) out.heldout.emplace_back(r->window, *r->heldout_loss);
    }
    auto rows = validator_->state().scan(storage::Family::kRatings, "uid/");
    EXPECT_TRUE(rows.is_ok()) << rows.status();
    if (!rows.is_ok()) return out;
    for (const auto& [k, v] : *rows)
      if (auto uid = validator::uid_of_rating_key(k)) out.ratings[*uid] = std::string(v.begin(), v.end());
    miners_.clear();
    validator_.reset();
    TearDown();
    return out;
  }
};

// On virtual time a network's run depends on its inputs alone: the same
// seed on two fresh networks (other folders, the clock started 1,000 s
// apart) gives every window's held-out loss and every miner's record to
// the last digit, however loaded the machine is. (Refactors of node code are
// checked against this: behaviour unchanged means these numbers unchanged.)
TEST(InProcessDeterminism, TwoRunsOfOneSeedEndAlikeToTheLastDigit) {
  OneLearningNetwork first, second;
  const double now = std::floor(unix_seconds());
  const auto a = first.run_once(e2e_seed(), now);
  const auto b = second.run_once(e2e_seed(), now + 1000);
  ASSERT_GE(a.heldout.size(), 4u);
  ASSERT_EQ(a.ratings.size(), 2u);
  EXPECT_EQ(a.heldout, b.heldout);
  EXPECT_EQ(a.ratings, b.ratings);
  for (const auto& [w, loss] : a.heldout) fmt::print("window {}: held-out loss {:.17g}\n", w, loss);
}

// Reward against effort (issue #28): three miners alike but for their inner
// steps a window (1, 2 and 4 of micro-batch 4: a quarter, half and all of
// their 16 samples), the validator evaluating each on all of its samples.
// Evidence (the gain of the update's direction at the common norm, over the
// window's best) rises with the work; the final score, which trust's noise
// can reorder between neighbours (docs/validator.md), at least from a
// quarter to all of it. Printed: each one's evidence, trust and final
// score; docs/validator.md tabulates them over seeds:
//   for s in 1 2 3; do CRUCIBLE_E2E_SEED=$s build/bin/network_tests
//     --gtest_filter='InProcessNetwork.MoreInnerStepsEarnMore'; done
// (Was the e2e EffortTest of real binaries on anvil.)
TEST_F(InProcessNetwork, MoreInnerStepsEarnMore) {
  const std::uint64_t seed = e2e_seed();
  use_brown();
  miner_keys_.push_back(testing::test_key(504));
  miner_uids_.push_back(fake_.add_neuron(miner_keys_.back()));
  constexpr std::uint32_t kWindows = 8;
  const std::uint32_t steps[] = {1, 2, 4};
  for (std::size_t i = 0; i < 3; ++i) add_learning_miner(i, kWindows + 1, seed, steps[i]);
  add_learning_validator(kWindows, seed);
  run();
  const auto scores = ratings();
  const protocol::ScoringParams p;
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(scores.count(miner_uids_[i])) << "uid " << miner_uids_[i] << " was never scored";
    const auto& s = scores.at(miner_uids_[i]);
    fmt::print(
        "seed {} inner_steps {} uid {}: evaluations {} evidence {:.3f} trust_z {:.2f} trust {:.3f} final {:.4f}\n",
        seed, steps[i], miner_uids_[i], s.evaluations, s.evidence, validator::accumulated_own_z(s),
        validator::trust(s, p), s.final_score);
  }
  const auto& quarter = scores.at(miner_uids_[0]);
  const auto& half = scores.at(miner_uids_[1]);
  const auto& all = scores.at(miner_uids_[2]);
  EXPECT_LT(quarter.evidence, half.evidence);
  EXPECT_LT(half.evidence, all.evidence);
  EXPECT_GT(all.final_score, quarter.final_score);
}

// A miner of two ranks (issue #27): miner 0 is rank 0 of a group whose
// rank 1 is a worker on another thread (as `crucible-miner --ranks 2`
// launches it), with AdamW's state sharded over the two (ZeRO-1); miner 1
// trains alone. The validator finds both miners' uploads valid in every
// window and merges them; the worker stops when rank 0 does.
TEST_F(InProcessNetwork, AMinerOfTwoRanksUploadsWhatTheValidatorAccepts) {
  if (!miner::RankGroup::available()) GTEST_SKIP() << "this libtorch has no c10d with Gloo";
  const std::string store = fmt::format("127.0.0.1:{}", testing::free_port());
  miner::MinerOptions worker_options;
  Status worker = internal_error("not run");
  std::thread rank1;
  add_miner(0, 3, nullptr, [&](miner::MinerNodeOptions& mo) {
    mo.miner.ranks = 2;
    mo.miner.rank_store = store;
    mo.miner.rank_timeout_s = 30;
    mo.miner.shard_optimizer = true;
    worker_options = mo.miner;
    rank1 = std::thread([&, mo] {
      worker = miner::run_rank_worker(mo.miner, mo.model, miner::RankLayout{1, 2, store, 30});
    });
  });
  add_miner(1, 3);
  add_validator(2);
  run();
  miners_.clear();  // rank 0 has stopped (and told its worker)
  rank1.join();
  EXPECT_TRUE(worker.is_ok()) << worker;
  expect_every_miner_valid_and_in_the_first_set(2);
}

// One miner on `tiny` (the real preset, ~1M parameters) for two windows;
// the test plays the lead, publishing the first window's set (the miner's
// packet alone) once it is uploaded. Both packets are signed by the miner's
// key for its uid and window, within the size budget, with the sample
// digest a validator recomputes; the second starts from the model the set
// made, and the state folder says so. (Was the e2e MinerNodeTest of the
// same name; the binary's start, keystore and config files are exercised by
// every e2e network.)
TEST_F(InProcessNetwork, TrainsTwoWindowsUploadsSignedPacketsAndAppliesTheAggregate) {
  constexpr std::uint32_t kSamples = 16;
  auto tiny = model::load_model_config(std::string(CRUCIBLE_SOURCE_DIR) + "/configs/models/tiny.toml");
  ASSERT_TRUE(tiny.is_ok()) << tiny.status();
  model_ = *tiny;
  data_dir_ = testing::prepare_brown(dir_.path() / "brown");
  auto lead = lead_store();
  ASSERT_NE(lead, nullptr);
  add_miner(0, 2, nullptr, [&](miner::MinerNodeOptions& mo) {
    mo.protocol.samples_per_window = kSamples;
    mo.miner.inner_steps = 3;
    mo.miner.micro_batch = 4;
    mo.miner.aggregate_wait_s = 8.0;
  });
  auto own = storage::LocalStore::open(dir_.path() / "miner0-store");
  ASSERT_TRUE(own.is_ok());
  std::atomic<bool> done{false};
  std::thread play_lead([&, t = clock_->counted()] {  // the set of w0, as soon as w0's packet is there
    while (!(*own)->head(protocol::keys::gradient(w0_)).is_ok() &&
           clock_->sleep(std::chrono::milliseconds(100), done)) {
    }
    auto packet = (*own)->get(protocol::keys::gradient(w0_), 1 << 30);
    if (!packet.is_ok()) return;
    auto opened = chain::open_packet(packet->data);
    ASSERT_TRUE(opened.is_ok()) << opened.status();
    protocol::AggregationSet set{w0_, std::nullopt, {miner_uids_[0]}, {opened->digest}};
    ASSERT_TRUE(protocol::store_set_packets(set, {packet->data}, *lead).is_ok());
    ASSERT_TRUE(lead->put(protocol::keys::aggregate(w0_), as_bytes(protocol::encode_set(set))).is_ok());
  });
  run();
  done = true;
  play_lead.join();

  auto dataset = data::Dataset::open(data_dir_.string());
  ASSERT_TRUE(dataset.is_ok());
  std::vector<chain::Hash32> model_digests;
  for (std::uint64_t w : {w0_, w0_ + 1}) {
    auto fetched = (*own)->get(protocol::keys::gradient(w), 1 << 30);
    ASSERT_TRUE(fetched.is_ok()) << "window " << w << ": " << fetched.status();
    auto opened = chain::open_packet(fetched->data);
    ASSERT_TRUE(opened.is_ok()) << opened.status();
    EXPECT_EQ(opened->signer, miner_keys_[0].address());
    EXPECT_EQ(opened->packet.window, w);
    EXPECT_EQ(opened->packet.uid, miner_uids_[0]);
    std::vector<protocol::TensorSpec> specs;
    std::int64_t params = 0;
    for (const auto& t : opened->packet.tensors) {
      specs.push_back({t.name, t.shape});
      params += specs.back().numel();
    }
    EXPECT_EQ(params, model_.num_parameters());
    EXPECT_EQ(specs.front().name, "model.embed_tokens.weight");
    EXPECT_TRUE(protocol::decode_update(opened->packet, specs).is_ok());
    // The size budget: at most 0.03 bytes per parameter per window.
    EXPECT_LE(static_cast<double>(fetched->data.size()) / static_cast<double>(params), 0.03)
        << fetched->data.size() << " bytes for " << params << " parameters";
    // The sample digest is what a validator recomputes from the assignment.
    auto idx = assign_samples(miner_uids_[0], w, dataset->num_samples(model_.seq_len), kSamples);
    ASSERT_TRUE(idx.is_ok());
    std::vector<std::uint64_t> ids;
    for (auto i : *idx) ids.push_back(dataset->sample_id(i, model_.seq_len));
    EXPECT_EQ(opened->packet.sample_digest, data::sample_digest(ids));
    EXPECT_TRUE((*own)->head(protocol::keys::fingerprint(w)).is_ok()) << "window " << w;
    EXPECT_EQ(opened->packet.global_step, w == w0_ ? 0u : 1u);
    model_digests.push_back(opened->packet.model_digest);
  }
  EXPECT_NE(model_digests[0], model_digests[1]);  // the second window started from the updated model
  miners_.clear();
  const miner::MinerState st = miner_state(0);
  EXPECT_EQ(st.chain.global_step, 1u);
  EXPECT_EQ(st.chain.window, std::optional<std::uint64_t>(w0_));
  EXPECT_EQ(st.uploaded_window, std::optional<std::uint64_t>(w0_ + 1));
}

// A set nobody can apply: miner 0 and a second validator see every peer's
// store with the copies of w0's set withdrawn, so they cannot compute that
// window's aggregate. Neither retries forever: the lead's next checkpoint
// takes their models past w0, and they go on with the sets after it.
TEST_F(InProcessNetwork, AMinerThatCannotApplyASetLoadsTheLeadsNextCheckpoint) {
  auto faults = std::make_shared<std::vector<std::shared_ptr<storage::FaultInjectingStore>>>();
  auto withdrawn = std::make_shared<std::mutex>();
  protocol::StoreOpener opener =
      [faults, withdrawn, inner = protocol::default_store_opener(testing::local_peers()),
       prefix = fmt::format("v1/set/{}/", w0_)](
          const storage::PeerLocation& location) -> Result<std::shared_ptr<storage::ObjectStore>> {
    CRUCIBLE_ASSIGN_OR_RETURN(auto store, inner(location));
    storage::FaultOptions f;
    f.hidden_prefix = prefix;
    auto wrapped = std::make_shared<storage::FaultInjectingStore>(std::move(store), f);
    std::lock_guard lock(*withdrawn);
    faults->push_back(wrapped);
    return std::shared_ptr<storage::ObjectStore>(wrapped);
  };
  add_miner(0, 4, opener);
  add_miner(1, 4);
  add_validator(3, /*checkpoint_every=*/1);
  add_validator(3, 1000, /*follower=*/true, opener);
  run();

  // The set of w0 had members (so it needed their packets), and miner 0 was refused them.
  auto own = storage::LocalStore::open(dir_.path() / "validator-store");
  ASSERT_TRUE(own.is_ok());
  auto first = (*own)->get(protocol::keys::aggregate(w0_), protocol::kMaxSetBytes);
  ASSERT_TRUE(first.is_ok()) << first.status();
  ASSERT_FALSE(protocol::decode_set(first->data)->uids.empty());
  int hidden = 0;
  for (const auto& f : *faults) hidden += f->counts().hidden;
  EXPECT_GE(hidden, 1);
  auto pointer = (*own)->get(protocol::keys::checkpoint_latest(), 1 << 20);
  ASSERT_TRUE(pointer.is_ok()) << "the lead published no checkpoint: " << pointer.status();

  // Both miners hold a model of w0 or later: miner 0, which could never
  // read w0's copies, only through a checkpoint. The follower ends on the
  // lead's model.
  miners_.clear();
  for (std::size_t i = 0; i < miner_keys_.size(); ++i) {
    const miner::MinerState st = miner_state(i);
    ASSERT_TRUE(st.chain.window.has_value()) << "miner " << i;
    EXPECT_GE(*st.chain.window, w0_) << "miner " << i;
  }
  EXPECT_EQ(follower_->model_window(), validator_->model_window());
  EXPECT_GE(follower_->model_window().value_or(0), w0_);
}

// A lead that serves garbage: malformed aggregation sets (wrong types,
// not JSON, a window that is not theirs) and a malformed checkpoint
// pointer. The miner neither stops nor stalls: it trains and uploads every
// window, and its model stays where it was.
TEST_F(InProcessNetwork, AMaliciousLeadsGarbageNeverStopsAMiner) {
  auto store = lead_store();
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> garbage{R"({"v":1,"window":"x","uids":[],"digests":[]})", "not json at all",
                                         R"({"v":1,"window":99,"prev":null,"uids":[1],"digests":["00"]})",
                                         R"({"v":1,"window":3,"prev":7,"uids":[],"digests":[]})"};
  for (std::uint64_t w = 0; w < w0_ + 4; ++w) {
    ASSERT_TRUE(store->put(protocol::keys::aggregate(w), as_bytes(garbage[w % garbage.size()])).is_ok());
  }
  ASSERT_TRUE(store->put(protocol::keys::checkpoint_latest(), as_bytes(R"({"v":1,"window":-1,"key":7})")).is_ok());
  add_miner(0, 2);
  run();
  auto own = storage::LocalStore::open(dir_.path() / "miner0-store");
  ASSERT_TRUE(own.is_ok());
  for (std::uint64_t w = w0_; w < w0_ + 2; ++w) {
    EXPECT_TRUE((*own)->head(protocol::keys::gradient(w)).is_ok()) << "no upload for window " << w;
  }
  miners_.clear();
  EXPECT_FALSE(miner_state(0).chain.window.has_value());  // nothing of the garbage was applied
}

// A lead that publishes no set, and a miner told to wait a minute for the
// last window's set (aggregate_wait_s far longer than the 3-s window): the
// miner stops waiting in time to train and commit inside every slot (the
// window's estimated end plus the slot, less its training time and a
// second for the whole-second timestamps, so the slot here is 2 s: this
// chain's blocks come every 250 ms, and a slot's real length is up to a
// second shorter than upload_slot_s). Without that bound it waits out the
// minute and misses every window after its first.
TEST_F(InProcessNetwork, AMinerStopsWaitingForTheLeadsSetInTimeForItsSlot) {
  ASSERT_NE(lead_store(), nullptr);
  add_miner(0, 4, nullptr, [](miner::MinerNodeOptions& mo) {
    mo.miner.aggregate_wait_s = 60;
    mo.protocol.upload_slot_s = 2.0;
  });
  run();
  auto own = storage::LocalStore::open(dir_.path() / "miner0-store");
  ASSERT_TRUE(own.is_ok());
  for (std::uint64_t w = w0_; w < w0_ + 4; ++w) {
    EXPECT_TRUE((*own)->head(protocol::keys::gradient(w)).is_ok()) << "no upload for window " << w;
  }
}

// A fresh miner whose lead has published a checkpoint (a model other than
// the genesis one, at global step 5) starts from it: its first packet says
// step 5, and its fingerprint reads the checkpoint's values at positions
// drawn from the checkpoint's basis. (Was the e2e MinerNodeTest of the same
// name.)
TEST_F(InProcessNetwork, AFreshMinerStartsFromTheLeadsCheckpoint) {
  auto store = lead_store();
  ASSERT_NE(store, nullptr);
  auto ckpt = model::Llama::create(model_, 99);
  const fs::path file = dir_.path() / "ckpt.safetensors";
  ASSERT_TRUE(ckpt->save(file).is_ok());
  auto bytes = files::read_file(file, 1 << 30);
  ASSERT_TRUE(bytes.is_ok());
  ASSERT_TRUE(store->put(protocol::keys::checkpoint(5), *bytes).is_ok());
  const protocol::CheckpointPointer ptr{0, 5, protocol::keys::checkpoint(5), model_.canonical(),
                                        chain::keccak256(as_bytes("set"))};
  ASSERT_TRUE(
      store->put(protocol::keys::checkpoint_latest(), as_bytes(protocol::encode_checkpoint_pointer(ptr))).is_ok());
  add_miner(0, 1);
  run();

  auto own = storage::LocalStore::open(dir_.path() / "miner0-store");
  ASSERT_TRUE(own.is_ok());
  auto gradient = (*own)->get(protocol::keys::gradient(w0_), 1 << 30);
  ASSERT_TRUE(gradient.is_ok()) << gradient.status();
  auto packet = chain::open_packet(gradient->data);
  ASSERT_TRUE(packet.is_ok()) << packet.status();
  EXPECT_EQ(packet->packet.global_step, 5u);
  auto fp_object = (*own)->get(protocol::keys::fingerprint(w0_), 1 << 20);
  ASSERT_TRUE(fp_object.is_ok()) << fp_object.status();
  auto fp = nlohmann::json::parse(fp_object->data.begin(), fp_object->data.end());
  EXPECT_EQ(fp["basis"], to_hex(ptr.basis));
  const auto& embed = ckpt->parameters()[0];
  auto positions =
      protocol::fingerprint_positions(ptr.basis, fp["uid"].get<std::uint16_t>(), embed.name, embed.tensor.numel());
  auto values = fp["values"][embed.name].get<std::vector<float>>();
  ASSERT_EQ(values.size(), positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    EXPECT_EQ(values[i], embed.tensor.view({-1})[positions[i]].item<float>()) << "position " << positions[i];
  }
  miners_.clear();
  EXPECT_EQ(miner_state(0).chain.global_step, 5u);
}

// A node whose store location does not fit the Commitments pallet (three
// Raw fields of 128 bytes) is refused at start, the limit named. (Was an
// e2e CommitRevealTest; the binaries' exit on a failed start is
// ExitCodes.EveryBinaryFollowsTheTable.)
TEST_F(InProcessNetwork, ALocationTooBigForThePalletStopsTheNodeAtStart) {
  const fs::path long_dir = dir_.path() / std::string(200, 'x') / std::string(200, 'y');
  miner::MinerNodeOptions mo = miner_options("long-miner");
  mo.storage = testing::file_store(long_dir);
  auto node = miner::MinerNode::create(mo, miner_keys_[0], testing::local_io(fake_, miner_keys_[0], long_dir));
  ASSERT_FALSE(node.is_ok());
  EXPECT_NE(node.status().message().find("a commitment on chain holds at most 384"), std::string::npos)
      << node.status();
  EXPECT_NE(node.status().message().find("3 fields of 128 bytes"), std::string::npos) << node.status();
  validator::ValidatorNodeOptions vo = validator_options("long-validator");
  vo.storage = testing::file_store(long_dir);
  auto v = validator::ValidatorNode::create(vo, validator_key_, testing::local_io(fake_, validator_key_, long_dir));
  ASSERT_FALSE(v.is_ok());
  EXPECT_NE(v.status().message().find("a commitment on chain holds at most 384"), std::string::npos) << v.status();
}

// On a commit-reveal subnet (an epoch of three windows, reveal period 1)
// the validator commits each posting epoch's weights and reveals every
// commit in its reveal epoch; stopped between a commit and its reveal, it
// reveals after the restart. None is lost, and the chain holds as many
// revealed posts as the log says. (Was the e2e CommitRevealTest; the
// contract's side is chain_tests' SubtensorRules.CommitRevealByEpoch.)
TEST_F(InProcessNetwork, EveryCommitIsRevealedInItsEpochAcrossARestart) {
  fake_.set_commit_reveal(true);
  fake_.set_tempo(3 * kBlocksPerWindow);
  auto weights_log = [](storage::StateStore& db) {
    std::vector<validator::WeightsLogEntry> out;
    auto rows = db.scan(storage::Family::kWeightsLog, "");
    EXPECT_TRUE(rows.is_ok()) << rows.status();
    if (!rows.is_ok()) return out;
    for (const auto& [k, v] : *rows) {
      auto e = validator::weights_entry_from_json(nlohmann::json::parse(v.begin(), v.end()));
      EXPECT_TRUE(e.is_ok()) << k << ": " << e.status();
      if (e.is_ok()) out.push_back(*e);
    }
    return out;
  };
  for (std::size_t i = 0; i < miner_keys_.size(); ++i) add_miner(i, 4);
  add_validator(4);
  run();
  // Its last commit is still waiting for its reveal epoch.
  auto before = weights_log(validator_->state());
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(before.back().phase, validator::WeightsPhase::kCommitted);
  EXPECT_TRUE(fake_.weights().size() < before.size()) << "every commit was revealed before the stop";

  validator_.reset();  // the restart: the same state folder, three windows more
  miners_.clear();
  for (std::size_t i = 0; i < miner_keys_.size(); ++i) add_miner(i, 3);
  add_validator(7);
  run();
  auto reader = fake_.as(validator_key_);
  const std::uint64_t now = reader->subnet_epoch(fake_.netuid(), std::nullopt).value();
  std::size_t revealed = 0;
  for (const auto& e : weights_log(validator_->state())) {
    ASSERT_TRUE(e.commit_epoch.has_value()) << "epoch " << e.epoch;
    const std::uint64_t reveal_epoch = *e.commit_epoch + 1;
    if (reveal_epoch < now) {
      EXPECT_EQ(e.phase, validator::WeightsPhase::kConfirmed) << "epoch " << e.epoch;
    }
    EXPECT_TRUE(e.phase == validator::WeightsPhase::kConfirmed || e.phase == validator::WeightsPhase::kCommitted)
        << "epoch " << e.epoch << ": " << validator::name(e.phase);
    if (e.phase == validator::WeightsPhase::kConfirmed) {
      ASSERT_TRUE(e.block.has_value());
      EXPECT_EQ(reader->subnet_epoch(fake_.netuid(), *e.block).value(), reveal_epoch) << "epoch " << e.epoch;
      ++revealed;
    }
  }
  EXPECT_GE(revealed, 2u);
  const auto posts = fake_.weights();
  EXPECT_EQ(posts.size(), revealed);
  for (const auto& p : posts) EXPECT_TRUE(p.revealed);
}

}  // namespace
}  // namespace crucible
