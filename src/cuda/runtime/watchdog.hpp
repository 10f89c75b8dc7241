#pragma once
// Collective-timeout watchdog. Each rank thread arms a watch over the events it enqueued
// (one per op where the phase has them, else one for the whole step) before it waits; a
// separate thread polls those events (cudaEventQuery) and the communicator's health. When a
// watch is still pending after `timeout_s`, it names the rank and the first unfinished op,
// calls on_timeout (the CommGroup's abort, which makes a stuck NCCL kernel return) and stays
// fired: every later wait sees it and the run ends with a DeviceError (exit 3).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

namespace eaglesim::cuda {

struct WatchedOp {
  cudaEvent_t done = nullptr;  // recorded after the op
  std::string label;           // "op 12 'attn_allreduce' (allreduce 32768 B bf16, layer 0)"
};

class Watchdog {
 public:
  // health: polled every ~50 ms; a non-empty string is an error (e.g. NCCL async error).
  Watchdog(int ranks, double timeout_s, std::function<void()> on_timeout, std::function<std::string()> health = {});
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Arms the rank's deadline (now + timeout). `enqueued`: how many of `ops` the host thread has
  // already enqueued (the rest follow through progress()); an op not yet enqueued when the
  // deadline passes means the host thread itself is blocked inside that op's enqueue (e.g. NCCL
  // connection setup waiting for a peer that never comes).
  void arm(int rank, int device, std::vector<WatchedOp> ops, const std::string& phase, std::size_t enqueued);
  void progress(int rank, std::size_t enqueued);
  void disarm(int rank);
  // Blocks the calling rank thread until `last` completed; throws DeviceError when the
  // watchdog fired (on any rank) or the event reports an error.
  void wait(int rank, cudaEvent_t last);

  // Fire from outside (a rank thread failed): abort the communicator, remember why.
  void fire(const std::string& message);
  bool fired() const { return fired_.load(); }
  std::string message() const;

 private:
  struct Watch {
    bool armed = false;
    int device = 0;
    std::vector<WatchedOp> ops;
    std::size_t enqueued = 0;
    std::string phase;
    std::chrono::steady_clock::time_point deadline;
  };
  void loop();
  void check_locked(int rank, Watch& w, std::chrono::steady_clock::time_point now);

  double timeout_s_;
  std::function<void()> on_timeout_;
  std::function<std::string()> health_;
  std::vector<Watch> watches_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<bool> fired_{false};
  std::atomic<bool> stop_{false};
  std::string message_;
  std::thread thread_;
};

}  // namespace eaglesim::cuda
