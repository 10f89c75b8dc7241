#pragma once
// reference_allreduce — the plain, readable allreduce the optimised kernels are checked against.
//
// Purpose:      out = sum over ranks of in, one element per thread per step, no vector loads,
//               no unrolling. Same protocol as the others (copy into the registered slot, one
//               start barrier, sum in rank order 0..N-1 in fp32), so its result must be
//               BITWISE equal to oneshot's and twoshot's; tests use that.
// Optimisations: none on purpose.
// Use case:     tests and debugging; strategy name "reference" (not offered to users).
// Hardware:     P2P (NVLink or PCIe) between all ranks; any sm_70+ GPU.
#include "ar_common.cuh"

namespace eaglesim::kernels {

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) reference_allreduce(RankArgs a, const T* in, T* out, std::size_t count) {
  const uint32_t epoch = call_epoch(a);
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;

  T* mine = reinterpret_cast<T*>(slot_of(a.buffers[a.rank], a.slot_bytes, epoch));
  for (std::size_t i = first; i < count; i += stride) mine[i] = in[i];

  if (!block_barrier<N>(a, kPhaseStart, epoch)) return;

  for (std::size_t i = first; i < count; i += stride) {
    float sum = 0.f;
    for (int r = 0; r < N; ++r) {
      const T* theirs = reinterpret_cast<const T*>(slot_of(a.buffers[r], a.slot_bytes, epoch));
      sum += Elem<T>::to_f(__ldcg(reinterpret_cast<const T*>(theirs) + i));
    }
    out[i] = Elem<T>::from_f(sum);
  }
  finish_call(a, epoch);
}

}  // namespace eaglesim::kernels
