// Slowloris against the real nodes (issue #28): 2,000 connections from
// 127.0.0.2–127.0.0.9, each sending a byte of a never-ending request head
// every second and opened again whenever the node closes it, while an
// ordinary client on 127.0.0.1 asks 20 times, a quarter second apart (so
// across a header deadline's cut and the attackers' return). At least 19 of
// the 20 must be answered 200 within a second: the validator's score API
// and the miner's status endpoint, each in its own process with its default
// limits (per-client cap, head deadline, total).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "crucible/common/http_server.h"
#include "e2e/network_base.h"
#include "support/http_client.h"
#include "support/slow_clients.h"

namespace crucible {
namespace {

using ::testing::HasSubstr;

constexpr int kSlowSockets = 2000;
constexpr int kRequests = 20;

class SlowlorisTest : public e2e::NetworkBase {
 protected:
  void SetUp() override { start_network(); }

  // Holds the slow sockets against `port` and asks `path` kRequests times;
  // returns how many were answered 200 within a second.
  int served_under_attack(std::uint16_t port, const std::string& path) {
    EXPECT_GE(http::raise_open_file_limit(), static_cast<std::uint64_t>(kSlowSockets + 256))
        << "this process cannot open the test's sockets";
    std::vector<std::string> sources;
    for (int i = 2; i <= 9; ++i) sources.push_back(fmt::format("127.0.0.{}", i));
    testing::SlowClients slow(port, sources, kSlowSockets);
    // Every slow socket has connected once and the held ones have started their heads.
    for (int i = 0; i < 100 && (slow.connects() < kSlowSockets || slow.held() == 0); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_GE(slow.connects(), static_cast<std::uint64_t>(kSlowSockets));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    int served = 0;
    std::string failures;
    for (int i = 0; i < kRequests; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::string r =
          testing::http_exchange(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1000);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r.starts_with("HTTP/1.1 200") && s < 1.0) {
        ++served;
      } else {
        failures += fmt::format("request {}: {:.2f} s: {}\n", i, s, r.substr(0, r.find('\r')));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    // The attack was on: sockets held at the node, and others cut off by it.
    EXPECT_GT(slow.most_held(), 0);
    EXPECT_GT(slow.closed_by_server(), 0u);
    std::printf(
        "slowloris on :%u%s: %d of %d served; %llu connections opened, %llu closed by the node, at most %d "
        "held at once\n%s",
        port, path.c_str(), served, kRequests, static_cast<unsigned long long>(slow.connects()),
        static_cast<unsigned long long>(slow.closed_by_server()), slow.most_held(), failures.c_str());
    return served;
  }
};

TEST_F(SlowlorisTest, TheValidatorsScoreApiServesAnOrdinaryClientUnderTwoThousandSlowSockets) {
  auto validator = start_validator("validator", "max_windows = 1000");
  ASSERT_THAT(validator->read_until("score API listening", 60'000), HasSubstr("score API listening"));
  EXPECT_GE(served_under_attack(api_port_, "/v1/scores"), kRequests - 1);
  validator->signal(SIGINT);
  const std::string log = validator->read_until("validator stopped", 30'000);
  EXPECT_EQ(validator->wait(60'000), 0) << log;
}

TEST_F(SlowlorisTest, TheMinersStatusEndpointServesAnOrdinaryClientUnderTwoThousandSlowSockets) {
  auto miner = start_miner(0, 1000);
  ASSERT_THAT(miner->read_until("metrics endpoint listening", 60'000), HasSubstr("metrics endpoint listening"));
  EXPECT_GE(served_under_attack(miner_metrics_ports_[0], "/healthz"), kRequests - 1);
  miner->signal(SIGINT);
  EXPECT_EQ(miner->wait(60'000), 0) << miner->read_until("never", 100);
}

}  // namespace
}  // namespace crucible
