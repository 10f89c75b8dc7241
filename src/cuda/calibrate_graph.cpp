#include "cuda/calibrate_graph.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/replay_kernels.hpp"

namespace eaglesim::cuda {

namespace {
// Longer than the host needs to submit a graph of ~2000 nodes, as in step_replay.cpp.
constexpr double kPreRollUs = 200;
}  // namespace

CapturedGraph::CapturedGraph(cudaStream_t stream, const std::function<void(cudaStream_t)>& body) {
  EAGLESIM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    body(stream);
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  EAGLESIM_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  const cudaError_t rc = cudaGraphInstantiate(&exec_, graph, 0);
  cudaGraphDestroy(graph);
  EAGLESIM_CUDA_CHECK(rc);
}

CapturedGraph::~CapturedGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
}

CapturedGraph::CapturedGraph(CapturedGraph&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}

CapturedGraph& CapturedGraph::operator=(CapturedGraph&& o) noexcept {
  if (this != &o) {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = std::exchange(o.exec_, nullptr);
  }
  return *this;
}

GraphTimer::GraphTimer(double timeout_s, std::function<void()> on_timeout)
    : timeout_s_(timeout_s), on_timeout_(std::move(on_timeout)) {
  EAGLESIM_CUDA_CHECK(cudaEventCreate(&start_));
  EAGLESIM_CUDA_CHECK(cudaEventCreate(&stop_));
}

GraphTimer::~GraphTimer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

void GraphTimer::launch(const CapturedGraph& g, cudaStream_t stream) {
  launch_spin(kPreRollUs, stream);
  EAGLESIM_CUDA_CHECK(cudaEventRecord(start_, stream));
  EAGLESIM_CUDA_CHECK(cudaGraphLaunch(g.exec(), stream));
  EAGLESIM_CUDA_CHECK(cudaEventRecord(stop_, stream));
}

void GraphTimer::launch_eager(const std::function<void(cudaStream_t)>& body, cudaStream_t stream) {
  EAGLESIM_CUDA_CHECK(cudaEventRecord(start_, stream));
  body(stream);
  EAGLESIM_CUDA_CHECK(cudaEventRecord(stop_, stream));
}

double GraphTimer::finish(const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  for (;;) {
    const cudaError_t rc = cudaEventQuery(stop_);
    if (rc == cudaSuccess) break;
    if (rc != cudaErrorNotReady) EAGLESIM_CUDA_CHECK(rc);
    if (std::chrono::steady_clock::now() > deadline) {
      if (on_timeout_) on_timeout_();
      throw DeviceError(fmt::format("calibrate: {} did not finish within {} s (a peer GPU stopped?)", what, timeout_s_));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  float ms = 0;
  EAGLESIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms * 1000.0;
}

}  // namespace eaglesim::cuda
