// A tiny HTTP/1.1 server on 127.0.0.1 for client tests: answers each request
// with the next scripted response, or holds the connection open without a
// word (a stalled server). Runs on its own thread; stops at destruction.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace crucible::testing {

// A listening TCP socket on 127.0.0.1 with a free port (throws if it cannot).
int listen_loopback(std::uint16_t& port, int backlog = 16);

// crucible::free_loopback_port (below the ephemeral range: no outgoing
// connection takes it before the child binds); throws if none is found.
std::uint16_t free_port();

struct ScriptedResponse {
  int status = 200;
  std::string body;
  bool stall = false;  // accept, read, never answer
};

class ScriptedHttpServer {
 public:
  explicit ScriptedHttpServer(std::vector<ScriptedResponse> script);
  ~ScriptedHttpServer();
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  std::string url() const;
  int requests() const { return requests_.load(); }
  std::vector<std::string> bodies() const;

 private:
  void serve();
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::vector<ScriptedResponse> script_;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  mutable std::mutex mu_;
  std::vector<std::string> bodies_;
  std::vector<int> held_;
  std::thread thread_;
};

}  // namespace crucible::testing
