#pragma once
// Move-only owners of a CUDA stream and of a CUDA event, created on the current device and
// destroyed with their owner (on any path out, an exception included).
#include <cuda_runtime.h>

#include "cuda/runtime/unique_handle.hpp"

namespace eaglesim::cuda {

// Non-blocking: the replay's, calibration's and bench-comm's streams never wait for the legacy
// default stream, where the setup's synchronous copies and fills run.
class Stream : public UniqueHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  Stream();
};

// With timing (cudaEventDefault): every event here brackets or marks work that is timed.
class Event : public UniqueHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  Event();
};

// Milliseconds from `start` to `stop`, both completed.
float elapsed_ms(cudaEvent_t start, cudaEvent_t stop);

}  // namespace eaglesim::cuda
