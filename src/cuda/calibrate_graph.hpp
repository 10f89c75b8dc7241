#pragma once
// Capturing a sequence of enqueues into a CUDA graph and timing its replays the way the replay
// backend times a step (step_replay.cpp): a GPU pre-roll spin hides the host's graph submission,
// events around the graph, median over replays. Used by calibration for per-op chains.
#include <functional>
#include <vector>

#include <cuda_runtime.h>

namespace eaglesim::cuda {

class CapturedGraph {
 public:
  CapturedGraph() = default;
  // Captures body(stream) (thread-local capture mode, as the replay backend).
  CapturedGraph(cudaStream_t stream, const std::function<void(cudaStream_t)>& body);
  ~CapturedGraph();
  CapturedGraph(CapturedGraph&& o) noexcept;
  CapturedGraph& operator=(CapturedGraph&& o) noexcept;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  cudaGraphExec_t exec() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Start/stop events of one stream plus the waiting, with a deadline: a replay not finished
// within timeout_s throws DeviceError after calling on_timeout (e.g. abort the communicators).
class GraphTimer {
 public:
  GraphTimer(double timeout_s, std::function<void()> on_timeout = {});
  ~GraphTimer();
  GraphTimer(const GraphTimer&) = delete;
  GraphTimer& operator=(const GraphTimer&) = delete;
  // Launches pre-roll + graph and returns immediately; finish() waits and returns µs.
  void launch(const CapturedGraph& g, cudaStream_t stream);
  // Enqueues body(stream) directly, between the same events. NCCL sets up a size's connections
  // on its first (eager) call; a capture before that fails with an internal error.
  void launch_eager(const std::function<void(cudaStream_t)>& body, cudaStream_t stream);
  double finish(const char* what);

 private:
  double timeout_s_;
  std::function<void()> on_timeout_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace eaglesim::cuda
