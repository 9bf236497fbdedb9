#include "crucible/common/child_process.h"

#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <random>
#include <set>

namespace crucible {

Result<std::uint16_t> free_loopback_port() {
  static std::mutex mutex;
  static std::set<std::uint16_t> handed;
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  constexpr unsigned kFirst = 20000, kSpan = 12000;  // 20000-31999: under the ephemeral range
  std::lock_guard lock(mutex);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const auto port = static_cast<std::uint16_t>(kFirst + rng() % kSpan);
    if (handed.count(port)) continue;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return unavailable("socket: errno {}", errno);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (!free) continue;
    handed.insert(port);
    return port;
  }
  return unavailable("no free port on 127.0.0.1 between {} and {}", kFirst, kFirst + kSpan - 1);
}

void reset_child_for_exec(int death_signal) noexcept {
  const pid_t parent = getppid();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &dfl, nullptr);  // fails harmlessly for the few that cannot be set
  }
  prctl(PR_SET_PDEATHSIG, death_signal);
  if (getppid() != parent) _exit(1);  // the parent died before the death signal was armed
}

}  // namespace crucible
