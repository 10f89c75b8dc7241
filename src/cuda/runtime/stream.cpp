#include "cuda/runtime/stream.hpp"

#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

Stream::Stream() { EAGLESIM_CUDA_CHECK(cudaStreamCreateWithFlags(out(), cudaStreamNonBlocking)); }

Event::Event() { EAGLESIM_CUDA_CHECK(cudaEventCreate(out())); }

float elapsed_ms(cudaEvent_t start, cudaEvent_t stop) {
  float ms = 0;
  EAGLESIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms;
}

}  // namespace eaglesim::cuda
