#include "parallel.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace crucible::kernels::cpu {
namespace {

// Workers started on first use and kept for the process: a kernel call on a
// small tensor should not pay for starting threads.
class Pool {
 public:
  static Pool& get() {
    static Pool p;
    return p;
  }

  // Runs task(i) for i in [1, n) on workers and task(0) here; returns when all are done.
  void run(int n, const std::function<void(int)>& task) {
    std::unique_lock run_lock(run_mu_);  // one parallel region at a time
    grow(n - 1);
    {
      std::lock_guard lock(mu_);
      task_ = &task;
      pending_ = n - 1;
      next_ = 1;
      end_ = n;
      ++generation_;
    }
    cv_.notify_all();
    task(0);
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    task_ = nullptr;
  }

  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void grow(int want) {
    while (static_cast<int>(workers_.size()) < want) workers_.emplace_back([this] { loop(); });
  }

  void loop() {
    std::uint64_t seen = 0;
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || (generation_ != seen && next_ < end_); });
      if (stop_) return;
      const int i = next_++;
      if (next_ >= end_) seen = generation_;
      const auto* task = task_;
      lock.unlock();
      (*task)(i);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* task_ = nullptr;
  int pending_ = 0, next_ = 0, end_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace

int threads_for(std::int64_t n, int threads, std::int64_t grain) {
  int t = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t by_work = std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, grain));
  return static_cast<int>(std::min<std::int64_t>(t, by_work));
}

void parallel_for(std::int64_t n, int threads, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& f) {
  if (n <= 0) return;
  const int t = threads_for(n, threads, grain);
  if (t <= 1) {
    f(0, n);
    return;
  }
  Pool::get().run(t, [&](int i) { f(n * i / t, n * (i + 1) / t); });
}

}  // namespace crucible::kernels::cpu
