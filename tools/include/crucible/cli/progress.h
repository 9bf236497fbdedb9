// Progress of a long command for a person: a redrawn bar on a terminal,
// a log line every tenth of the way otherwise (logs stay readable).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace crucible::cli {

class Progress {
 public:
  Progress(std::string label, std::uint64_t total);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void update(std::uint64_t done, const std::string& detail = {});
  void finish(const std::string& summary);

 private:
  std::string label_;
  std::uint64_t total_;
  bool tty_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_{};
};

}  // namespace crucible::cli
