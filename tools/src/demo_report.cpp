#include "crucible/cli/demo_report.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "crucible/cli/scores.h"
#include "crucible/common/file_io.h"

namespace crucible::cli {

using nlohmann::json;

namespace {

Result<json> get_json(const std::string& url) {
  CRUCIBLE_ASSIGN_OR_RETURN(std::string body, http_get(url));
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return data_loss("{}: not a JSON object", url);
  return j;
}

template <typename T>
T value_or(const json& j, const char* key, T fallback) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const json& v = j[key];
  if constexpr (std::is_same_v<T, std::string>) {
    return v.is_string() ? v.get<std::string>() : fallback;
  } else {
    return v.is_number() ? v.get<T>() : fallback;
  }
}

std::vector<std::uint16_t> uid_list(const json& j) {
  std::vector<std::uint16_t> out;
  if (!j.is_array()) return out;
  for (const auto& u : j)
    if (u.is_number_integer() && u.get<std::int64_t>() >= 0 && u.get<std::int64_t>() <= 0xFFFF) {
      out.push_back(static_cast<std::uint16_t>(u.get<std::int64_t>()));
    }
  return out;
}

DemoWindow window_from_json(const json& progress, const json& detail) {
  DemoWindow w;
  w.window = value_or<std::uint64_t>(progress, "window", 0);
  if (progress.contains("heldout_loss") && progress["heldout_loss"].is_number()) {
    w.heldout_loss = progress["heldout_loss"].get<double>();
  }
  w.set = uid_list(progress.value("aggregate", json::array()));
  w.bytes_received = value_or<std::uint64_t>(progress, "bytes_received", 0);
  if (detail.is_object() && detail.contains("uids") && detail["uids"].is_array()) {
    for (const auto& r : detail["uids"]) {
      const auto uid = static_cast<std::uint16_t>(value_or<std::uint64_t>(r, "uid", 0));
      w.scores[uid] = value_or<double>(r, "final", 0.0);
      if (r.contains("gradient_score")) w.gradient[uid] = value_or<double>(r, "gradient_score", 0.0);
      if (r.value("valid", false)) w.valid.push_back(uid);
      if (r.contains("reason")) w.reasons[uid] = value_or<std::string>(r, "reason", "");
    }
  }
  return w;
}

DemoPost post_from_json(const json& p) {
  DemoPost post;
  post.epoch = value_or<std::uint64_t>(p, "epoch", 0);
  post.window = value_or<std::uint64_t>(p, "window", 0);
  post.status = value_or<std::string>(p, "status", "");
  post.tx = value_or<std::string>(p, "tx", "");
  const auto uids = uid_list(p.value("uids", json::array()));
  const auto values = uid_list(p.value("values", json::array()));
  double total = 0;
  for (std::size_t i = 0; i < uids.size() && i < values.size(); ++i) total += values[i];
  for (std::size_t i = 0; i < uids.size() && i < values.size(); ++i) {
    post.weights[uids[i]] = total > 0 ? values[i] / total : 0.0;
  }
  return post;
}

}  // namespace

Result<DemoReport> demo_report_from_json(const json& progress, const std::vector<json>& windows, const json& posts,
                                         const std::vector<std::uint16_t>& miners) {
  if (!progress.contains("windows") || !progress["windows"].is_array()) {
    return data_loss("/v1/progress: no windows list");
  }
  DemoReport r;
  r.miners = miners;
  std::map<std::uint64_t, const json*> detail;
  for (const auto& w : windows) detail[value_or<std::uint64_t>(w, "window", 0)] = &w;
  for (const auto& p : progress["windows"]) {
    const auto w = value_or<std::uint64_t>(p, "window", 0);
    r.windows.push_back(window_from_json(p, detail.count(w) ? *detail[w] : json()));
  }
  if (posts.contains("posts") && posts["posts"].is_array()) {
    for (const auto& p : posts["posts"]) r.posts.push_back(post_from_json(p));
  }
  return r;
}

Result<DemoReport> read_demo_report(const std::string& api, const std::vector<std::uint16_t>& miners) {
  CRUCIBLE_ASSIGN_OR_RETURN(json progress, get_json(api + "/v1/progress"));
  std::vector<json> windows;
  if (progress.contains("windows") && progress["windows"].is_array()) {
    for (const auto& p : progress["windows"]) {
      auto w = get_json(fmt::format("{}/v1/windows/{}", api, value_or<std::uint64_t>(p, "window", 0)));
      if (w.is_ok()) windows.push_back(std::move(*w));
    }
  }
  auto posts = get_json(api + "/v1/weights/history");
  return demo_report_from_json(progress, windows, posts.is_ok() ? *posts : json::object(), miners);
}

DemoFigures demo_figures(const DemoReport& r) {
  DemoFigures f;
  const std::set<std::uint16_t> miners(r.miners.begin(), r.miners.end());
  for (const auto& w : r.windows) {
    for (std::uint16_t uid : w.valid) {
      if (!miners.count(uid)) continue;
      ++f.valid_uploads;
      f.aggregated += std::count(w.set.begin(), w.set.end(), uid) > 0;
    }
  }
  for (std::uint16_t uid : r.miners) f.final_weights[uid] = 0;
  if (!r.posts.empty())
    for (const auto& [uid, v] : r.posts.back().weights)
      if (miners.count(uid)) f.final_weights[uid] = v;
  return f;
}

json summary_json(const DemoReport& r) {
  json windows = json::array();
  for (const auto& w : r.windows) {
    json scores = json::object();
    for (const auto& [uid, s] : w.scores) scores[std::to_string(uid)] = s;
    json reasons = json::object();
    for (const auto& [uid, why] : w.reasons) reasons[std::to_string(uid)] = why;
    json gradient = json::object();
    for (const auto& [uid, g] : w.gradient) gradient[std::to_string(uid)] = g;
    windows.push_back({{"window", w.window},
                       {"heldout_loss", w.heldout_loss ? json(*w.heldout_loss) : json(nullptr)},
                       {"set", w.set},
                       {"valid", w.valid},
                       {"scores", scores},
                       {"gradient_scores", gradient},
                       {"rejected", reasons},
                       {"bytes_received", w.bytes_received}});
  }
  json posts = json::array();
  for (const auto& p : r.posts) {
    json weights = json::object();
    for (const auto& [uid, v] : p.weights) weights[std::to_string(uid)] = v;
    posts.push_back(
        {{"epoch", p.epoch}, {"window", p.window}, {"status", p.status}, {"tx", p.tx}, {"weights", weights}});
  }
  const DemoFigures f = demo_figures(r);
  json final_weights = json::object();
  for (const auto& [uid, v] : f.final_weights) final_weights[std::to_string(uid)] = v;
  json figures = {{"miner_valid_uploads", f.valid_uploads},
                  {"miner_uploads_aggregated", f.aggregated},
                  {"aggregated_share", f.valid_uploads ? double(f.aggregated) / double(f.valid_uploads) : 0.0},
                  {"final_weights", final_weights}};
  return {{"miners", r.miners}, {"windows", windows}, {"weight_posts", posts}, {"figures", figures}};
}

namespace {

constexpr double kWidth = 820, kPanel = 240, kLeft = 70, kRight = 150, kTop = 40, kGap = 70;
constexpr double kPad = 14;  // between a panel's frame and its first and last window (half the widest bar, and more)
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

struct Axis {
  double lo, hi;
  double at(double v, double from, double to) const {
    return hi > lo ? from + (v - lo) / (hi - lo) * (to - from) : (from + to) / 2;
  }
};

std::string text(double x, double y, const std::string& s, const char* anchor = "start", int size = 12) {
  return fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="{}">{}</text>)", x, y, size, anchor, s);
}

// A panel's frame, its title and its y labels; returns the plot's top and bottom.
std::string frame(double top, const std::string& title, const Axis& y, const std::string& fmt_y) {
  const double bottom = top + kPanel, right = kWidth - kRight;
  std::string out = fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)", kLeft, top,
                                right - kLeft, kPanel);
  out += text(kLeft, top - 10, title, "start", 14);
  out += text(kLeft - 6, top + 4, fmt::format(fmt::runtime(fmt_y), y.hi), "end");
  out += text(kLeft - 6, bottom, fmt::format(fmt::runtime(fmt_y), y.lo), "end");
  return out;
}

}  // namespace

std::string progress_svg(const DemoReport& r) {
  std::vector<std::pair<double, double>> loss;
  for (const auto& w : r.windows)
    if (w.heldout_loss && std::isfinite(*w.heldout_loss)) loss.emplace_back(double(w.window), *w.heldout_loss);
  double wlo = r.windows.empty() ? 0 : double(r.windows.front().window);
  double whi = r.windows.empty() ? 1 : double(r.windows.back().window);
  for (const auto& p : r.posts) whi = std::max(whi, double(p.window));
  const Axis x{wlo, whi};
  Axis ly{0, 1};
  if (!loss.empty()) {
    ly = {loss.front().second, loss.front().second};
    for (const auto& [w, l] : loss) ly = {std::min(ly.lo, l), std::max(ly.hi, l)};
  }
  const double right = kWidth - kRight, top2 = kTop + kPanel + kGap;
  const double height = top2 + kPanel + 50;
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif">)",
      kWidth, height, kWidth, height);
  svg += R"(<rect width="100%" height="100%" fill="white"/>)";
  svg += frame(kTop, "held-out loss of the global model, after each window", ly, "{:.3f}");
  std::string points;
  for (const auto& [w, l] : loss) {
    points += fmt::format("{:.1f},{:.1f} ", x.at(w, kLeft + kPad, right - kPad), ly.at(l, kTop + kPanel, kTop));
  }
  svg += fmt::format(R"(<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{}"/>)", points);
  for (const auto& [w, l] : loss) {
    svg +=
        fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="#1f77b4"><title>window {}: {:.4f}</title></circle>)",
                    x.at(w, kLeft + kPad, right - kPad), ly.at(l, kTop + kPanel, kTop), w, l);
  }
  // Each post's weights as one stacked bar (they sum to 1): equal weights
  // show as equal segments, where lines would lie on top of each other.
  svg += frame(top2, "share of each weights post by uid, at the window of the post", Axis{0, 1}, "{:.1f}");
  std::set<std::uint16_t> uids;
  for (const auto& p : r.posts)
    for (const auto& [uid, v] : p.weights) uids.insert(uid);
  std::map<std::uint16_t, const char*> colour_of;
  for (std::uint16_t uid : uids) colour_of[uid] = kColours[colour_of.size() % std::size(kColours)];
  const double slot = (right - kLeft - 2 * kPad) / std::max(1.0, x.hi - x.lo + 1);
  const double bar = std::clamp(slot * 0.6, 2.0, 24.0);
  for (const auto& p : r.posts) {
    const double cx = x.at(double(p.window), kLeft + kPad, right - kPad);
    double below = 0;
    for (const auto& [uid, v] : p.weights) {
      if (v <= 0) continue;
      const double y0 = Axis{0, 1}.at(below + v, top2 + kPanel, top2), y1 = Axis{0, 1}.at(below, top2 + kPanel, top2);
      svg += fmt::format(
          R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" stroke="white" stroke-width="0.5">)"
          R"(<title>window {}: uid {} {:.3f}</title></rect>)",
          cx - bar / 2, y0, bar, y1 - y0, colour_of[uid], p.window, uid, v);
      below += v;
    }
  }
  double legend_y = top2 + 14.0;
  for (const auto& [uid, c] : colour_of) {
    svg += fmt::format(R"(<rect x="{}" y="{:.1f}" width="10" height="10" fill="{}"/>)", right + 12, legend_y - 9, c);
    svg += text(right + 26, legend_y, fmt::format("uid {}", uid));
    legend_y += 14.0;
  }
  // Window labels at a regular step, at most about ten per axis.
  const auto first = static_cast<std::uint64_t>(x.lo), last = static_cast<std::uint64_t>(x.hi);
  const std::uint64_t step = std::max<std::uint64_t>(1, (last - first + 9) / 10);
  for (double y : {kTop + kPanel, top2 + kPanel}) {
    for (std::uint64_t w = first; w <= last; w += step) {
      const double at = x.at(double(w), kLeft + kPad, right - kPad);
      svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#999"/>)", at, y, at, y + 4);
      svg += text(at, y + 16, std::to_string(w), "middle");
    }
    svg += text((kLeft + right) / 2, y + 32, "window", "middle");
  }
  svg += "</svg>\n";
  return svg;
}

Status write_demo_outputs(const DemoReport& r, const std::filesystem::path& out) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return unavailable("cannot create {}: {}", out.string(), ec.message());
  CRUCIBLE_RETURN_IF_ERROR(files::write_file_atomic(out / "summary.json", as_bytes(summary_json(r).dump(2) + "\n")));
  return files::write_file_atomic(out / "progress.svg", as_bytes(progress_svg(r)));
}

}  // namespace crucible::cli
