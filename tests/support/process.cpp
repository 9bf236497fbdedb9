#include "support/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "crucible/common/child_process.h"

extern char** environ;

namespace crucible::testing {

namespace {

// In a forked child: no controlling terminal (a child that would prompt
// fails instead of waiting), stdin from /dev/null, the extra environment,
// then exec. Never returns.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  setsid();
  reset_child_for_exec(SIGKILL);  // nothing a test starts outlives the test
  int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, STDIN_FILENO);
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

std::string bin(const std::string& name) { return std::string(CRUCIBLE_BIN_DIR) + "/" + name; }

std::string prepare_brown(const std::filesystem::path& dir, int vocab_size) {
  const std::string out = (dir / "data").string();
  auto r = run_process({bin("crucible"), "data", "prepare", "--corpus", "brown", "--out", out, "--vocab-size",
                        std::to_string(vocab_size)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(err_pipe[0]);
    exec_child(argv, env);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace crucible::testing

namespace crucible::testing {

Child::Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  int out_pipe[2];
  if (pipe(out_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    close(out_pipe[0]);
    exec_child(argv, env);
  }
  close(out_pipe[1]);
  out_fd_ = out_pipe[0];
  reader_ = std::thread([this] { drain(); });
}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  stop_reading_ = true;  // a grandchild may still hold the pipe open: do not wait for its end
  if (reader_.joinable()) reader_.join();
  if (out_fd_ >= 0) close(out_fd_);
}

void Child::drain() {
  char buf[4096];
  while (!stop_reading_.load()) {
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    std::lock_guard lock(mu_);
    if (n <= 0) {
      eof_ = true;
      changed_.notify_all();
      return;
    }
    seen_.append(buf, static_cast<std::size_t>(n));
    changed_.notify_all();
  }
}

std::string Child::read_until(const std::string& needle, int timeout_ms) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [&] { return eof_ || seen_.find(needle) != std::string::npos; });
  return seen_;
}

void Child::signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

std::vector<int> processes_mentioning(const std::string& text) {
  std::vector<int> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(st)), std::istreambuf_iterator<char>());
    const auto paren = stat.rfind(')');
    const bool zombie = paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
    if (!zombie && cmd.find(text) != std::string::npos) out.push_back(pid);
  }
  closedir(proc);
  return out;
}

void Child::close_output() {
  stop_reading_ = true;
  if (reader_.joinable()) reader_.join();
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
}

int Child::wait(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (pid_ > 0 && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

}  // namespace crucible::testing
