#pragma once
// Programmatic dependent launch (PDL). Device side: launched with programmatic stream
// serialization, a kernel starts while the kernel ahead of it finishes; it must not touch anything
// that kernel reads or writes before wait_for_previous_grid() returns (the previous grid
// complete, its writes visible). Launched plainly, both calls are no-ops. Host side: the launch
// attribute every early-starting kernel of the replay is launched with, and the one stream that
// never gets it.
#include <cuda_runtime.h>

namespace eaglesim::kernels {

// Returns once the grid this one depends on has completed and its writes are visible.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the stream's next kernel launch now (when it was launched with programmatic
// serialization); it still waits for this grid's completion before it reads what this one writes.
__device__ __forceinline__ void allow_next_grid_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Whether a launch on `stream` may start early: not on the legacy NULL stream, which synchronises
// implicitly with every other stream, an order programmatic serialization would relax.
inline bool early_start_allowed(cudaStream_t stream) { return stream != nullptr && stream != cudaStreamLegacy; }

// The launch attribute that lets the kernel start while the one ahead of it in the stream ends.
inline cudaLaunchAttribute early_start_attribute() {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  return attr;
}

}  // namespace eaglesim::kernels
