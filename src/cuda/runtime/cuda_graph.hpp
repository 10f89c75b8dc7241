#pragma once
// CUDA graphs: a capture in progress on one stream (GraphCapture) and the instantiated graph it
// yields (CudaGraph), both move-only. The replay captures a step per rank, calibration a chain
// of ops, bench-comm one graph per rank of back-to-back allreduces; all three capture, then
// launch the instantiated graph many times.
#include <functional>
#include <optional>

#include <cuda_runtime.h>

#include "cuda/runtime/unique_handle.hpp"

namespace eaglesim::cuda {

class CudaGraph {
 public:
  CudaGraph() = default;

  // Captures body(stream) in thread-local mode (other threads keep enqueueing on their own GPUs
  // meanwhile, as the replay's rank threads do) and instantiates it.
  static CudaGraph capture(cudaStream_t stream, const std::function<void(cudaStream_t)>& body);

  void launch(cudaStream_t stream) const;
  cudaGraphExec_t exec() const { return exec_.get(); }

 private:
  friend class GraphCapture;
  UniqueHandle<cudaGraphExec_t, cudaGraphExecDestroy> exec_;
};

// Begins capturing `stream` (on the device current now); a capture still open when its owner
// goes (an exception in the captured code) is ended and thrown away, so the stream stays usable.
class GraphCapture {
 public:
  GraphCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
  ~GraphCapture();
  GraphCapture(GraphCapture&& o) noexcept;
  GraphCapture& operator=(GraphCapture&&) = delete;
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

  // Ends the capture and instantiates the graph; DeviceError when either fails.
  CudaGraph finish();
  // The same without throwing: nothing when ending or instantiating failed (the caller clears
  // the error and carries on without the graph).
  std::optional<CudaGraph> try_finish() noexcept;
  // Ends the capture and throws away what it holds.
  void discard() noexcept;

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
  bool open_ = false;
};

}  // namespace eaglesim::cuda
