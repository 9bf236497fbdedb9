// `crucible status --config F [--key KEYFILE | --uid N] [--api URL]`: one uid
// as its operator needs to see it (issue: operators). From the chain:
// registration, stake, permit, store location; from the store: readable,
// the last windows' commitments and packets; from a validator's score API:
// the last window judged (on time or why not), sync, score and weight, and
// in words which factor holds a zero score at zero and what to do.
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "crucible/chain/evm_chain.h"
#include "crucible/chain/keystore.h"
#include "crucible/chain/substrate.h"
#include "crucible/cli/commands.h"
#include "crucible/cli/node_config.h"
#include "crucible/cli/node_io.h"
#include "crucible/cli/scores.h"
#include "crucible/cli/status.h"
#include "crucible/protocol/object_keys.h"
#include "crucible/protocol/peers.h"
#include "crucible/protocol/window_clock.h"
#include "crucible/storage/peer_location.h"

namespace crucible::cli {
namespace {

using nlohmann::json;

struct StatusArgs {
  CommonFlags common;
  std::string key_file;
  int uid = -1;
  std::string api = "http://127.0.0.1:8080";
};

// How many recent windows of the store are looked at.
constexpr std::uint64_t kRecentWindows = 3;

int fail(const Status& st) {
  fmt::print(stderr, "crucible status: {}\n", st.message());
  return kExitFailure;
}

void line(std::string_view what, const std::string& value) { fmt::print("  {:<14}{}\n", what, value); }

void show_store(const std::string& location_text, const NodeConfig& config, const protocol::WindowClock& clock,
                std::uint64_t head) {
  auto location = storage::decode_location(location_text);
  if (!location.is_ok()) {
    line("store", fmt::format("the location on chain is unreadable: {}", location.status().message()));
    return;
  }
  line("store", location->url + " (committed on chain)");
  auto store = protocol::default_store_opener(peer_policy(config, config.storage.retry_policy().deadline))(*location);
  if (!store.is_ok()) {
    line("readable", fmt::format("no: {}", store.status().message()));
    return;
  }
  const std::uint64_t current = clock.window_of(head);
  bool answered = false;
  std::optional<std::uint64_t> last_packet;
  for (std::uint64_t w = current + 1; w-- > 0 && current - w <= kRecentWindows;) {
    auto packet = (*store)->head(protocol::keys::gradient(w));
    auto commitment = (*store)->head(protocol::keys::commitment(w));
    for (const auto* r : {&packet, &commitment}) {
      answered = answered || r->is_ok() || r->status().code() == StatusCode::kNotFound;
    }
    if (packet.is_ok() && !last_packet) last_packet = w;
  }
  line("readable", answered ? "yes" : "no: the store did not answer");
  line("last upload", last_packet ? fmt::format("window {} (packet present)", *last_packet)
                                  : fmt::format("none in the last {} windows", kRecentWindows + 1));
}

// The score API's view of the uid.
void show_scores(const StatusArgs& a, std::uint16_t uid, bool permit) {
  const std::string base = a.api;
  auto health = http_get(base + "/healthz", 5.0);
  if (!health.is_ok()) {
    line("score API", fmt::format("{}: unreachable ({})", base, health.status().message()));
    return;
  }
  const json h = json::parse(*health, nullptr, false);
  line("score API", fmt::format("{} (last committed window {})", base,
                                h.is_object() && h.contains("window") ? h["window"].dump() : "?"));
  if (permit) {
    auto w = http_get(base + "/v1/weights", 5.0);
    const json posted = w.is_ok() ? json::parse(*w, nullptr, false) : json();
    line("weights", posted.is_object()
                        ? fmt::format("last post for window {} ({}, tx {})", posted.value("window", json()).dump(),
                                      posted.value("status", "?"), posted.value("tx", "?"))
                        : "none posted yet");
  }
  auto m = http_get(fmt::format("{}/v1/miners/{}", base, uid), 5.0);
  if (!m.is_ok()) {
    line("score", fmt::format("none from this validator ({})", m.status().message()));
    return;
  }
  const json j = json::parse(*m, nullptr, false);
  if (!j.is_object() || !j.contains("score") || !j["score"].is_object()) {
    line("score", "the score API's answer is not a /v1/miners/{uid} record");
    return;
  }
  const json& s = j["score"];
  const json hist = j.value("history", json::array());
  if (hist.is_array() && !hist.empty() && hist.back().is_object()) {
    const json& last = hist.back();
    const std::string verdict =
        last.contains("reason") ? fmt::format("rejected: {} ({})", last.value("reason", ""), last.value("detail", ""))
                                : "valid, on time";
    line("last judged", fmt::format("window {}: {}", last.value("window", 0), verdict));
    if (last.contains("steps_behind") && last["steps_behind"].is_number()) {
      line("steps behind", fmt::format("{:g}", last["steps_behind"].get<double>()));
    }
  }
  line("score", fmt::format("final {:.6f}, weight {:.4f}", s.value("final", 0.0), s.value("weight", 0.0)));
  line("factors", fmt::format("evidence {:.3f}, trust {:.3f} ({}), sync {:.3f}, penalty {:.3f}{}",
                              s.value("evidence", 0.0), s.value("trust", 0.0),
                              s.contains("trust_z") && s["trust_z"].is_number()
                                  ? fmt::format("own-data z {:.2f}", s["trust_z"].get<double>())
                                  : fmt::format("bma {:.3f}", s.value("bma", 0.0)),
                              s.value("sync", 0.0), s.value("penalty", 0.0),
                              s.value("zeroed", false) ? ", zeroed (last evaluation invalid)" : ""));
  auto why = explain_zero(*m);
  if (!why.is_ok() || why->empty()) return;
  fmt::print("\nwhy the score is 0:\n");
  for (const auto& f : *why) fmt::print("  - {}: {}\n    what to do: {}\n", f.factor, f.why, f.todo);
}

int status(const StatusArgs& a, char** envp) {
  NodeConfig config;
  if (Status st = load_node_config(Role::kAny, a.common, envp, config); !st.is_ok()) return fail(st);
  if ((a.uid < 0) == a.key_file.empty()) return fail(invalid_argument("give --key or --uid (one of them)"));
  auto chain = chain::EvmChain::connect(chain::to_evm_options(config.chain), std::nullopt);
  if (!chain.is_ok()) return fail(chain.status());
  auto mg = (*chain)->metagraph(config.chain.netuid);
  if (!mg.is_ok()) return fail(mg.status());
  std::optional<std::uint16_t> uid;
  if (a.uid >= 0) uid = static_cast<std::uint16_t>(a.uid);
  if (!a.key_file.empty()) {
    // The keystore names its address: no password needed.
    auto text = chain::read_secret_file(a.key_file);
    auto address = text.is_ok() ? chain::keystore_address(*text) : Result<chain::Address>(text.status());
    if (!address.is_ok()) return fail(address.status().with_context(a.key_file));
    const chain::Hash32 hotkey = chain::substrate::mirror_account(*address);
    for (const auto& n : mg->neurons)
      if (n.hotkey == hotkey) uid = n.uid;
    if (!uid) {
      fmt::print("{} is not registered on netuid {}\n  what to do: crucible chain register --key {}\n",
                 address->checksum(), config.chain.netuid, a.key_file);
      return kExitFailure;
    }
  }
  const chain::Neuron* n = nullptr;
  for (const auto& x : mg->neurons)
    if (x.uid == *uid) n = &x;
  if (n == nullptr) {
    fmt::print("uid {} is not registered on netuid {}\n", *uid, config.chain.netuid);
    return kExitFailure;
  }
  const protocol::WindowClock clock(config.protocol);
  fmt::print("uid {} on netuid {}, block {} (window {})\n", *uid, config.chain.netuid, mg->block,
             clock.window_of(mg->block));
  line("hotkey", chain::substrate::ss58(n->hotkey));
  line("stake", fmt::format("{:.9f} TAO", static_cast<double>(n->stake) / 1e9));
  line("permit", n->validator_permit ? "yes: a validator; its weights count"
                                     : "no: as a validator its weights would not count "
                                       "(crucible chain stake --uid UID --amount TAO --permit on the local chain)");
  auto location = (*chain)->commitment(config.chain.netuid, *uid);
  if (!location.is_ok()) {
    line("store", fmt::format("cannot read the commitment: {}", location.status().message()));
  } else if (!*location) {
    line("store", "no location committed: the node publishes it when it starts");
  } else {
    show_store(**location, config, clock, mg->block);
  }
  show_scores(a, *uid, n->validator_permit);
  return kExitOk;
}

}  // namespace

void add_status_command(CLI::App& app, int& exit_code, char** envp) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* s = app.add_subcommand(
      "status", "One uid from the chain, its store and a validator's score API; why its score is 0, if it is");
  add_common_flags(*s, args->common);
  s->add_option("-k,--key", args->key_file, "Keystore of the node (its address is read; no password needed)");
  s->add_option("--uid", args->uid, "Or the uid")->check(CLI::Range(0, 65535));
  s->add_option("--api", args->api, "A validator's score API")->capture_default_str();
  s->callback([args, &exit_code, envp] { exit_code = status(*args, envp); });
}

}  // namespace crucible::cli
