// The CUDA side of the plug-in example in docs/strategies.md: the kernel that runs
// `example_reference` (example_strategy.cpp), registered under the same name. It launches the
// plain two-pass kernel of kernels/reference_allreduce.cuh on the custom group's registered
// buffers.
#include "cuda/comm/p2p_allreduce_kernel.cuh"

#include "reference_allreduce.cuh"

namespace eaglesim::cuda::example {

namespace {

template <typename T, int N>
struct TwoPassLaunch {
  static void run(const kernels::RankArgs& a, const void* in, void* out, std::size_t count, int limit,
                  cudaStream_t s) {
    launch_comm(kernels::reference_allreduce<T, N>, dim3(grid_for(count, limit)), dim3(kernels::kThreads), s, a,
                static_cast<const T*>(in), static_cast<T*>(out), count);
  }
};

void two_pass_allreduce(DType dtype, int ranks, const kernels::RankArgs& a, const void* in, void* out,
                        std::size_t count, int limit, cudaStream_t s) {
  dispatch<TwoPassLaunch>(dtype, ranks, a, in, out, count, limit, s);
}

// Every rank's input in one slot, as the reference kernel reads it.
std::size_t one_slot(int, std::size_t max_bytes, bool) { return padded_slot_bytes(max_bytes); }

P2pAllreduceKernel example_kernel() {
  P2pAllreduceKernel k;
  k.strategy = "example_reference";
  k.slot_bytes = one_slot;
  k.allreduce = two_pass_allreduce;
  return k;
}

const bool registered = (register_p2p_allreduce_kernel(example_kernel()), true);

}  // namespace

bool example_kernel_registered() { return registered; }

}  // namespace eaglesim::cuda::example
