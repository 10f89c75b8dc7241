#pragma once
// Programmatic dependent launch on the device side, for the memory-bound glue kernels (row norms,
// point-wise ops). Launched with programmatic stream serialization, such a kernel starts while
// the kernel ahead of it finishes; it must not touch anything that kernel reads or writes before
// wait_for_previous_grid() returns (the previous grid complete, its writes visible). Launched
// plainly, both calls are no-ops.
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

}  // namespace eaglesim::kernels
