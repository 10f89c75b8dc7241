#include "cuda/runtime/watchdog.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

using Clock = std::chrono::steady_clock;

Watchdog::Watchdog(int ranks, double timeout_s, std::function<void()> on_timeout, std::function<std::string()> health)
    : timeout_s_(timeout_s), on_timeout_(std::move(on_timeout)), health_(std::move(health)), watches_(ranks) {
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::arm(int rank, int device, std::vector<WatchedOp> ops, const std::string& phase, std::size_t enqueued) {
  std::lock_guard<std::mutex> lock(mutex_);
  Watch& w = watches_.at(rank);
  w.armed = true;
  w.enqueued = enqueued;
  w.device = device;
  w.ops = std::move(ops);
  w.phase = phase;
  w.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
}

void Watchdog::progress(int rank, std::size_t enqueued) {
  std::lock_guard<std::mutex> lock(mutex_);
  watches_.at(rank).enqueued = enqueued;
}

void Watchdog::disarm(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  watches_.at(rank).armed = false;
}

void Watchdog::fire(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fired_) return;
    message_ = message;
    fired_ = true;
  }
  if (on_timeout_) on_timeout_();
}

std::string Watchdog::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

void Watchdog::wait(int rank, cudaEvent_t last) {
  for (;;) {
    if (fired_) throw DeviceError(message());
    const cudaError_t st = cudaEventQuery(last);
    if (st == cudaSuccess) break;
    if (st != cudaErrorNotReady) {
      fire(fmt::format("rank {}: CUDA error {} while waiting for the step", rank, cudaGetErrorString(st)));
      throw DeviceError(message());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  disarm(rank);
  if (fired_) throw DeviceError(message());  // completed only because the comm was aborted
}

void Watchdog::check_locked(int rank, Watch& w, Clock::time_point now) {
  if (!w.armed || now < w.deadline) return;
  // Name the first op whose completion event has not fired: that is where the rank is stuck.
  cudaSetDevice(w.device);
  std::string where = "the step";
  for (std::size_t i = 0; i < w.ops.size(); ++i) {
    if (i >= w.enqueued) { where = w.ops[i].label + " (its host thread is blocked enqueueing it)"; break; }
    if (cudaEventQuery(w.ops[i].done) != cudaSuccess) { where = w.ops[i].label; break; }
  }
  if (where == "the step" && !w.ops.empty()) return;  // finished just now
  message_ = fmt::format("rank {} (GPU {}): {} did not complete within {} s during {}; communicator aborted", rank,
                         w.device, where, timeout_s_, w.phase);
  w.armed = false;
  fired_ = true;
}

void Watchdog::loop() {
  auto next_health = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(2));
    if (stop_ || fired_) continue;
    const auto now = Clock::now();
    for (std::size_t r = 0; r < watches_.size() && !fired_; ++r) check_locked(static_cast<int>(r), watches_[r], now);
    if (!fired_ && health_ && now >= next_health) {
      next_health = now + std::chrono::milliseconds(50);
      lock.unlock();
      std::string err = health_();
      lock.lock();
      if (!err.empty() && !fired_) { message_ = err; fired_ = true; }
    }
    if (fired_ && on_timeout_) {
      lock.unlock();
      on_timeout_();
      lock.lock();
    }
  }
}

}  // namespace eaglesim::cuda
