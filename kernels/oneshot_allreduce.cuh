#pragma once
// oneshot_pull / oneshot_push — single-phase allreduce for small (latency-bound) messages.
//
// Purpose:      out = sum over ranks of in, in one kernel with ONE cross-GPU barrier.
//   pull: each rank copies its input into its registered slot, signals, then every rank reads
//         all N slots over the interconnect and sums them.
//   push: each rank writes its input into slot [self] of EVERY peer's receive area (remote
//         stores), signals, then sums its own N receive areas from local memory.
// Key optimisations:
//   * the input copy into the registered buffer is fused into the kernel (no extra memcpy
//     launch) and uses the same block partition as the reads, so the barrier is per block;
//   * double-buffered slots + monotonic epochs (ar_common.cuh): no end barrier, no reset;
//   * 16-byte packed loads/stores, all N peer loads in flight before the first add;
//   * fp32 accumulation in the fixed order 0..N-1: bitwise-identical results on every rank.
// Use case:     pull for NVLink/NVSwitch (remote reads are cheap, one barrier round trip);
//               push for PCIe, where posted remote writes beat remote reads (a read is a round
//               trip, a write is fire-and-forget) and the reduction reads local memory only.
//               Both move N x the message per rank: fine below ~1 MiB, twoshot wins above.
// Hardware:     P2P access between all ranks (cudaDeviceEnablePeerAccess or CUDA IPC);
//               sm_70+ (ld.acquire/st.release .sys).
#include "ar_common.cuh"

namespace eaglesim::kernels {

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) oneshot_pull(RankArgs a, const T* in, T* out, std::size_t count,
                                                         bool in_aligned, bool out_aligned) {
  const uint32_t epoch = call_epoch(a);
  const std::size_t units = units_of<T>(count);
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;

  const char* slots[N];
#pragma unroll
  for (int r = 0; r < N; ++r) slots[r] = slot_of(a.buffers[r], a.slot_bytes, epoch);
  char* mine = slot_of(a.buffers[a.rank], a.slot_bytes, epoch);

  for (std::size_t u = first; u < units; u += stride) store_reg<T>(mine, u, load_user<T>(in, u, count, in_aligned));

  if (!block_barrier<N>(a, kPhaseStart, epoch)) return;

  for (std::size_t u = first; u < units; u += stride)
    store_user<T>(out, u, count, out_aligned, sum_fixed_order<T, N>(slots, u));
  finish_call(a, epoch);
}

// Slot layout for push: N receive areas of slot_bytes / N each, area s holds rank s's input.
template <typename T, int N>
__global__ void __launch_bounds__(kThreads) oneshot_push(RankArgs a, const T* in, T* out, std::size_t count,
                                                         bool in_aligned, bool out_aligned) {
  const uint32_t epoch = call_epoch(a);
  const std::size_t units = units_of<T>(count);
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t area = a.slot_bytes / N;

  char* my_area_at[N];  // my area inside peer r's receive slot
#pragma unroll
  for (int r = 0; r < N; ++r) my_area_at[r] = slot_of(a.buffers[r], a.slot_bytes, epoch) + a.rank * area;

  for (std::size_t u = first; u < units; u += stride) {
    const Pack<T> v = load_user<T>(in, u, count, in_aligned);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int r = (a.rank + k) % N;  // stagger the targets so ranks do not all hit rank 0 first
      store_reg<T>(my_area_at[r], u, v);
    }
  }

  if (!block_barrier<N>(a, kPhaseStart, epoch)) return;

  const char* received[N];
  char* own_slot = slot_of(a.buffers[a.rank], a.slot_bytes, epoch);
#pragma unroll
  for (int s = 0; s < N; ++s) received[s] = own_slot + s * area;
  for (std::size_t u = first; u < units; u += stride)
    store_user<T>(out, u, count, out_aligned, sum_fixed_order<T, N>(received, u));
  finish_call(a, epoch);
}

}  // namespace eaglesim::kernels
