// Runs a program as a child process and captures what it printed, for tests
// that drive the real binaries.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace crucible::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;     // stdout
  std::string err;     // stderr
};

// argv[0] is a path; `env` entries are added to (or replace) the inherited environment.
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});

// Path of a built binary: bin("crucible") -> "<build>/bin/crucible".
std::string bin(const std::string& name);

// `crucible data prepare` on the Brown corpus into dir/data (real English
// text, the demo's data); returns the folder. About 2 s.
std::string prepare_brown(const std::filesystem::path& dir, int vocab_size = 512);

}  // namespace crucible::testing

namespace crucible::testing {

// The pids of running processes (not zombies, not this one) whose command
// line mentions `text`: what a test left behind in its folder.
std::vector<int> processes_mentioning(const std::string& text);

// A long-running child (a server) whose stdout is read as it comes.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});
  ~Child();  // SIGKILLs it if still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Waits until `needle` is in its stdout or `timeout_ms` passes; returns all
  // of stdout so far. A thread drains the pipe all the time, so a chatty
  // child never blocks on a full pipe while the test is doing something else.
  std::string read_until(const std::string& needle, int timeout_ms);
  void signal(int sig);
  // Stops reading and closes the read end of its output pipe, as `| head`
  // does when it has read enough: the child's next write gets EPIPE.
  void close_output();
  // Waits up to `timeout_ms` for exit; the exit code, or -1 on a signal or timeout.
  int wait(int timeout_ms);
  int pid() const { return pid_; }

 private:
  void drain();

  int pid_ = -1;
  int out_fd_ = -1;
  std::mutex mu_;
  std::condition_variable changed_;
  std::string seen_;
  bool eof_ = false;
  std::atomic<bool> stop_reading_{false};
  std::thread reader_;
};

}  // namespace crucible::testing
