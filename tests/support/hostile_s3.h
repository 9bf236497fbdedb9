// An S3 endpoint on 127.0.0.1 run by an attacker, for the liveness tests:
// one that accepts connections and never answers, one that answers one byte
// a second, or one that serves real objects but fails a share of requests
// with 503 and adds latency to the rest. A thread per connection, so one
// stalled client never holds up another; stops at destruction.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "crucible/common/bytes.h"

namespace crucible::testing {

enum class Hostility : std::uint8_t {
  kSilent,   // read the request, never answer
  kTrickle,  // answer one byte every byte_interval
  kFlaky,    // serve the objects put(), failing error_rate of requests with 503, each after `latency`
};

struct HostileOptions {
  Hostility mode = Hostility::kSilent;
  double error_rate = 0.2;
  std::chrono::milliseconds latency{300};
  std::chrono::milliseconds byte_interval{1000};
  std::uint64_t seed = 1;
};

class HostileS3Server {
 public:
  explicit HostileS3Server(HostileOptions options);
  ~HostileS3Server();
  HostileS3Server(const HostileS3Server&) = delete;
  HostileS3Server& operator=(const HostileS3Server&) = delete;

  // "http://127.0.0.1:PORT": use as s3://BUCKET/?endpoint=... with path style.
  std::string endpoint() const;
  // An object at /BUCKET/KEY (path style, no prefix), dated now.
  void put(const std::string& bucket, const std::string& key, Bytes data);
  int requests() const { return requests_.load(); }
  int failed() const { return failed_.load(); }

 private:
  void accept_loop();
  void serve(int fd);
  std::string answer(const std::string& request);
  bool send_all(int fd, const std::string& bytes);

  HostileOptions options_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::atomic<int> failed_{0};
  std::mutex mu_;
  std::mt19937_64 rng_;
  std::map<std::string, std::pair<Bytes, std::string>> objects_;  // path -> (bytes, Last-Modified)
  std::vector<std::thread> connections_;
  std::thread acceptor_;
};

}  // namespace crucible::testing
