#pragma once
// A reusable barrier for the per-GPU threads (C++17 has no std::barrier). Abortable: when one
// rank fails, the others must not wait for it forever, so abort() releases every waiter and
// makes each wait() return false.
#include <condition_variable>
#include <mutex>

namespace eaglesim::cuda {

class HostBarrier {
 public:
  explicit HostBarrier(int parties) : parties_(parties) {}

  // True when every party arrived; false when the barrier was aborted.
  bool wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_) return false;
    const long generation = generation_;
    if (++arrived_ == parties_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return true;
    }
    cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
    return !aborted_ || generation_ != generation;
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int parties_;
  int arrived_ = 0;
  long generation_ = 0;
  bool aborted_ = false;
};

}  // namespace eaglesim::cuda
