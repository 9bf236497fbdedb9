// Every config key of every role, set once through the real loading path
// (flags over defaults): each accepts its own default value back, so no key
// refuses the value it ships with (protocol.init_seed once did).
#include "crucible/cli/node_config.h"

#include <gtest/gtest.h>

#include <limits>

namespace crucible::cli {
namespace {

TEST(NodeConfig, EveryKeyAcceptsItsOwnDefault) {
  NodeConfig defaults;
  config::Schema schema = make_schema(Role::kAny, defaults);
  CommonFlags flags;
  std::size_t keys = 0;
  for (const auto& f : schema.fields()) {
    std::string text = f.render();
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
    if (!text.empty() && text.front() == '[') continue;  // lists are not --set values
    flags.sets.push_back(f.key + "=" + text);
    ++keys;
  }
  EXPECT_GT(keys, 80u);  // the whole catalogue, not a few
  char* env[] = {nullptr};
  NodeConfig loaded;
  Status st = load_node_config(Role::kAny, flags, env, loaded);
  EXPECT_TRUE(st.is_ok()) << st;
  EXPECT_EQ(loaded.protocol.init_seed, defaults.protocol.init_seed);
  EXPECT_EQ(loaded.miner.adam_beta2, defaults.miner.adam_beta2);
  EXPECT_EQ(loaded.validator.fetch_deadline_s, defaults.validator.fetch_deadline_s);
}

TEST(NodeConfig, UnsignedKeysTakeTheirWholeRange) {
  CommonFlags flags;
  flags.sets = {"protocol.init_seed=18446744073709551615"};
  char* env[] = {nullptr};
  NodeConfig c;
  Status st = load_node_config(Role::kValidator, flags, env, c);
  ASSERT_TRUE(st.is_ok()) << st;
  EXPECT_EQ(c.protocol.init_seed, std::numeric_limits<std::uint64_t>::max());
  flags.sets = {"protocol.init_seed=-1"};
  EXPECT_FALSE(load_node_config(Role::kValidator, flags, env, c).is_ok());
}

TEST(NodeConfig, RemovedKeysAreRefused) {
  CommonFlags flags;
  flags.sets = {"protocol.validator_offset=1"};
  char* env[] = {nullptr};
  NodeConfig c;
  Status st = load_node_config(Role::kValidator, flags, env, c);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("unknown key 'protocol.validator_offset'"), std::string::npos) << st;
}

}  // namespace
}  // namespace crucible::cli
