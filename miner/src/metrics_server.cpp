#include "crucible/miner/metrics_server.h"

#include <fmt/format.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "crucible/common/http_server.h"
#include "crucible/common/metrics.h"
#include "crucible/common/version.h"

namespace crucible::miner {

namespace {

using nlohmann::json;
constexpr int kNoUid = -1;

json gauge(metrics::Gauge g, const metrics::Labels& labels = {}) {
  const auto& m = metrics::global();
  return m.has(g, labels) ? json(m.value(g, labels)) : json(nullptr);
}

json status(int uid) {
  const auto& m = metrics::global();
  json j = {{"status", "ok"}, {"role", "miner"}, {"version", std::string(project_version())}};
  j["uid"] = uid == kNoUid ? json(nullptr) : json(uid);
  j["window"] = gauge(metrics::Gauge::kWindow, {{"role", "miner"}});
  j["global_step"] = gauge(metrics::Gauge::kGlobalStep, {{"role", "miner"}});
  j["last_upload_window"] = gauge(metrics::Gauge::kLastUploadWindow);
  j["loss"] = gauge(metrics::Gauge::kMinerLoss);
  j["tokens_per_second"] = gauge(metrics::Gauge::kTokensPerSecond);
  json uploads = json::object();
  for (const char* r : {"ok", "late", "failed"}) uploads[r] = m.value(metrics::Counter::kUploads, {{"result", r}});
  j["uploads"] = uploads;
  return j;
}

std::string shown(const json& v) {
  if (v.is_null()) return "–";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return d == static_cast<double>(static_cast<std::int64_t>(d)) ? fmt::format("{}", static_cast<std::int64_t>(d))
                                                                  : fmt::format("{:.4g}", d);
  }
  return v.dump();
}

// Every value on the page is a number the process made itself: nothing to escape.
std::string page(const json& s) {
  std::string rows;
  for (const char* k : {"uid", "window", "global_step", "last_upload_window", "loss", "tokens_per_second"}) {
    rows += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", k, shown(s[k]));
  }
  for (const auto& [r, n] : s["uploads"].items()) {
    rows += fmt::format("<tr><th>uploads {}</th><td>{}</td></tr>\n", r, shown(n));
  }
  return fmt::format(R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="10"><title>crucible miner</title>
<style>body{{font:16px system-ui,sans-serif;margin:1rem;max-width:32rem}}th{{text-align:left;padding-right:1rem}}</style>
</head><body><h1>crucible miner {}</h1>
<table>
{}</table>
<p><a href="/metrics">metrics</a> · <a href="/healthz">healthz</a></p>
</body></html>
)",
                     s["version"].get<std::string>(), rows);
}

}  // namespace

struct MetricsServer::Impl {
  std::atomic<int> uid{kNoUid};
  std::unique_ptr<http::Server> server;
};

MetricsServer::MetricsServer() : impl_(std::make_unique<Impl>()) {}
MetricsServer::~MetricsServer() = default;
std::uint16_t MetricsServer::port() const { return impl_->server->port(); }
void MetricsServer::set_uid(std::uint16_t uid) { impl_->uid = uid; }

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(http::ServerOptions o) {
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  o.threads = 1;
  o.name = "crucible-miner";
  const std::atomic<int>* uid = &s->impl_->uid;
  CRUCIBLE_ASSIGN_OR_RETURN(
      s->impl_->server, http::Server::start(o, [uid](const http::Request& r) {
        const std::string_view path = r.target.substr(0, r.target.find('?'));
        if (path == "/metrics") {
          return http::Response{200, "text/plain; version=0.0.4", metrics::global().render(), "no-store"};
        }
        if (path == "/healthz") {
          return http::Response{200, "application/json", status(uid->load()).dump() + "\n", "no-store"};
        }
        if (path == "/") {
          return http::Response{200, "text/html; charset=utf-8", page(status(uid->load())), "no-store"};
        }
        return http::Response{404, "application/json", "{\"error\":\"unknown path\"}\n", "no-store"};
      }));
  return s;
}

}  // namespace crucible::miner
