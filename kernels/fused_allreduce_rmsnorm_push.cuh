#pragma once
// fused_allreduce_rmsnorm_push — the fused allreduce + residual add + RMSNorm for few long rows,
// PUSH protocol: no intra-GPU rendezvous.
//
// Purpose:      the same result as fused_allreduce_rmsnorm_split (fused_allreduce_rmsnorm.cuh):
//                 residual = residual + allreduce(x);  normed = rmsnorm(residual) * weight
//               for a few rows of a wide hidden size (the verify step's 3-4 tokens x 7168).
// Why push:     a row is split over C blocks so that no single SM has to move a whole row over
//               the interconnect. With PULL (the split kernel) each block reads its chunk from
//               every peer and then the C blocks of a row must meet to add their partial sums of
//               squares: a second barrier, through L2 or a cluster, on the critical path. With
//               PUSH each block writes its chunk of x into every rank's receive area (posted
//               remote stores, no round trip), and the barrier is widened to the row: a block
//               goes on once every block of its row on every rank has pushed. Then the whole row
//               is in LOCAL memory, so every block reads all of it (local L2 reads are cheap),
//               computes the row's sum of squares itself, and writes the outputs of its own chunk.
//               The redundant local reads replace the rendezvous.
// Sequence per block: load own chunk of x -> push it to every rank's area [self] -> load the whole
//               row's OLD residual and the chunk's weight (before announcing: see below) -> row
//               barrier -> load the row from the N local areas -> fp32 sum in rank order,
//               residual rounded to T, sum of squares (block reduction, same thread layout in
//               every block: every block of the row and every rank get the same bits) -> store
//               the chunk's new residual and normed output.
// The old residual race: block c overwrites its chunk of the residual while its siblings need the
//               old values for their sums of squares. Every block therefore loads the whole
//               row's old residual into registers BEFORE it announces itself (the release store
//               orders those loads before the flag), and nobody writes before the row barrier,
//               which needs every sibling's announcement.
// Constraints (the host checks them): blockDim.x >= chunk_units (one unit per thread of the
//               own chunk), row_units <= kPushRowUnitsPerThread * blockDim.x, grid = tokens x
//               chunks <= SM count (all blocks resident: they wait for each other), slot of
//               N receive areas (slot_bytes / N each, as oneshot_push).
// Hardware:     P2P between all ranks; sm_70+.
#include "fused_allreduce_rmsnorm.cuh"

namespace eaglesim::kernels {

// Units of the whole row each thread handles for the sum of squares (registers: old residual).
constexpr int kPushRowUnitsPerThread = 4;

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) fused_allreduce_rmsnorm_push(RankArgs a, const T* in, FusedRows f,
                                                                         FusedSplit sp, T* residual,
                                                                         const T* weight, T* normed) {
  constexpr int R = kPushRowUnitsPerThread;
  __shared__ float scratch[32];
  const uint32_t epoch = call_epoch(a);
  const std::size_t row_units = units_of<T>(f.hidden);
  const std::size_t row_bytes = row_units * 16;
  const std::size_t area = a.slot_bytes / N;
  const std::size_t row = blockIdx.x / sp.chunks;
  const int chunk = static_cast<int>(blockIdx.x % sp.chunks);
  const std::size_t u_own = chunk * sp.chunk_units + threadIdx.x;  // this thread's unit of the chunk
  const std::size_t chunk_end = (chunk + 1) * sp.chunk_units < row_units ? (chunk + 1) * sp.chunk_units : row_units;
  const bool has_own = threadIdx.x < sp.chunk_units && u_own < chunk_end;
  const T* in_row = in + row * f.hidden;
  T* res_row = residual + row * f.hidden;

  Pack<T> w, next;
  if (has_own) {
    const Pack<T> v = load_user<T>(in_row, u_own, f.hidden, f.aligned);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int r = (a.rank + k) % N;  // stagger the targets so ranks do not all hit rank 0 first
      store_reg<T>(slot_of(a.buffers[r], a.slot_bytes, epoch) + a.rank * area + row * row_bytes, u_own, v);
    }
    w = load_user<T>(weight, u_own, f.hidden, f.aligned);
    next = load_user<T>(res_row, u_own, f.hidden, f.aligned);  // old residual for now
  }
  Pack<T> old[R];
#pragma unroll
  for (int j = 0; j < R; ++j) {
    const std::size_t u = threadIdx.x + static_cast<std::size_t>(j) * blockDim.x;
    if (u < row_units) old[j] = load_user<T>(res_row, u, f.hidden, f.aligned);
  }

  if (!row_barrier<N>(a, kPhaseStart, epoch, row * sp.chunks, sp.chunks)) return;

  const char* own_slot = slot_of(a.buffers[a.rank], a.slot_bytes, epoch) + row * row_bytes;
  Pack<T> full[R][N], mine[N];
#pragma unroll
  for (int j = 0; j < R; ++j) {
    const std::size_t u = threadIdx.x + static_cast<std::size_t>(j) * blockDim.x;
    if (u < row_units) {
#pragma unroll
      for (int s = 0; s < N; ++s) full[j][s] = load_reg<T>(own_slot + s * area, u);
    }
  }
  if (has_own) {
#pragma unroll
    for (int s = 0; s < N; ++s) mine[s] = load_reg<T>(own_slot + s * area, u_own);
  }
  float sq = 0.f;
#pragma unroll
  for (int j = 0; j < R; ++j) {
    const std::size_t u = threadIdx.x + static_cast<std::size_t>(j) * blockDim.x;
    if (u < row_units) sq += add_residual<T>(old[j], sum_packs<T, N>(full[j]));
  }
  if (has_own) {
    add_residual<T>(next, sum_packs<T, N>(mine));  // the same bits as the row pass for this unit
    store_user<T>(res_row, u_own, f.hidden, f.aligned, next);
  }
  const float inv_rms = rsqrtf(block_sum(sq, scratch) / static_cast<float>(f.hidden) + f.eps);
  if (has_own) store_user<T>(normed + row * f.hidden, u_own, f.hidden, f.aligned, rms_scaled<T>(next, inv_rms, w));
  finish_call(a, epoch);
}

}  // namespace eaglesim::kernels
