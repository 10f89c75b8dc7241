#pragma once
// twoshot — reduce-scatter then all-gather, in one kernel with two cross-GPU barriers.
//
// Purpose:      out = sum over ranks of in. The message is cut into N chunks; rank r reduces
//               chunk r (reading chunk r of every peer's input slot), publishes the reduced
//               chunk in its slot, and after a second barrier every rank gathers the other
//               N-1 reduced chunks.
// Key optimisations:
//   * each rank reads 2(N-1)/N of the message over the interconnect instead of (N-1)/1 for
//     one-shot, so it wins once bandwidth, not the extra barrier, dominates (~>=1 MiB on
//     NVLink, earlier on PCIe);
//   * fused input copy, per-block barriers, double-buffered slots (ar_common.cuh);
//   * every element is reduced once, by its owner, in rank order 0..N-1: all ranks end with
//     bitwise-identical results, equal to oneshot's.
// Use case:     medium and large messages (hundreds of KiB and up).
// Hardware:     P2P between all ranks; sm_70+.
//
// Slot layout: [input copy: slot_bytes/2][reduced chunks: slot_bytes/2].
// Work split: unit u of chunk c is handled by block (u-start_c)/blockDim % grid on every rank,
// in all three phases, so a block only depends on the same-index blocks of its peers.
#include "ar_common.cuh"

namespace eaglesim::kernels {

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) twoshot(RankArgs a, const T* in, T* out, std::size_t count,
                                                    bool in_aligned, bool out_aligned) {
  const uint32_t epoch = call_epoch(a);
  const std::size_t units = units_of<T>(count);
  const std::size_t chunk = (units + N - 1) / N;
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t half = a.slot_bytes / 2;

  const char* inputs[N];
#pragma unroll
  for (int r = 0; r < N; ++r) inputs[r] = slot_of(a.buffers[r], a.slot_bytes, epoch);
  char* my_input = slot_of(a.buffers[a.rank], a.slot_bytes, epoch);
  char* my_reduced = my_input + half;

  // Phase 0: copy my whole input, partitioned chunk by chunk exactly as the readers will read.
  for (int c = 0; c < N; ++c) {
    const std::size_t begin = c * chunk, end = min(units, begin + chunk);
    for (std::size_t u = begin + first; u < end; u += stride)
      store_reg<T>(my_input, u, load_user<T>(in, u, count, in_aligned));
  }
  if (!block_barrier<N>(a, kPhaseStart, epoch)) return;

  // Phase 1: reduce my chunk.
  {
    const std::size_t begin = a.rank * chunk, end = min(units, begin + chunk);
    for (std::size_t u = begin + first; u < end; u += stride) {
      const Pack<T> s = sum_fixed_order<T, N>(inputs, u);
      store_reg<T>(my_reduced, u, s);
      store_user<T>(out, u, count, out_aligned, s);
    }
  }
  if (!block_barrier<N>(a, kPhaseMid, epoch)) return;

  // Phase 2: gather the other ranks' reduced chunks.
#pragma unroll
  for (int k = 1; k < N; ++k) {
    const int c = (a.rank + k) % N;
    const char* reduced = slot_of(a.buffers[c], a.slot_bytes, epoch) + half;
    const std::size_t begin = c * chunk, end = min(units, begin + chunk);
    for (std::size_t u = begin + first; u < end; u += stride)
      store_user<T>(out, u, count, out_aligned, load_reg<T>(reduced, u));
  }
  finish_call(a, epoch);
}

}  // namespace eaglesim::kernels
