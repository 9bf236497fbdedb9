// ModelChain, in process: a model of plain vectors, the lead's store on
// disk (LocalStore), sealed packets. Each desync kind leaves the model and
// its state as they were and is counted by reason.
#include "crucible/protocol/model_chain.h"

#include <cstring>

#include <gtest/gtest.h>

#include "crucible/chain/packet_signing.h"
#include "crucible/common/metrics.h"
#include "crucible/protocol/checkpoint_pointer.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/peers.h"
#include "crucible/storage/fault_store.h"
#include "crucible/storage/local_store.h"
#include "support/temp_dir.h"
#include "test_util.h"

namespace crucible::protocol {
namespace {

// theta as vectors: apply_update subtracts, load reads the f32 tensors by name.
class VectorModel final : public ChainModel {
 public:
  explicit VectorModel(std::vector<TensorSpec> specs) : specs_(std::move(specs)) {
    for (const auto& s : specs_) theta.emplace_back(static_cast<std::size_t>(s.numel()), 0.0f);
  }
  const std::vector<TensorSpec>& specs() const override { return specs_; }
  Status apply_update(const TensorValues& update, double scale) override {
    for (std::size_t t = 0; t < theta.size(); ++t) {
      for (std::size_t i = 0; i < theta[t].size(); ++i) theta[t][i] -= static_cast<float>(scale) * update[t][i];
    }
    return Status::ok();
  }
  Status load(const safetensors::File& file) override {
    for (std::size_t t = 0; t < specs_.size(); ++t) {
      const safetensors::TensorView* v = file.find(specs_[t].name);
      if (v == nullptr || v->data.size() != theta[t].size() * sizeof(float)) return invalid_argument("bad file");
      std::memcpy(theta[t].data(), v->data.data(), v->data.size());
    }
    return Status::ok();
  }
  TensorValues theta;

 private:
  std::vector<TensorSpec> specs_;
};

chain::PrivateKey key_of(std::uint8_t n) {
  std::array<std::uint8_t, 32> b{};
  b[31] = n;
  return *chain::PrivateKey::from_bytes(b);
}

double desyncs(std::string_view reason) {
  return metrics::global().value(metrics::Counter::kChainDesyncs, {{"role", "test"}, {"reason", std::string(reason)}});
}

class ModelChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = storage::LocalStore::open(dir_.path() / "lead");
    ASSERT_TRUE(s.is_ok()) << s.status();
    lead_ = std::shared_ptr<storage::ObjectStore>(std::move(*s));
  }

  ChainOptions options() const { return {protocol::OuterLr{0.5, 0, 0, 0, 0}, 1 << 20, "tiny-model", "test", true}; }

  // Publishes w's set on `prev` with one member per scale (its packet in
  // the lead's store); returns the set's bytes and the merged update.
  std::pair<Bytes, TensorValues> publish(std::uint64_t w, std::optional<std::uint64_t> prev,
                                         std::vector<float> scales) {
    AggregationSet set{w, prev, {}, {}};
    std::vector<Bytes> sealed;
    std::vector<PeerTensors> peers;
    for (std::size_t i = 0; i < scales.size(); ++i) {
      packet::Packet p = test::packet_for(specs_, scales[i]);
      p.window = w;
      p.uid = static_cast<std::uint16_t>(i + 1);
      peers.push_back({p.uid, *decode_update(p, specs_)});
      auto s = chain::seal_packet(p, key_of(static_cast<std::uint8_t>(i + 1)));
      set.uids.push_back(p.uid);
      set.digests.push_back(chain::open_packet(*s)->digest);
      sealed.push_back(*s);
    }
    std::vector<ByteSpan> spans(sealed.begin(), sealed.end());
    EXPECT_TRUE(store_set_packets(set, spans, *lead_).is_ok());
    const std::string text = encode_set(set);
    Bytes bytes(text.begin(), text.end());
    EXPECT_TRUE(lead_->put(keys::aggregate(w), bytes).is_ok());
    return {bytes, peers.empty() ? TensorValues{} : *merge_updates(peers, specs_, *host_)};
  }

  // theta after a step against before - rate * merged, every element (the
  // packets are sparse: most merged values are 0, so some must have moved).
  static void expect_step(const VectorModel& model, const TensorValues& before, const TensorValues& merged,
                          float rate) {
    std::size_t moved = 0;
    for (std::size_t t = 0; t < merged.size(); ++t) {
      for (std::size_t i = 0; i < merged[t].size(); ++i) {
        EXPECT_FLOAT_EQ(model.theta[t][i], before[t][i] - rate * merged[t][i]) << t << "," << i;
        moved += merged[t][i] != 0.0f;
      }
    }
    EXPECT_GT(moved, 0u);
  }

  // The model and state a desync must leave as they were.
  void expect_unchanged(const VectorModel& model, const TensorValues& theta, const ChainState& state,
                        const ChainState& before) {
    EXPECT_EQ(model.theta, theta);
    EXPECT_EQ(state.window, before.window);
    EXPECT_EQ(state.basis, before.basis);
    EXPECT_EQ(state.global_step, before.global_step);
    EXPECT_EQ(state.last_set, before.last_set);
  }

  testing::TempDir dir_;
  std::vector<TensorSpec> specs_{{"a", {16, 16}}, {"b", {8}}};
  std::shared_ptr<storage::ObjectStore> lead_;
  std::unique_ptr<kernels::Backend> host_ = kernels::cpu_backend(1);
};

TEST_F(ModelChainTest, AppliesTheSetThatBuildsOnTheModelsWindowAndNoOther) {
  VectorModel model(specs_);
  ChainState state;
  ModelChain chain(model, state, *host_, options());
  auto [bytes3, merged3] = publish(3, std::nullopt, {1.0f, 2.0f});
  auto applied = chain.advance(3, *lead_);
  ASSERT_TRUE(applied.is_ok()) << applied.status();
  EXPECT_FALSE(applied->has_value());
  EXPECT_EQ(state.window, 3u);
  EXPECT_EQ(state.basis, set_basis(bytes3));
  EXPECT_EQ(state.global_step, 1u);
  EXPECT_EQ(state.last_set, (std::vector<std::uint16_t>{1, 2}));
  EXPECT_EQ(state.last_aggregate, merged3);
  expect_step(model, VectorModel(specs_).theta, merged3, 0.5f);
  // A set with no members still moves the chain (an outer step of zero).
  publish(4, 3, {});
  ASSERT_FALSE(chain.advance(4, *lead_)->has_value());
  EXPECT_EQ(state.window, 4u);
  EXPECT_EQ(state.global_step, 2u);
  EXPECT_TRUE(state.last_set.empty());
  EXPECT_TRUE(state.last_aggregate.empty());
}

// The outer learning rate by samples trained (protocol.outer_lr_late): the
// set that follows late_from samples (global step × samples_per_step, 2 × 8
// here) takes the late rate, and an empty set counts as a step like any
// other, so every node switches at the same set.
TEST_F(ModelChainTest, TheOuterStepTakesTheLateRateFromItsSampleCountOn) {
  VectorModel model(specs_);
  ChainState state;
  ChainOptions o = options();
  o.outer_lr = OuterLr{0.5, 0.125, 16, 0, 0, 8};
  ModelChain chain(model, state, *host_, o);
  const TensorValues genesis = model.theta;
  auto [bytes3, merged3] = publish(3, std::nullopt, {1.0f});
  ASSERT_FALSE(chain.advance(3, *lead_)->has_value());  // global step 0 -> 1: rate 0.5
  expect_step(model, genesis, merged3, 0.5f);
  publish(4, 3, {});
  ASSERT_FALSE(chain.advance(4, *lead_)->has_value());  // 1 -> 2: empty, still a step
  const TensorValues before5 = model.theta;
  auto [bytes5, merged5] = publish(5, 4, {2.0f});
  ASSERT_FALSE(chain.advance(5, *lead_)->has_value());  // 2 -> 3: the late rate
  EXPECT_EQ(state.global_step, 3u);
  expect_step(model, before5, merged5, 0.125f);
  EXPECT_DOUBLE_EQ((OuterLr{0.7, 0, 5, 0, 0, 8}.at(9)), 0.7);  // late 0: none
}

TEST_F(ModelChainTest, EachDesyncLeavesModelAndStateAsTheyWereAndIsCounted) {
  VectorModel model(specs_);
  ChainState state;
  ModelChain chain(model, state, *host_, options());
  publish(3, std::nullopt, {1.0f});
  ASSERT_FALSE(chain.advance(3, *lead_)->has_value());
  const TensorValues theta = model.theta;
  const ChainState before = state;

  struct Case {
    std::string name;
    std::uint64_t window;
    std::function<void()> arrange;
    Desync expected;
  };
  const std::vector<Case> cases{
      {"a set built on window 4 (the model holds 3)", 5, [&] { publish(5, 4, {1.0f}); }, Desync::kOtherBasis},
      {"a fresh-model set (prev none) after 3", 6, [&] { publish(6, std::nullopt, {1.0f}); }, Desync::kOtherBasis},
      {"no set for the window", 7, [] {}, Desync::kSetMissing},
      {"a set that is not JSON", 8, [&] { ASSERT_TRUE(lead_->put(keys::aggregate(8), as_bytes("not a set")).is_ok()); },
       Desync::kSetDamaged},
      {"a set naming another window", 9,
       [&] {
         auto [bytes, merged] = publish(10, 3, {1.0f});
         ASSERT_TRUE(lead_->put(keys::aggregate(9), bytes).is_ok());
       },
       Desync::kSetDamaged},
      {"a member's packet gone", 11,
       [&] {
         publish(11, 3, {1.0f, 2.0f});
         ASSERT_TRUE(lead_->remove(keys::set_packet(11, 2)).is_ok());
       },
       Desync::kPacketMissing},
      {"a member's packet replaced", 12,
       [&] {
         publish(12, 3, {1.0f});
         auto other = lead_->get(keys::set_packet(11, 1), 1 << 20);
         ASSERT_TRUE(other.is_ok());
         ASSERT_TRUE(lead_->put(keys::set_packet(12, 1), other->data).is_ok());
       },
       Desync::kPacketMissing},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    c.arrange();
    const double counted = desyncs(to_string(c.expected));
    auto r = chain.advance(c.window, *lead_);
    ASSERT_TRUE(r.is_ok()) << r.status();
    ASSERT_TRUE(r->has_value());
    EXPECT_EQ(**r, c.expected) << to_string(**r);
    EXPECT_EQ(desyncs(to_string(c.expected)), counted + 1);
    expect_unchanged(model, theta, state, before);
  }
}

TEST_F(ModelChainTest, AStoreThatCannotBeReadIsATransientErrorNotADesync) {
  VectorModel model(specs_);
  ChainState state;
  ModelChain chain(model, state, *host_, options());
  publish(3, std::nullopt, {1.0f});
  storage::FaultOptions faults;
  faults.error_rate = 1.0;
  storage::RetryPolicy once;
  once.max_attempts = 1;
  storage::FaultInjectingStore down(lead_, faults, once);
  auto r = chain.advance(3, down);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(r.status().is_transient()) << r.status();
  EXPECT_FALSE(state.window.has_value());
  EXPECT_EQ(model.theta, VectorModel(specs_).theta);
}

TEST_F(ModelChainTest, PublishedAfterListsTheLaterWindowsInOrder) {
  VectorModel model(specs_);
  ChainState state;
  ModelChain chain(model, state, *host_, options());
  for (std::uint64_t w : {12, 3, 7}) publish(w, std::nullopt, {});
  EXPECT_EQ(*chain.published_after(*lead_, 100), (std::vector<std::uint64_t>{3, 7, 12}));
  state.window = 7;
  EXPECT_EQ(*chain.published_after(*lead_, 100), (std::vector<std::uint64_t>{12}));
  EXPECT_FALSE(chain.published_after(*lead_, 1).is_ok());  // more keys than allowed
}

TEST_F(ModelChainTest, LoadsOnlyANewerCheckpointOfItsOwnModelAndTakesItsPlaceInTheChain) {
  VectorModel model(specs_);
  ChainState state;
  ModelChain chain(model, state, *host_, options());
  EXPECT_FALSE(*chain.load_newer_checkpoint(*lead_));  // none yet
  std::vector<std::vector<float>> values{std::vector<float>(256, 0.25f), std::vector<float>(8, -1.0f)};
  std::vector<safetensors::TensorView> views;
  for (std::size_t t = 0; t < specs_.size(); ++t) {
    views.push_back({specs_[t].name, safetensors::DType::kF32, specs_[t].shape,
                     ByteSpan(reinterpret_cast<const std::uint8_t*>(values[t].data()), values[t].size() * 4)});
  }
  ASSERT_TRUE(lead_->put(keys::checkpoint(7), *safetensors::serialize(views)).is_ok());
  CheckpointPointer ptr{10, 7, keys::checkpoint(7), "other-model", test::h(9)};
  ASSERT_TRUE(lead_->put(keys::checkpoint_latest(), as_bytes(encode_checkpoint_pointer(ptr))).is_ok());
  EXPECT_EQ(chain.load_newer_checkpoint(*lead_).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(state.window.has_value());
  ptr.model = "tiny-model";
  ASSERT_TRUE(lead_->put(keys::checkpoint_latest(), as_bytes(encode_checkpoint_pointer(ptr))).is_ok());
  const double loads = metrics::global().value(metrics::Counter::kCheckpointsLoaded, {{"role", "test"}});
  ASSERT_TRUE(*chain.load_newer_checkpoint(*lead_));
  EXPECT_EQ(metrics::global().value(metrics::Counter::kCheckpointsLoaded, {{"role", "test"}}), loads + 1);
  EXPECT_EQ(model.theta, values);
  EXPECT_EQ(state.window, 10u);
  EXPECT_EQ(state.global_step, 7u);
  EXPECT_EQ(state.basis, test::h(9));
  EXPECT_FALSE(*chain.load_newer_checkpoint(*lead_));  // not newer than the model now
  // The chain goes on from the checkpoint's window.
  publish(11, 10, {1.0f});
  ASSERT_FALSE(chain.advance(11, *lead_)->has_value());
  EXPECT_EQ(state.global_step, 8u);
}

TEST_F(ModelChainTest, ReloadLastReadsTheLastSetBackAfterARestart) {
  VectorModel model(specs_);
  ChainState state;
  ModelChain chain(model, state, *host_, options());
  auto [bytes, merged] = publish(3, std::nullopt, {1.0f, 3.0f});
  ASSERT_FALSE(chain.advance(3, *lead_)->has_value());
  ChainState restarted = *ChainState::from_metadata(state.metadata());
  EXPECT_TRUE(restarted.last_set.empty());
  ModelChain again(model, restarted, *host_, options());
  again.reload_last(*lead_);
  EXPECT_EQ(restarted.last_set, state.last_set);
  EXPECT_EQ(restarted.last_aggregate, merged);
}

TEST(ChainState, MetadataRoundTripsAndAnythingMalformedIsDataLoss) {
  ChainState s;
  s.window = 41;
  s.basis = test::h(3);
  s.global_step = 17;
  auto back = ChainState::from_metadata(s.metadata());
  ASSERT_TRUE(back.is_ok()) << back.status();
  EXPECT_EQ(back->window, 41u);
  EXPECT_EQ(back->basis, test::h(3));
  EXPECT_EQ(back->global_step, 17u);
  EXPECT_FALSE(ChainState::from_metadata(ChainState{}.metadata())->window.has_value());  // genesis

  auto old = s.metadata();
  old.erase("global_step");  // a file from before the step was recorded
  EXPECT_EQ(ChainState::from_metadata(old)->global_step, 42u);
  for (auto [field, value] : std::vector<std::pair<std::string, std::string>>{{"window", "x41"},
                                                                              {"window", "-1"},
                                                                              {"window", ""},
                                                                              {"window", "41 "},
                                                                              {"global_step", "1e3"},
                                                                              {"basis", "0x12"},
                                                                              {"basis", "not hex"}}) {
    auto bad = s.metadata();
    bad[field] = value;
    auto r = ChainState::from_metadata(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << field << "=" << value;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status();
  }
  auto no_basis = s.metadata();
  no_basis.erase("basis");
  EXPECT_EQ(ChainState::from_metadata(no_basis).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace crucible::protocol
