#pragma once
// Timing the replays of a CUDA graph on one stream: [a GPU pre-roll spin,] an event, the graph,
// an event. The replay backend times its steps this way, calibration its chains of ops and
// bench-comm its graphs of allreduces, each rank with its own timer on its own stream.
// The pre-roll keeps the GPU busy while the host submits the graph, so the timed span holds the
// graph's GPU work and not its launch latency (tools/torch_reference_step.py does the same with
// torch.cuda._sleep); it must outlast the submission of the largest graph timed.
#include <functional>

#include <cuda_runtime.h>

#include "cuda/runtime/cuda_graph.hpp"
#include "cuda/runtime/stream.hpp"

namespace eaglesim::cuda {

// A replayed step: a graph of a few thousand nodes.
constexpr double kStepPreRollUs = 100;
// Calibration's chains: up to ~2000 nodes, with twice the step's margin.
constexpr double kChainPreRollUs = 200;
// bench-comm: no spin; a one-call graph run before each timed replay lines the ranks up instead
// (the host's launch skew between ranks is not counted).
constexpr double kNoPreRoll = 0;

// A timeout of 0: finish() waits as long as the replay takes (bench-comm's --timeout bounds
// each allreduce's wait for a peer inside the kernels, not a whole graph).
constexpr double kNoDeadline = 0;

class GraphTimer {
 public:
  // `who` names the command in the timeout message; a replay not finished within timeout_s
  // (unless kNoDeadline) throws DeviceError from finish() after calling on_timeout (e.g. abort
  // the communicators).
  GraphTimer(const char* who, double pre_roll_us, double timeout_s, std::function<void()> on_timeout = {});
  GraphTimer(const GraphTimer&) = delete;
  GraphTimer& operator=(const GraphTimer&) = delete;

  // Enqueues pre-roll + start event + graph + stop event and returns at once.
  void launch(const CudaGraph& graph, cudaStream_t stream);
  // The same around body(stream), which launches graphs (and may wait on the host between them:
  // a step with a host synchronisation, cuda/replay/step_graph.hpp).
  void launch_body(const std::function<void(cudaStream_t)>& body, cudaStream_t stream);
  // Enqueues body(stream) directly between the same events (no pre-roll). NCCL sets up a size's
  // connections on its first (eager) call; a capture before that fails with an internal error.
  void launch_eager(const std::function<void(cudaStream_t)>& body, cudaStream_t stream);
  // Waits for the stop event and returns the span in µs.
  double finish(const char* what);

  // For callers that wait themselves (the replay's watchdog): the stop event, and the span in
  // milliseconds once it completed.
  cudaEvent_t stop_event() const { return stop_.get(); }
  float elapsed_ms() const;

 private:
  const char* who_;
  double pre_roll_us_;
  double timeout_s_;
  std::function<void()> on_timeout_;
  Event start_, stop_;
};

}  // namespace eaglesim::cuda
