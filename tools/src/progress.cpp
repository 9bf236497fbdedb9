#include "crucible/cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "crucible/common/log.h"

namespace crucible::cli {

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(std::max<std::uint64_t>(total, 1)),
      tty_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

void Progress::update(std::uint64_t done, const std::string& detail) {
  done = std::min(done, total_);
  const double frac = static_cast<double>(done) / static_cast<double>(total_);
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ < std::chrono::milliseconds(100) && done != total_) return;
    last_draw_ = now;
    constexpr int kWidth = 30;
    int filled = static_cast<int>(frac * kWidth);
    fmt::print(stderr, "\r\033[K{} [{}{}] {:3.0f}% {}/{} {}", label_, std::string(filled, '#'),
               std::string(kWidth - filled, '.'), frac * 100, done, total_, detail);
    std::fflush(stderr);
    return;
  }
  int decile = static_cast<int>(frac * 10);
  if (decile == last_decile_) return;
  last_decile_ = decile;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  log::info(label_, {{"done", done},
                     {"total", total_},
                     {"percent", std::round(frac * 100)},
                     {"elapsed_s", elapsed},
                     {"detail", detail}});
}

void Progress::finish(const std::string& summary) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) {
    fmt::print(stderr, "\r\033[K{}: {} ({:.1f} s)\n", label_, summary, elapsed);
  } else {
    log::info(label_ + ": done", {{"summary", summary}, {"elapsed_s", elapsed}});
  }
}

}  // namespace crucible::cli
