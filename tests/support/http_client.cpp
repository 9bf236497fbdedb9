#include "support/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

namespace crucible::testing {

std::string http_exchange(std::uint16_t port, const std::string& request, int timeout_ms) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "connect failed";
  }
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (!request.empty()) (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return out;
}

std::string http_get(std::uint16_t port, const std::string& path, const std::string& headers) {
  return http_exchange(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + headers + "Connection: close\r\n\r\n");
}

std::string body_of(const std::string& response) {
  const auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : response.substr(at + 4);
}

std::string header_of(const std::string& response, const std::string& name) {
  const auto head_end = response.find("\r\n\r\n");
  std::size_t at = response.find("\r\n");
  while (at != std::string::npos && at < head_end) {
    const std::size_t start = at + 2;
    const std::size_t end = response.find("\r\n", start);
    const std::string line = response.substr(start, end - start);
    const auto colon = line.find(':');
    if (colon == name.size() && strncasecmp(line.c_str(), name.c_str(), name.size()) == 0) {
      std::size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      return line.substr(v);
    }
    at = end;
  }
  return {};
}

}  // namespace crucible::testing
