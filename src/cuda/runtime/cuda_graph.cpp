#include "cuda/runtime/cuda_graph.hpp"

#include <utility>

#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_guard.hpp"

namespace eaglesim::cuda {

CudaGraph CudaGraph::capture(cudaStream_t stream, const std::function<void(cudaStream_t)>& body) {
  GraphCapture capture(stream, cudaStreamCaptureModeThreadLocal);
  body(stream);
  return capture.finish();
}

void CudaGraph::launch(cudaStream_t stream) const { EAGLESIM_CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream)); }

GraphCapture::GraphCapture(cudaStream_t stream, cudaStreamCaptureMode mode) : stream_(stream) {
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device_));
  EAGLESIM_CUDA_CHECK(cudaStreamBeginCapture(stream, mode));
  open_ = true;
}

GraphCapture::~GraphCapture() { discard(); }

GraphCapture::GraphCapture(GraphCapture&& o) noexcept
    : stream_(o.stream_), device_(o.device_), open_(std::exchange(o.open_, false)) {}

CudaGraph GraphCapture::finish() {
  DeviceGuard guard(device_);
  open_ = false;
  cudaGraph_t graph = nullptr;
  EAGLESIM_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  CudaGraph out;
  const cudaError_t rc = cudaGraphInstantiate(out.exec_.out(), graph, 0);
  cudaGraphDestroy(graph);  // the instantiated graph does not need it
  EAGLESIM_CUDA_CHECK(rc);
  return out;
}

std::optional<CudaGraph> GraphCapture::try_finish() noexcept {
  QuietDeviceGuard guard(device_);
  open_ = false;
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream_, &graph) != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    return std::nullopt;
  }
  CudaGraph out;
  const cudaError_t rc = cudaGraphInstantiate(out.exec_.out(), graph, 0);
  cudaGraphDestroy(graph);
  if (rc != cudaSuccess) return std::nullopt;
  return out;
}

void GraphCapture::discard() noexcept {
  if (!open_) return;
  open_ = false;
  QuietDeviceGuard guard(device_);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream_, &graph);
  if (graph) cudaGraphDestroy(graph);
}

}  // namespace eaglesim::cuda
