// Copies and replays (protocol.md §6). Packets stay private until their
// slot has closed (commit, then reveal), so two uploads of the same update
// in one window cannot be an honest original and a later copy: the copy
// would have had to be committed before anyone could see the original.
// They share a source, and both are copies. An update like one of the last
// history_windows windows' updates or applied aggregates is a replay, whoever
// uploaded the first. "Like" is judged on the decoded values, through
// sketches (similarity.h), on the exact payload, and on the index sets
// through bottom-k signatures (gauntlet.h).
#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "crucible/common/log.h"
#include "crucible/validator/window.h"

namespace crucible::validator {

namespace {

std::string what(const Remembered& r) {
  return r.uid ? fmt::format("uid {}'s update of window {}", *r.uid, r.window)
               : fmt::format("the aggregate applied after window {}", r.window);
}

std::string key_of(std::uint64_t w, std::optional<std::uint16_t> uid) {
  return uid ? fmt::format("{:020}/{:05}", w, *uid) : fmt::format("{:020}/aggregate", w);
}

// For each of `uploads`, the history entry its sketch is closest to (by
// |cosine|, the first of equals; none when every cosine is 0) and that
// |cosine|. The uploads are taken kTile at a time, so that each pass over
// the history (history_windows windows of every uid's sketch, 16 KB each:
// 33 MB at 256 uids and 8 windows) serves kTile of them.
std::vector<std::pair<const Remembered*, double>> closest_in_history(const UnitSketches& uploads,
                                                                     const std::vector<Remembered>& history) {
  constexpr std::size_t kTile = 16;
  UnitSketches past;
  for (const auto& r : history) past.add(r.sketch);
  std::vector<std::pair<const Remembered*, double>> out(uploads.size(), {nullptr, 0.0});
  for (std::size_t first = 0; first < uploads.size(); first += kTile) {
    const std::size_t end = std::min(uploads.size(), first + kTile);
    for (std::size_t h = 0; h < past.size(); ++h) {
      for (std::size_t u = first; u < end; ++u) {
        const double c = std::abs(uploads.cosine(u, past, h));
        if (c > out[u].second) out[u] = {&history[h], c};
      }
    }
  }
  return out;
}

}  // namespace

void mark_copies(std::vector<Upload>& uploads, const std::vector<Remembered>& history, const SameUpdate& same) {
  std::vector<Upload*> checked;
  UnitSketches rows;
  for (auto& u : uploads) {
    if (!u.valid()) continue;
    checked.push_back(&u);
    rows.add(u.sketch);
  }
  const auto closest = closest_in_history(rows, history);
  for (std::size_t i = 0; i < checked.size(); ++i) {
    Upload& u = *checked[i];
    const auto [to, best] = closest[i];
    if (to) log::debug("similarity to history", {{"uid", u.uid}, {"cosine", best}, {"to", what(*to)}});
    if (to && best >= same.copy_cosine) {
      u.reject(protocol::Rejection::kReplay, fmt::format("like {} (|cosine| {:.3f})", what(*to), best));
    }
  }
  // Every pair of the window left valid (not a replay) is compared, each at
  // a cost independent of the model: the sketches' cosine and the index
  // signatures' overlap. Copies are marked after, so valid() here still
  // means "not a replay".
  std::map<Upload*, std::pair<std::uint16_t, double>> copies;  // -> a uid with the same update, |cosine|
  for (std::size_t i = 0; i < checked.size(); ++i) {
    if (!checked[i]->valid()) continue;
    for (std::size_t j = i + 1; j < checked.size(); ++j) {
      if (!checked[j]->valid()) continue;
      const Upload& a = *checked[i];
      const Upload& b = *checked[j];
      const double c = std::abs(rows.cosine(i, rows, j));
      if (a.content != b.content && c < same.copy_cosine && index_overlap(a.signature, b.signature) < same.copy_overlap)
        continue;
      copies.emplace(checked[i], std::pair(b.uid, c));
      copies.emplace(checked[j], std::pair(a.uid, c));
    }
  }
  for (auto& [u, other] : copies) {
    u->reject(protocol::Rejection::kCopy,
              fmt::format("the same update as uid {}'s (|cosine| {:.3f}), committed before either was revealed: "
                          "a shared source",
                          other.first, other.second));
  }
}

Status remember(std::uint64_t w, const std::vector<Upload>& uploads, const Sketch* aggregate,
                std::uint32_t history_windows, std::vector<Remembered>& history, storage::StateStore& db) {
  storage::StateStore::Batch b;
  auto add = [&](std::optional<std::uint16_t> uid, const Sketch& s) {
    if (s.empty()) return;
    history.push_back(Remembered{w, uid, s});
    const Bytes bytes = encode_sketch(s);
    b.put(storage::Family::kSketches, key_of(w, uid), bytes);
  };
  for (const auto& u : uploads) add(u.uid, u.sketch);
  if (aggregate) add(std::nullopt, *aggregate);
  const std::uint64_t first = w + 1 >= history_windows ? w + 1 - history_windows : 0;
  std::erase_if(history, [&](const Remembered& r) {
    if (r.window >= first) return false;
    b.remove(storage::Family::kSketches, key_of(r.window, r.uid));
    return true;
  });
  return db.commit(std::move(b));
}

Result<std::vector<Remembered>> restore_history(storage::StateStore& db) {
  CRUCIBLE_ASSIGN_OR_RETURN(auto rows, db.scan(storage::Family::kSketches, ""));
  std::vector<Remembered> out;
  for (const auto& [k, v] : rows) {
    // "{window:020}/{uid:05}" or "{window:020}/aggregate"
    if (k.size() < 22 || k[20] != '/') continue;
    Remembered r;
    if (std::from_chars(k.data(), k.data() + 20, r.window).ec != std::errc()) continue;
    const std::string who = k.substr(21);
    if (who != "aggregate") {
      std::uint16_t uid = 0;
      if (std::from_chars(who.data(), who.data() + who.size(), uid).ec != std::errc()) continue;
      r.uid = uid;
    }
    auto s = decode_sketch(v);
    if (!s.is_ok()) return s.status().with_context("sketch " + k);
    r.sketch = std::move(*s);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace crucible::validator
