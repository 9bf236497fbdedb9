// The miner's endpoint over loopback: Prometheus text, the JSON health
// record with the miner's facts, and the page for a person.
#include "crucible/miner/metrics_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crucible/common/metrics.h"
#include "support/http_client.h"

namespace crucible::miner {
namespace {

using testing::body_of;
using ::testing::HasSubstr;
using testing::header_of;
using testing::http_get;

TEST(MinerEndpoint, HealthIsJsonWithTheMinersFacts) {
  auto s = MetricsServer::start(http::ServerOptions{});
  ASSERT_TRUE(s.is_ok()) << s.status();
  const auto port = (*s)->port();
  auto before = nlohmann::json::parse(body_of(http_get(port, "/healthz")));
  EXPECT_EQ(before["status"], "ok");
  EXPECT_EQ(before["role"], "miner");
  EXPECT_TRUE(before["uid"].is_null());  // not known until the node has found it

  auto& m = metrics::global();
  m.set(metrics::Gauge::kWindow, 41, {{"role", "miner"}});
  m.set(metrics::Gauge::kLastUploadWindow, 40);
  m.set(metrics::Gauge::kMinerLoss, 3.25);
  const double ok_before = m.value(metrics::Counter::kUploads, {{"result", "ok"}});
  m.add(metrics::Counter::kUploads, 1, {{"result", "ok"}});
  (*s)->set_uid(7);
  auto r = http_get(port, "/healthz");
  EXPECT_EQ(header_of(r, "Content-Type"), "application/json");
  EXPECT_EQ(header_of(r, "Cache-Control"), "no-store");
  auto j = nlohmann::json::parse(body_of(r));
  EXPECT_EQ(j["uid"], 7);
  EXPECT_EQ(j["window"], 41);
  EXPECT_EQ(j["last_upload_window"], 40);
  EXPECT_DOUBLE_EQ(j["loss"].get<double>(), 3.25);
  EXPECT_DOUBLE_EQ(j["uploads"]["ok"].get<double>(), ok_before + 1);

  auto page = http_get(port, "/");
  EXPECT_EQ(header_of(page, "Content-Type"), "text/html; charset=utf-8");
  EXPECT_THAT(body_of(page), HasSubstr("<th>window</th><td>41</td>"));
  EXPECT_THAT(body_of(page), HasSubstr("<th>loss</th><td>3.25</td>"));
  EXPECT_THAT(http_get(port, "/metrics"), HasSubstr("crucible_miner_last_upload_window 40"));
  EXPECT_THAT(http_get(port, "/nope"), HasSubstr("HTTP/1.1 404"));
}

}  // namespace
}  // namespace crucible::miner
