// Slowloris, played against crucible's HTTP server: a thread holds many
// connections from given source addresses (127.0.0.2, 127.0.0.3, ...: all
// loopback on Linux) and sends one byte of a never-ending request head on
// each, every interval. A connection the server closes is opened again at
// the next interval, as an attacker would.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace crucible::testing {

// A blocking TCP connection to 127.0.0.1:port from `source` (an IPv4
// address), or -1.
int connect_from(const std::string& source, std::uint16_t port);

class SlowClients {
 public:
  SlowClients(std::uint16_t port, std::vector<std::string> sources, int sockets, double byte_interval_s = 1.0);
  ~SlowClients();  // stops and closes every socket
  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;

  std::uint64_t connects() const { return connects_; }                  // connections opened so far
  std::uint64_t closed_by_server() const { return closed_by_server_; }  // ... that the server closed
  int held() const { return held_; }                                    // connected and open right now
  int most_held() const { return most_held_; }                          // the most held at once

 private:
  void run();

  std::uint16_t port_;
  std::vector<std::string> sources_;
  int sockets_;
  double interval_s_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> connects_{0};
  std::atomic<std::uint64_t> closed_by_server_{0};
  std::atomic<int> held_{0};
  std::atomic<int> most_held_{0};
  std::thread thread_;
};

}  // namespace crucible::testing
