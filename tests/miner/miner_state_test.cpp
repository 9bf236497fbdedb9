// The miner's state folder: generations switched atomically, a lock, EF
// buffers checked against the model.
#include "crucible/miner/miner_state.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/temp_dir.h"

namespace crucible::miner {
namespace {

chain::Hash32 h(std::uint8_t fill) {
  chain::Hash32 out{};
  out.fill(fill);
  return out;
}

TEST(StateDir, CommitsGenerationsAndLocks) {
  testing::TempDir dir;
  std::vector<TensorSpec> specs{{"w", {2, 3}}};
  {
    auto sd = StateDir::open(dir.path() / "s");
    ASSERT_TRUE(sd.is_ok()) << sd.status();
    EXPECT_EQ(StateDir::open(dir.path() / "s").status().code(), StatusCode::kFailedPrecondition);  // locked
    auto none = sd->load(specs);
    ASSERT_TRUE(none.is_ok());
    EXPECT_FALSE(none->has_value());
    MinerState st;
    st.trained_window = 4;
    st.chain.window = 3;
    st.chain.global_step = 2;
    st.chain.basis = h(7);
    st.ef = {{1, 2, 3, 4, 5, 6}};
    int writes = 0;
    ASSERT_TRUE(sd->commit(st, specs, [&](const std::filesystem::path&) {
                    ++writes;
                    return Status::ok();
                  }).is_ok());
    st.chain.global_step = 3;
    ASSERT_TRUE(sd->commit(st, specs, [&](const std::filesystem::path&) { return Status::ok(); }).is_ok());
    EXPECT_EQ(writes, 1);
    // A failed commit leaves the last good generation current.
    st.chain.global_step = 99;
    EXPECT_FALSE(sd->commit(st, specs, [](const std::filesystem::path&) { return unavailable("disk"); }).is_ok());
  }
  auto sd = StateDir::open(dir.path() / "s");  // the lock went with the first
  ASSERT_TRUE(sd.is_ok());
  auto loaded = sd->load(specs);
  ASSERT_TRUE(loaded.is_ok() && loaded->has_value()) << loaded.status();
  const MinerState& st = (*loaded)->second;
  EXPECT_EQ(st.chain.global_step, 3u);
  EXPECT_EQ(st.trained_window, 4u);
  EXPECT_EQ(st.chain.window, 3u);
  EXPECT_FALSE(st.uploaded_window.has_value());
  EXPECT_EQ(st.chain.basis, h(7));
  EXPECT_EQ(st.ef[0], (std::vector<float>{1, 2, 3, 4, 5, 6}));
  std::vector<TensorSpec> other{{"w", {3, 2}}};
  EXPECT_EQ(sd->load(other).status().code(), StatusCode::kFailedPrecondition);
}

TEST(StateDir, AStateFileWithAFieldMissingOrMistypedIsDataLossNeverAnException) {
  testing::TempDir dir;
  std::vector<TensorSpec> specs{{"w", {2}}};
  MinerState st;
  st.chain.global_step = 5;
  st.chain.basis = h(1);
  st.ef = {{1, 2}};
  {
    auto sd = StateDir::open(dir.path() / "s");
    ASSERT_TRUE(sd.is_ok());
    ASSERT_TRUE(sd->commit(st, specs, [](const std::filesystem::path&) { return Status::ok(); }).is_ok());
  }
  const auto gen = dir.path() / "s" / "gen-0" / "state.json";
  ASSERT_TRUE(std::filesystem::exists(gen));
  auto whole = nlohmann::json::parse(std::ifstream(gen));
  for (const auto& [key, bad] : std::vector<std::pair<std::string, nlohmann::json>>{{"v", "1"},
                                                                                    {"global_step", "5"},
                                                                                    {"global_step", nullptr},
                                                                                    {"inner_steps", -1},
                                                                                    {"basis", 7},
                                                                                    {"trained_window", "x"}}) {
    for (bool erase : {false, true}) {
      nlohmann::json j = whole;
      if (erase) {
        if (key == "trained_window") continue;  // optional: absent is "none yet"
        j.erase(key);
      } else {
        j[key] = bad;
      }
      std::ofstream(gen, std::ios::trunc) << j.dump();
      auto sd = StateDir::open(dir.path() / "s");
      ASSERT_TRUE(sd.is_ok());
      auto loaded = sd->load(specs);
      EXPECT_EQ(loaded.status().code(), StatusCode::kDataLoss) << key << (erase ? " erased" : " = " + bad.dump());
    }
  }
  std::ofstream(gen, std::ios::trunc) << whole.dump();
  auto sd = StateDir::open(dir.path() / "s");
  ASSERT_TRUE(sd.is_ok());
  auto loaded = sd->load(specs);
  ASSERT_TRUE(loaded.is_ok() && loaded->has_value()) << loaded.status();
  EXPECT_EQ((*loaded)->second.chain.global_step, 5u);
}

}  // namespace
}  // namespace crucible::miner
