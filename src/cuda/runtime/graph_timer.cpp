#include "cuda/runtime/graph_timer.hpp"

#include <chrono>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/ops/replay_kernels.hpp"

namespace eaglesim::cuda {

GraphTimer::GraphTimer(const char* who, double pre_roll_us, double timeout_s, std::function<void()> on_timeout)
    : who_(who), pre_roll_us_(pre_roll_us), timeout_s_(timeout_s), on_timeout_(std::move(on_timeout)) {}

void GraphTimer::launch(const CudaGraph& graph, cudaStream_t stream) {
  launch_body([&graph](cudaStream_t s) { graph.launch(s); }, stream);
}

void GraphTimer::launch_body(const std::function<void(cudaStream_t)>& body, cudaStream_t stream) {
  if (pre_roll_us_ > 0) launch_spin(pre_roll_us_, stream);
  EAGLESIM_CUDA_CHECK(cudaEventRecord(start_.get(), stream));
  body(stream);
  EAGLESIM_CUDA_CHECK(cudaEventRecord(stop_.get(), stream));
}

void GraphTimer::launch_eager(const std::function<void(cudaStream_t)>& body, cudaStream_t stream) {
  EAGLESIM_CUDA_CHECK(cudaEventRecord(start_.get(), stream));
  body(stream);
  EAGLESIM_CUDA_CHECK(cudaEventRecord(stop_.get(), stream));
}

double GraphTimer::finish(const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  for (;;) {
    const cudaError_t rc = cudaEventQuery(stop_.get());
    if (rc == cudaSuccess) break;
    if (rc != cudaErrorNotReady) EAGLESIM_CUDA_CHECK(rc);
    if (timeout_s_ != kNoDeadline && std::chrono::steady_clock::now() > deadline) {
      if (on_timeout_) on_timeout_();
      throw DeviceError(
          fmt::format("{}: {} did not finish within {} s (a peer GPU stopped?)", who_, what, timeout_s_));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return elapsed_ms() * 1000.0;
}

float GraphTimer::elapsed_ms() const { return cuda::elapsed_ms(start_.get(), stop_.get()); }

}  // namespace eaglesim::cuda
