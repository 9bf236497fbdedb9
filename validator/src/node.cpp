#include "crucible/validator/node.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "crucible/chain/evm_chain.h"
#include "crucible/chain/packet_signing.h"
#include "crucible/chain/substrate.h"
#include "crucible/common/dataset.h"
#include "crucible/common/file_io.h"
#include "crucible/common/safetensors.h"
#include "crucible/common/log.h"
#include "crucible/common/metrics.h"
#include "crucible/common/object_keys.h"
#include "crucible/common/retry.h"
#include "crucible/common/sampler.h"
#include "crucible/kernels/aggregate.h"
#include "crucible/miner/aggregation.h"
#include "crucible/miner/fingerprint.h"
#include "crucible/miner/trainer.h"
#include "crucible/storage/peer_location.h"
#include "crucible/storage/state_store.h"
#include "crucible/storage/store_url.h"
#include "crucible/validator/gauntlet.h"
#include "crucible/validator/state.h"

namespace crucible::validator {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;



Bytes json_bytes(const json& j) {
  std::string s = j.dump();
  return Bytes(s.begin(), s.end());
}

// One uid's upload for the window, after every check.
struct Gathered {
  std::uint16_t uid = 0;
  std::string reason;  // empty: valid
  bool uploaded = false;  // an object was there (valid or not)
  std::int64_t last_modified_ms = 0;
  chain::Hash32 digest{};
  chain::Hash32 content{};  // Keccak of the tensors' payloads: the same update signed by anyone
  std::vector<kernels::CompressedTensor> tensors;
  bool valid() const { return reason.empty() && uploaded; }
};

}  // namespace

struct ValidatorNode::Impl {
  ValidatorNodeOptions o;
  chain::PrivateKey key;
  std::unique_ptr<chain::Chain> chain;
  std::shared_ptr<storage::ObjectStore> store;
  std::unique_ptr<miner::PeerDirectory> peers;
  std::unique_ptr<storage::StateStore> db;
  std::optional<data::Dataset> dataset;
  std::unique_ptr<miner::Trainer> model;  // the validator's copy of the global model
  std::map<std::uint16_t, MinerScore> scores;
  std::optional<std::uint64_t> model_window;  // last aggregate applied to `model`
  chain::Hash32 basis{};                       // Keccak of that set
  std::vector<std::vector<float>> last_aggregate;
  std::map<chain::Hash32, std::uint16_t> previous_contents;  // last window's valid updates (replays)
  std::uint16_t uid = 0;
  std::uint64_t private_seed = 0;
  ScoringParams params;

  explicit Impl(const chain::PrivateKey& k) : key(k) {}

  const std::vector<miner::TensorSpec>& specs() const { return model->specs(); }

  template <typename F>
  auto retry(std::string_view what, const std::atomic<bool>& stop, F&& f) -> decltype(f()) {
    return retry_transient(what, stop, std::forward<F>(f));
  }

  // ---- samples ------------------------------------------------------------------

  // Tokens of the first `count` samples of `who`'s assignment in window w.
  Result<std::vector<std::int64_t>> tokens_of(std::uint16_t who, std::uint64_t w, std::uint64_t count) {
    const auto L = static_cast<std::uint64_t>(o.model.seq_len);
    CRUCIBLE_ASSIGN_OR_RETURN(auto idx, dataset->assignment(who, w, o.protocol.samples_per_window, L));
    idx.resize(std::min<std::size_t>(idx.size(), count));
    return dataset->tokens(idx, L);
  }

  // ---- gather -------------------------------------------------------------------

  Gathered check_one(std::uint16_t who, const chain::Hash32& hotkey, std::uint64_t w, double slot_start,
                     const std::shared_ptr<storage::ObjectStore>& peer) {
    Gathered g;
    g.uid = who;
    auto head = peer->head(keys::gradient(w));
    if (!head.is_ok()) {
      g.reason = head.status().code() == StatusCode::kNotFound ? "missing" : "unreachable: " + head.status().to_string();
      return g;
    }
    g.uploaded = true;
    g.last_modified_ms = head->last_modified_ms;
    const double t = static_cast<double>(head->last_modified_ms) / 1000.0;
    if (t < slot_start - o.protocol.clock_skew_s) {
      g.reason = "too early: uploaded before the slot opened";
      return g;
    }
    if (t > slot_start + o.protocol.upload_slot_s + o.protocol.clock_skew_s) {
      g.reason = "too late: uploaded after the slot closed";
      return g;
    }
    auto fetched = peer->get(keys::gradient(w), o.storage.max_object_bytes);
    if (!fetched.is_ok()) {
      g.reason = "download failed: " + fetched.status().to_string();
      return g;
    }
    packet::Limits limits;
    limits.max_packet_bytes = o.storage.max_object_bytes;
    auto opened = chain::open_packet(fetched->data, limits);
    if (!opened.is_ok()) {
      g.reason = "bad packet: " + opened.status().to_string();
      return g;
    }
    g.digest = opened->digest;
    const packet::Packet& p = opened->packet;
    if (chain::substrate::mirror_account(opened->signer) != hotkey) {
      g.reason = fmt::format("signed by {}, which is not uid {}'s key", opened->signer.checksum(), who);
      return g;
    }
    if (p.uid != who || p.window != w || p.protocol_version != kProtocolVersion) {
      g.reason = fmt::format("packet names uid {} window {} protocol {}", p.uid, p.window, p.protocol_version);
      return g;
    }
    const auto L = static_cast<std::uint64_t>(o.model.seq_len);
    auto assigned = dataset->assignment(who, w, o.protocol.samples_per_window, L);
    if (!assigned.is_ok()) {
      g.reason = "cannot recompute the assignment: " + assigned.status().to_string();
      return g;
    }
    if (dataset->digest(*assigned, L) != p.sample_digest) {
      g.reason = "sample digest mismatch: not the assigned data";
      return g;
    }
    auto tensors = miner::decode_update(p, specs());
    if (!tensors.is_ok()) {
      g.reason = "does not fit the model: " + tensors.status().to_string();
      return g;
    }
    chain::Keccak256 content;
    for (const auto& t : p.tensors) content.update(t.indices).update(t.codes);
    g.content = content.finish();
    g.tensors = std::move(*tensors);
    return g;
  }

  Result<std::vector<Gathered>> gather(std::uint64_t w, const chain::Metagraph& mg, const std::atomic<bool>& stop) {
    const std::uint64_t first = (w + 1) * o.protocol.blocks_per_window;
    auto header = retry("block header", stop, [&] { return chain->block(first); });
    if (!header.is_ok()) return header.status();
    const double slot_start = static_cast<double>(header->timestamp);
    // Stores are resolved one by one (the chain client is not shared across
    // threads); downloads and checks run fetch_parallelism at a time.
    std::vector<std::pair<const chain::Neuron*, std::shared_ptr<storage::ObjectStore>>> work;
    std::vector<Gathered> out;
    for (const auto& n : mg.neurons) {
      if (n.uid == uid || n.validator_permit) continue;  // validators are not miners
      auto peer = peers->store_of(n.uid);
      if (!peer.is_ok()) {
        Gathered g;
        g.uid = n.uid;
        g.reason = "no readable store: " + peer.status().to_string();
        out.push_back(std::move(g));
        continue;
      }
      work.emplace_back(&n, *peer);
    }
    for (std::size_t i = 0; i < work.size(); i += o.validator.fetch_parallelism) {
      std::vector<std::future<Gathered>> batch;
      for (std::size_t j = i; j < std::min(work.size(), i + o.validator.fetch_parallelism); ++j) {
        batch.push_back(std::async(std::launch::async, [&, j] {
          return check_one(work[j].first->uid, work[j].first->hotkey, w, slot_start, work[j].second);
        }));
      }
      for (auto& f : batch) out.push_back(f.get());
    }
    std::sort(out.begin(), out.end(), [](const Gathered& a, const Gathered& b) { return a.uid < b.uid; });
    detect_copies(out);
    return out;
  }

  // The later of two uploads of the same update (same payload, or index
  // overlap at or above copy_overlap) is a copy; so is a repeat of one of the
  // previous window's updates.
  void detect_copies(std::vector<Gathered>& gathered) {
    std::vector<Gathered*> valid;
    for (auto& g : gathered)
      if (g.valid()) valid.push_back(&g);
    std::sort(valid.begin(), valid.end(), [](const Gathered* a, const Gathered* b) {
      return a->last_modified_ms != b->last_modified_ms ? a->last_modified_ms < b->last_modified_ms : a->uid < b->uid;
    });
    for (std::size_t i = 0; i < valid.size(); ++i) {
      if (auto it = previous_contents.find(valid[i]->content); it != previous_contents.end()) {
        valid[i]->reason = fmt::format("replay of uid {}'s update from the previous window", it->second);
        continue;
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (!valid[j]->reason.empty()) continue;
        if (valid[j]->content == valid[i]->content ||
            index_overlap(valid[i]->tensors, valid[j]->tensors) >= o.validator.copy_overlap) {
          valid[i]->reason = fmt::format("copy of uid {}'s update", valid[j]->uid);
          break;
        }
      }
    }
  }

  // ---- the aggregation set ----------------------------------------------------------

  Result<miner::AggregationSet> publish_set(std::uint64_t w, const std::vector<Gathered>& gathered) {
    // A set already published (a restart) is final.
    auto existing = store->get(keys::aggregate(w), miner::kMaxSetBytes);
    if (existing.is_ok()) {
      return miner::decode_set(std::string_view(reinterpret_cast<const char*>(existing->data.data()), existing->data.size()));
    }
    if (existing.status().code() != StatusCode::kNotFound) return existing.status();
    std::vector<const Gathered*> eligible;
    for (const auto& g : gathered) {
      if (!g.valid()) continue;
      auto it = scores.find(g.uid);
      // Never evaluated: no history yet, allowed. Evaluated with final <= 0: never.
      if (it != scores.end() && it->second.last_evaluated && it->second.final_score <= 0) continue;
      eligible.push_back(&g);
    }
    std::stable_sort(eligible.begin(), eligible.end(), [&](const Gathered* a, const Gathered* b) {
      double fa = scores.count(a->uid) ? scores[a->uid].final_score : 0;
      double fb = scores.count(b->uid) ? scores[b->uid].final_score : 0;
      return fa != fb ? fa > fb : a->uid < b->uid;
    });
    if (eligible.size() > o.protocol.aggregate_top) eligible.resize(o.protocol.aggregate_top);
    std::sort(eligible.begin(), eligible.end(), [](auto* a, auto* b) { return a->uid < b->uid; });
    miner::AggregationSet set;
    set.window = w;
    set.prev = model_window;
    for (const Gathered* g : eligible) {
      set.uids.push_back(g->uid);
      set.digests.push_back(g->digest);
    }
    CRUCIBLE_RETURN_IF_ERROR(store->put(keys::aggregate(w), as_bytes(miner::encode_set(set))));
    log::info("published aggregation set", {{"window", w}, {"uids", fmt::format("{}", fmt::join(set.uids, ","))}});
    return set;
  }

  // ---- evaluation --------------------------------------------------------------------

  Result<WindowInput> evaluate(std::uint64_t w, const std::vector<Gathered>& gathered, json& summary) {
    WindowInput in;
    in.window = w;
    std::vector<std::uint16_t> valid;
    for (const auto& g : gathered) {
      in.candidates.push_back(g.uid);
      if (g.valid()) {
        valid.push_back(g.uid);
        in.uploaded.push_back(g.uid);
      } else if (g.uploaded && g.reason.rfind("too ", 0) != 0) {
        // Uploaded something invalid: worst rank and a zero score.
        in.evaluations.push_back(Evaluation{g.uid, false, g.reason, 0, 0, 0, 0});
      }
    }
    const std::uint64_t seed = private_seed ^ (w * 0x9E3779B97F4A7C15ull);
    auto chosen = choose_for_evaluation(valid, scores, o.validator.eval_per_window, seed);
    // Clip to the median norm of the gathered updates.
    std::map<std::uint16_t, std::vector<std::vector<float>>> dense;
    std::map<std::uint16_t, double> norms;
    for (const auto& g : gathered) {
      if (!g.valid()) continue;
      std::vector<std::vector<float>> d(g.tensors.size());
      double sq = 0;
      for (std::size_t t = 0; t < g.tensors.size(); ++t) {
        d[t].assign(static_cast<std::size_t>(specs()[t].numel()), 0.0f);
        CRUCIBLE_RETURN_IF_ERROR(kernels::decompress(g.tensors[t], d[t]));
        for (float v : d[t]) sq += double(v) * v;
      }
      norms[g.uid] = std::sqrt(sq);
      if (std::find(chosen.begin(), chosen.end(), g.uid) != chosen.end()) dense[g.uid] = std::move(d);
    }
    std::vector<double> all_norms;
    for (auto& [u, n] : norms) all_norms.push_back(n);
    const double median = all_norms.empty() ? 0 : kernels::median_of(all_norms);
    const std::uint16_t rand_uid = static_cast<std::uint16_t>(60000 + SplitMix64(seed).next() % 5000);
    CRUCIBLE_ASSIGN_OR_RETURN(auto rand_tokens, tokens_of(rand_uid, w, o.validator.eval_batches));
    const auto n_rand = static_cast<std::int64_t>(rand_tokens.size() / o.model.seq_len);
    double before_rand = 0;
    if (!chosen.empty()) {
      CRUCIBLE_ASSIGN_OR_RETURN(before_rand, model->evaluate(rand_tokens, n_rand));
    }
    for (std::uint16_t who : chosen) {
      CRUCIBLE_ASSIGN_OR_RETURN(auto own, tokens_of(who, w, o.validator.eval_batches));
      const auto n_own = static_cast<std::int64_t>(own.size() / o.model.seq_len);
      CRUCIBLE_ASSIGN_OR_RETURN(double before_own, model->evaluate(own, n_own));
      const double clip = norms[who] > median && norms[who] > 0 ? median / norms[who] : 1.0;
      const double scale = o.protocol.outer_lr * o.validator.eval_lr_factor * clip;
      CRUCIBLE_ASSIGN_OR_RETURN(auto after, model->evaluate_update(dense[who], scale, own, n_own, rand_tokens, n_rand));
      Evaluation e{who, true, "", before_own, after.first, before_rand, after.second};
      if (!std::isfinite(after.first) || !std::isfinite(after.second)) {
        e.valid = false;
        e.reason = "the update makes the loss non-finite";
      }
      in.evaluations.push_back(e);
    }
    summary["evaluated"] = chosen;
    summary["random_uid"] = rand_uid;
    summary["loss_before_rand"] = before_rand;
    summary["median_norm"] = median;
    return in;
  }

  // How many windows behind a miner's fingerprint looks, against our model.
  double steps_behind(std::uint16_t who, std::uint64_t w) {
    auto peer = peers->store_of(who);
    if (!peer.is_ok()) return params.sync_max_steps;
    auto f = (*peer)->get(keys::fingerprint(w), 4 << 20);
    if (!f.is_ok()) return params.sync_max_steps;
    auto j = json::parse(f->data.begin(), f->data.end(), nullptr, false);
    if (!j.is_object() || j.value("basis", "") != to_hex(basis) || !j.contains("values") || !j["values"].is_object()) {
      return params.sync_max_steps;
    }
    double diff = 0, step = 0;
    for (std::size_t t = 0; t < specs().size(); ++t) {
      const auto& spec = specs()[t];
      auto positions = miner::fingerprint_positions(basis, spec.name, spec.numel());
      const json& v = j["values"].value(spec.name, json());
      if (!v.is_array() || v.size() != positions.size()) return params.sync_max_steps;
      for (std::size_t i = 0; i < positions.size(); ++i) {
        if (!v[i].is_number()) return params.sync_max_steps;
        double d = v[i].get<double>() - model->value(t, positions[i]);
        diff += d * d;
        if (!last_aggregate.empty()) {
          double s = o.protocol.outer_lr * last_aggregate[t][static_cast<std::size_t>(positions[i])];
          step += s * s;
        }
      }
    }
    diff = std::sqrt(diff);
    step = std::sqrt(step);
    if (diff == 0) return 0;
    return step > 0 ? diff / step : params.sync_max_steps;
  }

  // ---- applying sets -----------------------------------------------------------------

  Status apply_set(const miner::AggregationSet& set, const Bytes& set_bytes) {
    std::vector<std::vector<float>> merged;
    if (!set.uids.empty()) {
      CRUCIBLE_ASSIGN_OR_RETURN(merged, miner::fetch_and_merge(set, *peers, specs(), o.storage.max_object_bytes));
      CRUCIBLE_RETURN_IF_ERROR(model->apply_aggregate(merged, o.protocol.outer_lr));
    }
    last_aggregate = std::move(merged);
    model_window = set.window;
    basis = chain::keccak256(set_bytes);
    return Status::ok();
  }

  // A validator that is not the lead applies the lead's published set.
  Status follow_lead(std::uint64_t w, const chain::Metagraph& mg, const std::atomic<bool>& stop) {
    auto lead_uid = miner::lead_validator(mg);
    if (!lead_uid) return not_found("no lead validator");
    CRUCIBLE_ASSIGN_OR_RETURN(auto lead, peers->store_of(*lead_uid));
    const auto deadline = Clock::now() + std::chrono::duration<double>(o.validator.aggregate_wait_s);
    for (;;) {
      auto f = lead->get(keys::aggregate(w), miner::kMaxSetBytes);
      if (f.is_ok()) {
        CRUCIBLE_ASSIGN_OR_RETURN(auto set, miner::decode_set(std::string_view(
                                                reinterpret_cast<const char*>(f->data.data()), f->data.size())));
        if (set.prev != model_window) return failed_precondition("the set of {} builds on another window", w);
        CRUCIBLE_RETURN_IF_ERROR(apply_set(set, f->data));
        return save_model();
      }
      if (f.status().code() != StatusCode::kNotFound) return f.status();
      if (Clock::now() >= deadline || stop.load()) return not_found("the lead published no set for window {}", w);
      sleep_unless_stopped(std::chrono::milliseconds(250), stop);
    }
  }

  Status save_model() {
    std::map<std::string, std::string> meta{{"window", std::to_string(*model_window)}, {"basis", to_hex(basis)}};
    return model->save_model(fs::path(o.validator.state_dir) / "model.safetensors", meta);
  }

  Status checkpoint(std::uint64_t w, std::uint64_t global_step) {
    const fs::path tmp = fs::path(o.validator.state_dir) / "checkpoint.safetensors";
    CRUCIBLE_RETURN_IF_ERROR(model->save_model(tmp, {{"window", std::to_string(w)}}));
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, files::read_file(tmp, o.storage.max_object_bytes));
    CRUCIBLE_RETURN_IF_ERROR(store->put(keys::checkpoint(global_step), bytes));
    miner::CheckpointPointer ptr{w, global_step, keys::checkpoint(global_step), o.model.canonical(), basis};
    CRUCIBLE_RETURN_IF_ERROR(store->put(keys::checkpoint_latest(), as_bytes(miner::encode_checkpoint_pointer(ptr))));
    log::info("published checkpoint", {{"window", w}, {"global_step", global_step}});
    return Status::ok();
  }

  // ---- weights ----------------------------------------------------------------------

  Status put_log(std::uint64_t epoch, const json& entry) {
    storage::StateStore::Batch b;
    b.put(storage::Family::kWeightsLog, epoch_key(epoch), json_bytes(entry));
    return db->commit(std::move(b));
  }

  static json commit_json(const chain::WeightsCommit& c) {
    return {{"netuid", c.netuid}, {"uids", c.uids}, {"values", c.values}, {"salt", c.salt},
            {"version_key", c.version_key}, {"hash", to_hex(c.hash)}};
  }
  static chain::WeightsCommit commit_from(const json& j) {
    chain::WeightsCommit c;
    c.netuid = j.value("netuid", std::uint16_t{0});
    c.uids = j.value("uids", std::vector<std::uint16_t>{});
    c.values = j.value("values", std::vector<std::uint16_t>{});
    c.salt = j.value("salt", std::vector<std::uint16_t>{});
    c.version_key = j.value("version_key", std::uint64_t{0});
    if (auto h = from_hex_fixed<32>(j.value("hash", std::string())); h.is_ok()) c.hash = *h;
    return c;
  }

  // Commit-reveal subnets: each epoch reveals the previous epoch's commit,
  // then commits this one. The commit (with its salt) is logged before it is
  // sent, so a restart re-sends the same commit rather than a new one.
  Status commit_reveal_weights(std::uint64_t epoch, std::uint64_t w, const chain::SubnetParams& sp) {
    auto rows = db->scan(storage::Family::kWeightsLog, "epoch/");
    if (!rows.is_ok()) return rows.status();
    for (const auto& [k, v] : *rows) {
      json e = json::parse(v.begin(), v.end(), nullptr, false);
      const std::uint64_t e_epoch = e.value("epoch", std::uint64_t{0});
      if (e_epoch >= epoch || e.value("status", "") != "committed") continue;
      auto sent = chain->reveal_weights(commit_from(e["commit"]));
      if (sent.is_ok()) {
        e["status"] = "confirmed";
        e["tx"] = to_hex(sent->receipt.tx_hash);
        e["block"] = sent->receipt.block_number;
        log::info("revealed weights", {{"epoch", e_epoch}, {"tx", to_hex(sent->receipt.tx_hash)}});
      } else {
        e["status"] = "failed";
        e["error"] = sent.status().to_string();
        log::error("revealing weights failed", {{"epoch", e_epoch}, {"error", sent.status().to_string()}});
      }
      CRUCIBLE_RETURN_IF_ERROR(put_log(e_epoch, e));
    }
    auto logged = db->get(storage::Family::kWeightsLog, epoch_key(epoch));
    if (!logged.is_ok()) return logged.status();
    json entry;
    if (*logged) entry = json::parse(**logged, nullptr, false);
    if (entry.is_object() && entry.value("status", "") != "committing") return Status::ok();
    if (!entry.is_object()) {
      auto [uids, values] = quantize_weights(weights(scores, params));
      if (uids.empty()) return Status::ok();
      CRUCIBLE_ASSIGN_OR_RETURN(chain::WeightsCommit c, chain->make_commit(o.chain.netuid, uids, values, sp.version_key));
      entry = {{"epoch", epoch}, {"window", w}, {"uids", uids}, {"values", values}, {"status", "committing"},
               {"commit", commit_json(c)}};
      CRUCIBLE_RETURN_IF_ERROR(put_log(epoch, entry));
    }
    auto sent = chain->commit_weights(commit_from(entry["commit"]));
    if (!sent.is_ok()) {
      entry["status"] = "failed";
      entry["error"] = sent.status().to_string();
      log::error("committing weights failed", {{"epoch", epoch}, {"error", sent.status().to_string()}});
    } else {
      entry["status"] = "committed";
      entry["commit_tx"] = to_hex(sent->receipt.tx_hash);
      log::info("committed weights", {{"epoch", epoch}, {"tx", to_hex(sent->receipt.tx_hash)}});
    }
    return put_log(epoch, entry);
  }

  Status post_weights(std::uint64_t epoch, std::uint64_t w, const std::atomic<bool>& stop) {
    {
      auto sp = chain->subnet_params(o.chain.netuid);
      if (sp.is_ok() && sp->commit_reveal) return commit_reveal_weights(epoch, w, *sp);
    }
    auto logged = db->get(storage::Family::kWeightsLog, epoch_key(epoch));
    if (!logged.is_ok()) return logged.status();
    auto mg = retry("metagraph", stop, [&] { return chain->metagraph(o.chain.netuid); });
    if (!mg.is_ok()) return mg.status();
    if (*logged) {
      json entry = json::parse(**logged);
      if (entry.value("status", "") == "confirmed") return Status::ok();
      // A post in flight at a crash: it landed if our uid's last update moved past it.
      if (entry.value("status", "") == "pending" && uid < mg->neurons.size() &&
          mg->neurons[uid].last_update > entry.value("block_before", std::uint64_t{0})) {
        entry["status"] = "confirmed";
        entry["confirmed_after_restart"] = true;
        storage::StateStore::Batch b;
        b.put(storage::Family::kWeightsLog, epoch_key(epoch), json_bytes(entry));
        log::info("weights post found on chain after a restart", {{"epoch", epoch}});
        return db->commit(std::move(b));
      }
    }
    auto [uids, values] = quantize_weights(weights(scores, params));
    if (uids.empty()) {
      log::info("no positive scores yet: no weights to post", {{"epoch", epoch}});
      return Status::ok();
    }
    auto head = retry("block number", stop, [&] { return chain->block_number(); });
    if (!head.is_ok()) return head.status();
    json entry = {{"epoch", epoch}, {"window", w}, {"uids", uids}, {"values", values}, {"status", "pending"},
                  {"block_before", *head}};
    {
      storage::StateStore::Batch b;
      b.put(storage::Family::kWeightsLog, epoch_key(epoch), json_bytes(entry));
      CRUCIBLE_RETURN_IF_ERROR(db->commit(std::move(b)));
    }
    auto params_chain = chain->subnet_params(o.chain.netuid);
    const std::uint64_t version_key = params_chain.is_ok() ? params_chain->version_key : 0;
    auto sent = chain->set_weights(o.chain.netuid, uids, values, version_key);
    if (!sent.is_ok()) {
      entry["status"] = "failed";
      entry["error"] = sent.status().to_string();
      log::error("posting weights failed", {{"epoch", epoch}, {"error", sent.status().to_string()}});
    } else {
      entry["status"] = "confirmed";
      entry["tx"] = to_hex(sent->receipt.tx_hash);
      entry["block"] = sent->receipt.block_number;
      log::info("posted weights", {{"epoch", epoch}, {"uids", uids.size()}, {"tx", to_hex(sent->receipt.tx_hash)}});
    }
    storage::StateStore::Batch b;
    b.put(storage::Family::kWeightsLog, epoch_key(epoch), json_bytes(entry));
    return db->commit(std::move(b));
  }

  // ---- one window --------------------------------------------------------------------

  Status process(std::uint64_t w, const std::atomic<bool>& stop) {
    auto t0 = Clock::now();
    auto mg = retry("metagraph", stop, [&] { return chain->metagraph(o.chain.netuid); });
    if (!mg.is_ok()) return mg.status();
    CRUCIBLE_ASSIGN_OR_RETURN(std::vector<Gathered> gathered, gather(w, *mg, stop));
    const bool lead = miner::lead_validator(*mg) == uid;
    std::optional<miner::AggregationSet> set;
    if (lead) {
      CRUCIBLE_ASSIGN_OR_RETURN(miner::AggregationSet s, publish_set(w, gathered));
      set = std::move(s);
    }
    json summary = {{"window", w}, {"lead", lead}};
    CRUCIBLE_ASSIGN_OR_RETURN(WindowInput in, evaluate(w, gathered, summary));
    for (const auto& e : in.evaluations)
      if (e.valid) in.steps_behind[e.uid] = steps_behind(e.uid, w);
    score_window(scores, in, params);

    storage::StateStore::Batch batch;
    std::map<std::uint16_t, const Evaluation*> by_uid;
    for (const auto& e : in.evaluations) by_uid[e.uid] = &e;
    for (const auto& g : gathered) {
      json r = {{"uid", g.uid}, {"valid", g.valid()}, {"uploaded", g.uploaded}};
      if (!g.reason.empty()) r["reason"] = g.reason;
      if (g.uploaded) r["last_modified_ms"] = g.last_modified_ms;
      if (auto it = by_uid.find(g.uid); it != by_uid.end() && it->second->valid) {
        const Evaluation& e = *it->second;
        r["loss_before_own"] = e.loss_before_own;
        r["loss_after_own"] = e.loss_after_own;
        r["loss_before_rand"] = e.loss_before_rand;
        r["loss_after_rand"] = e.loss_after_rand;
        r["gradient_score"] = gradient_score(e);
        r["binary"] = binary_indicator(e);
        r["steps_behind"] = in.steps_behind[g.uid];
      }
      r["final"] = scores[g.uid].final_score;
      batch.put(storage::Family::kWindowScores, window_uid_key(w, g.uid), json_bytes(r));
      batch.put(storage::Family::kWindowScores, history_key(g.uid, w), json_bytes(r));
    }
    if (set) {
      summary["aggregate"] = set->uids;
      summary["aggregate_prev"] = set->prev ? json(*set->prev) : json(nullptr);
    }
    batch.put(storage::Family::kWindowScores, window_summary_key(w), json_bytes(summary));
    for (const auto& [u, s] : scores) batch.put(storage::Family::kRatings, rating_key(u), json_bytes(to_json(s)));
    CRUCIBLE_RETURN_IF_ERROR(db->commit_window(w, std::move(batch)));

    previous_contents.clear();
    for (const auto& g : gathered)
      if (g.valid()) previous_contents[g.content] = g.uid;

    // theta_{w+1}: the lead's own set, or the lead's published one.
    if (set) {
      const std::string encoded = miner::encode_set(*set);
      Bytes bytes(encoded.begin(), encoded.end());
      auto stored = store->get(keys::aggregate(w), miner::kMaxSetBytes);
      if (stored.is_ok()) bytes = stored->data;
      Status st = apply_set(*set, bytes);
      if (!st.is_ok()) {
        log::error("aggregate not applied", {{"window", w}, {"error", st.to_string()}});
      } else {
        CRUCIBLE_RETURN_IF_ERROR(save_model());
        metrics::global().add(metrics::Counter::kAggregatesApplied, 1, {{"role", "validator"}});
        if ((w + 1) % o.validator.checkpoint_every == 0) {
          if (Status c = checkpoint(w, w + 1); !c.is_ok()) log::warn("checkpoint failed", {{"error", c.to_string()}});
        }
      }
    } else if (Status st = follow_lead(w, *mg, stop); !st.is_ok()) {
      log::warn("the lead's aggregation set was not applied", {{"window", w}, {"error", st.to_string()}});
    }
    if ((w + 1) % o.validator.weights_every == 0) {
      Status st = post_weights(w / o.validator.weights_every, w, stop);
      if (!st.is_ok()) log::error("weights", {{"error", st.to_string()}});
    }
    std::size_t valid = 0;
    for (const auto& g : gathered) valid += g.valid();
    log::info("window done", {{"window", w}, {"uploads_valid", valid}, {"evaluated", in.evaluations.size()},
                              {"seconds", std::chrono::duration<double>(Clock::now() - t0).count()}});
    metrics::global().set(metrics::Gauge::kWindow, static_cast<double>(w), {{"role", "validator"}});
    return Status::ok();
  }

  // Where aggregation sets are read: the lead's store (ours when we lead).
  std::shared_ptr<storage::ObjectStore> sets_store() {
    if (auto mg = chain->metagraph(o.chain.netuid); mg.is_ok()) {
      if (auto lead_uid = miner::lead_validator(*mg); lead_uid && *lead_uid != uid) {
        if (auto s = peers->store_of(*lead_uid); s.is_ok()) return *s;
      }
    }
    return store;
  }

  // Restores scores and the model after a restart; a model behind the last
  // committed window is brought forward by re-applying the published sets.
  Status restore(const std::atomic<bool>& stop) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto rows, db->scan(storage::Family::kRatings, "uid/"));
    for (const auto& [k, v] : rows) {
      auto j = json::parse(v.begin(), v.end(), nullptr, false);
      if (j.is_object()) scores[static_cast<std::uint16_t>(std::stoul(k.substr(4)))] = score_from_json(j);
    }
    const std::shared_ptr<storage::ObjectStore> sets = sets_store();
    const fs::path file = fs::path(o.validator.state_dir) / "model.safetensors";
    if (fs::exists(file)) {
      CRUCIBLE_ASSIGN_OR_RETURN(safetensors::File f, safetensors::read_file(file));
      CRUCIBLE_RETURN_IF_ERROR(model->load_model(file));
      model_window = std::stoull(f.metadata.at("window"));
      auto b = from_hex_fixed<32>(f.metadata.at("basis"));
      if (b.is_ok()) basis = *b;
      // The last aggregate, for sync scores.
      auto set_bytes = sets->get(keys::aggregate(*model_window), miner::kMaxSetBytes);
      if (set_bytes.is_ok()) {
        auto set = miner::decode_set(std::string_view(reinterpret_cast<const char*>(set_bytes->data.data()), set_bytes->data.size()));
        if (set.is_ok() && !set->uids.empty()) {
          auto merged = miner::fetch_and_merge(*set, *peers, specs(), o.storage.max_object_bytes);
          if (merged.is_ok()) last_aggregate = std::move(*merged);
        }
      }
    }
    CRUCIBLE_ASSIGN_OR_RETURN(auto last, db->last_committed_window());
    std::optional<std::uint64_t> first_window;
    if (auto rows = db->scan(storage::Family::kWindowProgress, "window/", 1); rows.is_ok() && !rows->empty()) {
      first_window = std::stoull(rows->front().first.substr(7));
    }
    while (last && (!model_window || *model_window < *last) && !stop.load()) {
      std::uint64_t next = model_window ? *model_window + 1 : first_window.value_or(0);
      auto s = sets->get(keys::aggregate(next), miner::kMaxSetBytes);
      if (s.status().code() == StatusCode::kNotFound) {
        if (next >= *last) break;
        model_window = next;  // no set was published for it
        continue;
      }
      if (!s.is_ok()) return s.status();
      CRUCIBLE_ASSIGN_OR_RETURN(auto set, miner::decode_set(std::string_view(reinterpret_cast<const char*>(s->data.data()), s->data.size())));
      CRUCIBLE_RETURN_IF_ERROR(apply_set(set, s->data));
      CRUCIBLE_RETURN_IF_ERROR(save_model());
      log::info("re-applied aggregate after a restart", {{"window", next}});
    }
    if (last) log::info("resumed validator state", {{"last_window", *last}, {"uids", scores.size()}});
    return Status::ok();
  }
};

ValidatorNode::ValidatorNode() = default;
ValidatorNode::~ValidatorNode() = default;

Result<std::unique_ptr<ValidatorNode>> ValidatorNode::create(const ValidatorNodeOptions& options,
                                                             const chain::PrivateKey& key) {
  std::unique_ptr<ValidatorNode> node(new ValidatorNode());
  node->impl_ = std::make_unique<Impl>(key);
  Impl& m = *node->impl_;
  m.o = options;
  CRUCIBLE_RETURN_IF_ERROR(model::validate(options.model));
  auto ds = data::Dataset::open(options.validator.data_dir, "train");
  if (!ds.is_ok()) return ds.status().with_context("validator.data_dir");
  m.dataset.emplace(std::move(*ds));
  miner::MinerOptions mo;
  mo.device = options.validator.device;
  mo.threads = options.validator.threads;
  CRUCIBLE_ASSIGN_OR_RETURN(m.model, miner::Trainer::create(options.model, mo, options.protocol.init_seed));
  std::error_code ec;
  fs::create_directories(options.validator.state_dir, ec);
  CRUCIBLE_ASSIGN_OR_RETURN(m.db, storage::StateStore::open((fs::path(options.validator.state_dir) / "db").string()));
  CRUCIBLE_ASSIGN_OR_RETURN(auto evm, chain::EvmChain::connect(chain::to_evm_options(options.chain), key));
  m.chain = std::move(evm);
  CRUCIBLE_ASSIGN_OR_RETURN(m.store, storage::open_store(options.storage.url, options.storage.read_credentials(),
                                                         options.storage.write_credentials(),
                                                         options.storage.retry_policy()));
  m.peers = std::make_unique<miner::PeerDirectory>(*m.chain, options.chain.netuid, options.storage.retry_policy());
  // The private seed: from the key (or the configured secret), so nobody else
  // can predict the random data.
  chain::Keccak256 h;
  if (options.validator.random_seed.empty()) {
    h.update(key.secret_bytes());
  } else {
    h.update(as_bytes(options.validator.random_seed));
  }
  auto d = h.update(as_bytes("crucible validator random data")).finish();
  for (int i = 0; i < 8; ++i) m.private_seed |= static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]) << (8 * i);

  CRUCIBLE_ASSIGN_OR_RETURN(m.uid, miner::join_subnet(*m.chain, options.chain.netuid, key, options.storage));
  log::info("validator ready", {{"uid", m.uid}, {"address", key.address().checksum()}, {"store", m.store->describe()}});
  return node;
}

storage::StateStore& ValidatorNode::state() { return *impl_->db; }

Status ValidatorNode::run(const std::atomic<bool>& stop) {
  Impl& m = *impl_;
  CRUCIBLE_RETURN_IF_ERROR(m.restore(stop));
  CRUCIBLE_ASSIGN_OR_RETURN(auto last, m.db->last_committed_window());
  bool started = last.has_value();
  std::uint64_t next = last ? *last + 1 : 0;
  std::uint32_t done = 0;
  while (!stop.load()) {
    auto head = m.retry("block number", stop, [&] { return m.chain->block_number(); });
    if (!head.is_ok()) break;
    const std::uint64_t current = *head / m.o.protocol.blocks_per_window;
    if (!started) {  // a fresh validator starts with the window under way, or where configured
      next = m.o.validator.start_window >= 0 ? static_cast<std::uint64_t>(m.o.validator.start_window) : current;
      started = true;
    }
    if (m.o.validator.end_window >= 0 && next >= static_cast<std::uint64_t>(m.o.validator.end_window)) {
      log::info("done: end_window reached", {{"window", next}});
      break;
    }
    // Window w is processed once its upload slot (in w+1) has closed.
    if (next >= current) {
      sleep_unless_stopped(std::chrono::milliseconds(500), stop);
      continue;
    }
    auto header = m.retry("block header", stop, [&] { return m.chain->block((next + 1) * m.o.protocol.blocks_per_window); });
    if (!header.is_ok()) break;
    const double slot_end = static_cast<double>(header->timestamp) + m.o.protocol.upload_slot_s + m.o.protocol.clock_skew_s;
    if (unix_seconds() < slot_end) {
      sleep_unless_stopped(std::chrono::milliseconds(250), stop);
      continue;
    }
    CRUCIBLE_RETURN_IF_ERROR(m.process(next, stop));
    ++next;
    if (m.o.validator.max_windows != 0 && ++done >= m.o.validator.max_windows) break;
  }
  log::info("validator stopped", {});
  return Status::ok();
}

}  // namespace crucible::validator
