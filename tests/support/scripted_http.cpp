#include "support/scripted_http.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "crucible/common/child_process.h"

namespace crucible::testing {

int listen_loopback(std::uint16_t& port, int backlog) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  port = ntohs(addr.sin_port);
  return fd;
}

std::uint16_t free_port() {
  auto port = free_loopback_port();
  if (!port.is_ok()) throw std::runtime_error(port.status().to_string());
  return *port;
}

ScriptedHttpServer::ScriptedHttpServer(std::vector<ScriptedResponse> script) : script_(std::move(script)) {
  listen_fd_ = listen_loopback(port_);
  thread_ = std::thread([this] { serve(); });
}

ScriptedHttpServer::~ScriptedHttpServer() {
  stop_ = true;
  thread_.join();
  for (int fd : held_) close(fd);
  close(listen_fd_);
}

std::string ScriptedHttpServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<std::string> ScriptedHttpServer::bodies() const {
  std::lock_guard lock(mu_);
  return bodies_;
}

void ScriptedHttpServer::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    // Read one request: headers, then Content-Length bytes.
    std::string req;
    char buf[4096];
    std::size_t need = std::string::npos;
    while (!stop_) {
      pollfd q{fd, POLLIN, 0};
      if (poll(&q, 1, 50) <= 0) continue;
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      req.append(buf, static_cast<std::size_t>(n));
      auto end = req.find("\r\n\r\n");
      if (end != std::string::npos && need == std::string::npos) {
        auto cl = req.find("Content-Length: ");
        std::size_t body_len = cl == std::string::npos ? 0 : std::stoul(req.substr(cl + 16));
        need = end + 4 + body_len;
      }
      if (need != std::string::npos && req.size() >= need) break;
    }
    int index = requests_++;
    {
      std::lock_guard lock(mu_);
      auto end = req.find("\r\n\r\n");
      bodies_.push_back(end == std::string::npos ? "" : req.substr(end + 4));
    }
    const ScriptedResponse& r = script_[std::min<std::size_t>(static_cast<std::size_t>(index), script_.size() - 1)];
    if (r.stall) {
      held_.push_back(fd);
      continue;
    }
    std::string reply = "HTTP/1.1 " + std::to_string(r.status) +
                        " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(r.body.size()) +
                        "\r\nConnection: close\r\n\r\n" + r.body;
    (void)!write(fd, reply.data(), reply.size());
    close(fd);
  }
}

}  // namespace crucible::testing
