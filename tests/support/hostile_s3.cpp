#include "support/hostile_s3.h"

#include "support/scripted_http.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <stdexcept>

#include <fmt/format.h>

namespace crucible::testing {
namespace {

std::string http_date_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::string header_value(const std::string& request, const std::string& name) {
  std::string lower = request;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto p = lower.find("\r\n" + name + ":");
  if (p == std::string::npos) return "";
  p += name.size() + 3;
  auto e = request.find("\r\n", p);
  std::string v = request.substr(p, e - p);
  while (!v.empty() && v.front() == ' ') v.erase(v.begin());
  return v;
}

}  // namespace

HostileS3Server::HostileS3Server(HostileOptions options) : options_(options), rng_(options.seed) {
  listen_fd_ = listen_loopback(port_, 64);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HostileS3Server::~HostileS3Server() {
  stop_ = true;
  acceptor_.join();
  for (auto& t : connections_) t.join();
  close(listen_fd_);
}

std::string HostileS3Server::endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

void HostileS3Server::put(const std::string& bucket, const std::string& key, Bytes data) {
  std::lock_guard lock(mu_);
  objects_["/" + bucket + "/" + key] = {std::move(data), http_date_now()};
}

void HostileS3Server::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    connections_.emplace_back([this, fd] { serve(fd); });
  }
}

bool HostileS3Server::send_all(int fd, const std::string& bytes) {
  if (options_.mode != Hostility::kTrickle) {
    return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  for (char c : bytes) {  // one byte, then a wait that notices the stop
    if (send(fd, &c, 1, MSG_NOSIGNAL) != 1) return false;
    for (auto waited = std::chrono::milliseconds(0); waited < options_.byte_interval && !stop_;
         waited += std::chrono::milliseconds(50)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (stop_) return false;
  }
  return true;
}

void HostileS3Server::serve(int fd) {
  std::string req;
  char buf[4096];
  while (!stop_ && req.find("\r\n\r\n") == std::string::npos) {
    pollfd q{fd, POLLIN, 0};
    if (poll(&q, 1, 50) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    req.append(buf, static_cast<std::size_t>(n));
  }
  ++requests_;
  if (options_.mode == Hostility::kSilent) {
    while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // hold it open, say nothing
  } else if (!stop_ && !req.empty()) {
    send_all(fd, answer(req));
  }
  close(fd);
}

std::string HostileS3Server::answer(const std::string& request) {
  const std::string method = request.substr(0, request.find(' '));
  const auto path_start = request.find(' ') + 1;
  std::string path = request.substr(path_start, request.find(' ', path_start) - path_start);
  path = path.substr(0, path.find('?'));
  auto reply = [](int status, const std::string& headers, const std::string& body, bool head) {
    return fmt::format("HTTP/1.1 {} X\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n{}", status, headers,
                       body.size(), head ? "" : body);
  };
  bool fail = false;
  {
    std::lock_guard lock(mu_);
    fail = std::uniform_real_distribution<double>(0, 1)(rng_) < options_.error_rate;
  }
  if (options_.mode == Hostility::kFlaky) std::this_thread::sleep_for(options_.latency);
  const bool head = method == "HEAD";
  if (options_.mode == Hostility::kFlaky && fail) {
    ++failed_;
    return reply(503, "", "<Error><Code>SlowDown</Code></Error>", head);
  }
  std::lock_guard lock(mu_);
  auto it = objects_.find(path);
  if (it == objects_.end()) return reply(404, "", "<Error><Code>NoSuchKey</Code></Error>", head);
  const auto& [bytes, date] = it->second;
  const std::string body(bytes.begin(), bytes.end());
  const std::string common = fmt::format("Last-Modified: {}\r\nETag: \"{}\"\r\n", date, bytes.size());
  const std::string range = header_value(request, "range");
  std::uint64_t lo = 0, hi = 0;
  if (!range.empty() && !body.empty() && std::sscanf(range.c_str(), "bytes=%lu-%lu", &lo, &hi) == 2 &&
      lo < body.size()) {
    hi = std::min<std::uint64_t>(hi, body.size() - 1);
    return reply(206, common + fmt::format("Content-Range: bytes {}-{}/{}\r\n", lo, hi, body.size()),
                 body.substr(lo, hi - lo + 1), head);
  }
  return reply(200, common, body, head);
}

}  // namespace crucible::testing
