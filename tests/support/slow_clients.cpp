#include "support/slow_clients.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace crucible::testing {

namespace {

int open_socket(const std::string& source, std::uint16_t port, bool blocking) {
  int fd = socket(AF_INET, SOCK_STREAM | (blocking ? 0 : SOCK_NONBLOCK), 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int connect_from(const std::string& source, std::uint16_t port) { return open_socket(source, port, true); }

SlowClients::SlowClients(std::uint16_t port, std::vector<std::string> sources, int sockets, double byte_interval_s)
    : port_(port), sources_(std::move(sources)), sockets_(sockets), interval_s_(byte_interval_s) {
  thread_ = std::thread([this] { run(); });
}

SlowClients::~SlowClients() {
  stop_ = true;
  thread_.join();
}

void SlowClients::run() {
  using clock = std::chrono::steady_clock;
  static const std::string kHead = "GET /v1/scores HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  struct Slot {
    int fd = -1;
    std::size_t sent = 0;
  };
  std::vector<Slot> slots(static_cast<std::size_t>(sockets_));
  auto next_round = clock::now();
  std::vector<pollfd> fds;
  std::vector<std::size_t> owner;
  while (!stop_) {
    if (clock::now() >= next_round) {  // a round: reopen what was closed, one byte on each open socket
      next_round += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(interval_s_));
      for (std::size_t i = 0; i < slots.size(); ++i) {
        Slot& s = slots[i];
        if (s.fd < 0) {
          s.fd = open_socket(sources_[i % sources_.size()], port_, false);
          s.sent = 0;
          if (s.fd >= 0) ++connects_;
          continue;
        }
        const char c = s.sent < kHead.size() ? kHead[s.sent] : 'a';
        if (send(s.fd, &c, 1, MSG_NOSIGNAL) == 1) ++s.sent;
      }
    }
    fds.clear();
    owner.clear();
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].fd < 0) continue;
      fds.push_back({slots[i].fd, POLLIN | POLLRDHUP, 0});
      owner.push_back(i);
    }
    int held = 0;
    if (poll(fds.data(), fds.size(), 50) >= 0) {
      for (std::size_t k = 0; k < fds.size(); ++k) {
        Slot& s = slots[owner[k]];
        if (fds[k].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {  // an answer (503) or a close: let go
          char buf[512];
          while (recv(s.fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
          }
          close(s.fd);
          s.fd = -1;
          ++closed_by_server_;
        } else if (s.sent > 0) {
          ++held;
        }
      }
    }
    held_ = held;
    if (held > most_held_) most_held_ = held;
  }
  for (auto& s : slots)
    if (s.fd >= 0) close(s.fd);
  held_ = 0;
}

}  // namespace crucible::testing
