#pragma once
// fused_allreduce_rmsnorm — one-shot allreduce + residual add + RMSNorm in one kernel.
//
// Purpose:      for a [tokens, hidden] activation x (this rank's partial sum):
//                 residual = residual + allreduce(x)          (written back, dtype T)
//                 normed   = residual * rsqrt(mean(residual^2) + eps) * weight
//               which is what every TP decoder layer does after its attention and MLP
//               allreduces. Unfused that is three kernels and two extra round trips through HBM.
// Key optimisations:
//   * few long rows (the decode/verify case, e.g. 3 x 7168): each row is SPLIT over C blocks
//     (fused_allreduce_rmsnorm_split). One block per row would leave the NVLink pull of a
//     14 KiB row to a single SM, whose outstanding remote loads cap it (measurably slower than
//     the plain one-shot: docs/results.md, "Allreduce kernels"); split, the pull is spread like
//     the one-shot's. The
//     row's sum of squares is then combined across its C blocks from one partial per WARP (C x W
//     values), in one fixed order (row_total_of_partials) so that every block of the row and
//     every rank compute the same bits, in one of two ways (RowSync, chosen by the host; both
//     give identical results):
//       - rendezvous (the default): lane 0 of every warp publishes its partial as an
//         epoch-tagged 64-bit word (Signal::row_partial, never reset) and warp 0 of every block
//         polls the row's C x W words, then one __syncthreads hands the total to the block.
//         Per-warp words instead of one per block keep a block reduction (two __syncthreads) off
//         the path. Needs all blocks co-resident: grid <= SM count.
//       - cluster (opt-in, sm_90+, C <= 8): the row's C blocks form one thread-block cluster.
//         The warps leave their partials in shared memory, one hardware cluster barrier, then
//         warp 0 reads the C x W partials through distributed shared memory (DSMEM); a second,
//         split barrier (arrive after the reads, wait just before exit) keeps each block's
//         shared memory alive until its peers have read it. Slower than the rendezvous on
//         NVLink (the cluster launch costs more than the L2 round trip it saves; docs/results.md).
//     The host splits only while the grid stays small (src/comm/fused_split_plan.hpp): a larger
//     grid already spreads the pull, and more blocks only add barrier and launch cost;
//   * many rows: one block per token row (rows round-robin over <= kMaxBlocks blocks): the row's
//     sum of squares is a block reduction, no intra-GPU rendezvous at all;
//   * a single cross-GPU barrier per block, the one-shot pull protocol of oneshot_allreduce.cuh
//     (fused input copy, double-buffered slots, fixed rank order): every rank gets a
//     bitwise-identical residual and normed output;
//   * rows of up to 4 x blockDim units stay in registers (peer packs, old residual, weight),
//     weight and old residual are loaded between announcing the cross-GPU barrier and waiting
//     for it, under the wait (loaded before the announcement they delay its release store);
//   * the norm uses the residual ROUNDED to T (as the unfused residual_add -> rmsnorm sequence
//     would).
// Use case:     the `fused` strategy: small decode/verify activations (a few tokens x hidden).
//               residual_rmsnorm (bottom) is the plain unfused tail, used after the NCCL
//               fallback of oversize calls.
// Hardware:     P2P between all ranks; sm_70+ (the cluster row sync: sm_90+); the split kernel
//               relies on its whole grid being resident at once (the host caps grids at the SM
//               count and kMaxBlocks; a cluster launch schedules each cluster's blocks together).
//
// Registered slot layout: row t at t * row_units * 16 bytes (rows padded to whole 16-byte
// units, so the peer reads are always packed even when hidden*sizeof(T) % 16 != 0).
#include <cooperative_groups.h>

#include "ar_common.cuh"
#include "block_reduce.cuh"

namespace eaglesim::kernels {

// The residual update of one 16-byte unit: next = round_T(next + s) element by element (as the
// unfused residual add would store it); returns the sum of squares of the rounded values, which
// is what the norm uses. Padding elements of a partial unit are 0 + 0 and add nothing.
template <typename T>
__device__ __forceinline__ float add_residual(Pack<T>& next, const Pack<T>& s) {
  float sq = 0.f;
#pragma unroll
  for (int i = 0; i < Pack<T>::kElems; ++i) {
    next.v[i] = Elem<T>::from_f(Elem<T>::to_f(next.v[i]) + Elem<T>::to_f(s.v[i]));
    const float x = Elem<T>::to_f(next.v[i]);
    sq += x * x;
  }
  return sq;
}

// normed = x * inv_rms * weight for one unit, rounded to T.
template <typename T>
__device__ __forceinline__ Pack<T> rms_scaled(const Pack<T>& x, float inv_rms, const Pack<T>& w) {
  Pack<T> y;
#pragma unroll
  for (int i = 0; i < Pack<T>::kElems; ++i)
    y.v[i] = Elem<T>::from_f(Elem<T>::to_f(x.v[i]) * inv_rms * Elem<T>::to_f(w.v[i]));
  return y;
}

struct FusedRows {
  std::size_t tokens = 0;
  std::size_t hidden = 0;
  float eps = 1e-5f;
  bool aligned = false;  // all user pointers 16-byte aligned and hidden*sizeof(T) % 16 == 0
};

// Row split of fused_allreduce_rmsnorm_split: grid = tokens * chunks; block b handles chunk
// b % chunks of row b / chunks, i.e. row units [chunk * chunk_units, (chunk + 1) * chunk_units).
struct FusedSplit {
  int chunks = 1;
  std::size_t chunk_units = 0;
};

// Residual add + RMSNorm of one row whose reduced sum is produced by `sum_unit(u)`.
template <typename T, typename SumUnit>
__device__ __forceinline__ void residual_rmsnorm_row(const FusedRows& f, std::size_t row, T* residual,
                                                     const T* weight, T* normed, float* scratch,
                                                     SumUnit sum_unit) {
  const std::size_t row_units = units_of<T>(f.hidden);
  T* res_row = residual + row * f.hidden;
  T* out_row = normed + row * f.hidden;
  float sq = 0.f;
  for (std::size_t u = threadIdx.x; u < row_units; u += blockDim.x) {
    Pack<T> next = load_user<T>(res_row, u, f.hidden, f.aligned);  // old residual (zero-padded)
    sq += add_residual<T>(next, sum_unit(u));
    store_user<T>(res_row, u, f.hidden, f.aligned, next);
  }
  const float inv_rms = rsqrtf(block_sum(sq, scratch) / static_cast<float>(f.hidden) + f.eps);
  for (std::size_t u = threadIdx.x; u < row_units; u += blockDim.x) {
    const Pack<T> x = load_user<T>(res_row, u, f.hidden, f.aligned);  // this thread's own writes
    store_user<T>(out_row, u, f.hidden, f.aligned, rms_scaled<T>(x, inv_rms, load_user<T>(weight, u, f.hidden, f.aligned)));
  }
}

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) fused_allreduce_rmsnorm(RankArgs a, const T* in, FusedRows f, T* residual,
                                                                    const T* weight, T* normed) {
  __shared__ float scratch[32];
  const uint32_t epoch = call_epoch(a);
  const std::size_t row_units = units_of<T>(f.hidden);
  const std::size_t row_bytes = row_units * 16;

  const char* slots[N];
#pragma unroll
  for (int r = 0; r < N; ++r) slots[r] = slot_of(a.buffers[r], a.slot_bytes, epoch);
  char* mine = slot_of(a.buffers[a.rank], a.slot_bytes, epoch);

  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x)
    for (std::size_t u = threadIdx.x; u < row_units; u += blockDim.x)
      store_reg<T>(mine + row * row_bytes, u, load_user<T>(in + row * f.hidden, u, f.hidden, f.aligned));

  if (!block_barrier<N>(a, kPhaseStart, epoch)) return;

  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x) {
    const char* rows[N];
#pragma unroll
    for (int r = 0; r < N; ++r) rows[r] = slots[r] + row * row_bytes;
    residual_rmsnorm_row<T>(f, row, residual, weight, normed, scratch,
                            [&](std::size_t u) { return sum_fixed_order<T, N>(rows, u); });
  }
  finish_call(a, epoch);
}

// Register-resident variant for rows of at most U * blockDim.x units (hidden <= 16384 bf16 with
// U = 4): each thread keeps its units of the row (peer packs, old residual, weight) in
// registers, so the dependent-latency chain is: input copy -> barrier -> ONE round of peer
// loads -> block reduction -> store. The generic kernel above walks the row twice and re-reads
// the residual from memory, which costs measurably more at verify-step sizes (docs/results.md).
// The weight is loaded under the barrier's wait, while the peers are still arriving.
template <typename T, int N, int U>
__global__ void __launch_bounds__(kThreads) fused_allreduce_rmsnorm_regs(RankArgs a, const T* in, FusedRows f,
                                                                         T* residual, const T* weight, T* normed) {
  __shared__ float scratch[32];
  const uint32_t epoch = call_epoch(a);
  const std::size_t row_units = units_of<T>(f.hidden);
  const std::size_t row_bytes = row_units * 16;
  char* mine = slot_of(a.buffers[a.rank], a.slot_bytes, epoch);

  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x)
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (u < row_units)
        store_reg<T>(mine + row * row_bytes, u, load_user<T>(in + row * f.hidden, u, f.hidden, f.aligned));
    }
  block_arrive<N>(a, kPhaseStart, epoch);
  Pack<T> w[U];  // loaded while the peers arrive (see the split kernel)
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
    if (u < row_units) w[k] = load_user<T>(weight, u, f.hidden, f.aligned);
  }
  if (!block_wait<N>(a, kPhaseStart, epoch)) return;

  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x) {
    T* res_row = residual + row * f.hidden;
    Pack<T> v[U][N], next[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (u < row_units) {
        next[k] = load_user<T>(res_row, u, f.hidden, f.aligned);  // old residual for now
#pragma unroll
        for (int r = 0; r < N; ++r)
          v[k][r] = load_reg<T>(slot_of(a.buffers[r], a.slot_bytes, epoch) + row * row_bytes, u);
      }
    }
    float sq = 0.f;
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (u < row_units) {
        sq += add_residual<T>(next[k], sum_packs<T, N>(v[k]));
        store_user<T>(res_row, u, f.hidden, f.aligned, next[k]);
      }
    }
    const float inv_rms = rsqrtf(block_sum(sq, scratch) / static_cast<float>(f.hidden) + f.eps);
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (u < row_units) store_user<T>(normed + row * f.hidden, u, f.hidden, f.aligned, rms_scaled<T>(next[k], inv_rms, w[k]));
    }
  }
  finish_call(a, epoch);
}

// How the C blocks of one split row combine their partial sums of squares (see the header).
enum class RowSync {
  rendezvous,  // epoch-tagged words in global memory (Signal::row_partial), polled: any sm_70+
  cluster,     // the row's blocks form one thread-block cluster: DSMEM + hardware barrier, sm_90+
};
// Portable cluster size (no opt-in attribute needed): the most chunks RowSync::cluster takes.
constexpr int kMaxClusterChunks = 8;

// The row's sum of squares from its `count` = C x W warp partials (C blocks of W warps; partial
// j belongs to warp j % W of the row's block j / W), in ONE fixed order whatever the row sync:
// lane l adds partials l, l + 32, ... in increasing j, then a butterfly over the lanes. So every
// block of the row, on every rank, with either RowSync, gets the same bits. Called by one whole
// warp; `fetch(j, value)` returns false to give up (peer failure, abort, timeout). Every lane
// gets the total; returns false when any lane gave up.
template <typename Fetch>
__device__ __forceinline__ bool row_total_of_partials(int count, Fetch fetch, float& total) {
  float acc = 0.f;
  bool ok = true;
  for (int j = threadIdx.x % 32; j < count && ok; j += 32) {
    float v = 0.f;
    ok = fetch(j, v);
    acc += v;
  }
  total = warp_sum(acc);
  return __all_sync(0xffffffffu, ok);
}

// Second half of the split cluster barrier: waits until every block of the cluster has read its
// peers' shared memory, so this block's may go away.
__device__ __forceinline__ void cluster_exit_wait() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  cooperative_groups::this_cluster().barrier_wait();
#endif
}

// Row-split variant for few long rows (see the header): each block owns one chunk of one row,
// at most U units per thread, all in registers. Sequence per block: input copy -> announce the
// cross-GPU barrier -> weight and old residual loads -> wait for the peers -> ONE round of peer
// loads -> one partial sum of squares per WARP -> warp 0 combines the row's C x W partials
// (fixed order, row_total_of_partials; kSync says how they travel) -> one __syncthreads ->
// residual and normed stores. Publishing per warp, not per block, keeps a block reduction (two
// __syncthreads) off the path between the peer loads and the rendezvous, and no store queues
// ahead of the publish. What each part costs over the one-shot (the row sync most, then the
// pre-barrier loads and the two output stores) is in docs/results.md, "Allreduce kernels".
// RowSync::cluster must be launched with cluster dimension {chunks, 1, 1} (so the cluster rank
// of a block is its chunk) and chunks <= kMaxClusterChunks; it never returns before both cluster
// barriers, also when the cross-GPU barrier failed (then it skips the data and the stores).
// blockDim.x must be a multiple of 32 (the host sizes it so).
template <typename T, int N, int U, RowSync kSync>
__global__ void __launch_bounds__(kThreads) fused_allreduce_rmsnorm_split(RankArgs a, const T* in, FusedRows f,
                                                                          FusedSplit sp, T* residual,
                                                                          const T* weight, T* normed) {
  constexpr bool kCluster = kSync == RowSync::cluster;
  __shared__ float2 row_result;                          // (total, ok) from warp 0 to the block
  __shared__ float warp_partials[kCluster ? kMaxWarps : 1];  // cluster: read by the row's blocks
  __shared__ int block_ok;                               // cluster: this block passed the barrier
  const uint32_t epoch = call_epoch(a);
  const std::size_t row_units = units_of<T>(f.hidden);
  const std::size_t row_bytes = row_units * 16;
  const std::size_t row = blockIdx.x / sp.chunks;
  const int chunk = static_cast<int>(blockIdx.x % sp.chunks);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  const std::size_t begin = chunk * sp.chunk_units;
  const std::size_t end = begin + sp.chunk_units < row_units ? begin + sp.chunk_units : row_units;
  const T* in_row = in + row * f.hidden;
  T* res_row = residual + row * f.hidden;
  char* mine = slot_of(a.buffers[a.rank], a.slot_bytes, epoch) + row * row_bytes;

  auto unit_of = [&](int k) { return begin + threadIdx.x + static_cast<std::size_t>(k) * blockDim.x; };
  Pack<T> w[U], next[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = unit_of(k);
    if (u < end) store_reg<T>(mine, u, load_user<T>(in_row, u, f.hidden, f.aligned));
  }
  // Announce first, then load the weight and the old residual while the peers arrive: loaded
  // before the announcement, they would hold up its release store (measurably slower).
  block_arrive<N>(a, kPhaseStart, epoch);
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = unit_of(k);
    if (u < end) {
      w[k] = load_user<T>(weight, u, f.hidden, f.aligned);
      next[k] = load_user<T>(res_row, u, f.hidden, f.aligned);  // old residual for now
    }
  }
  const bool arrived = block_wait<N>(a, kPhaseStart, epoch);
  if (!kCluster && !arrived) return;  // a cluster block must still take part in both barriers

  float sq = 0.f;
  if (arrived) {  // always true here for the rendezvous (the compiler drops the test)
    Pack<T> v[U][N];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = unit_of(k);
      if (u < end) {
#pragma unroll
        for (int r = 0; r < N; ++r)
          v[k][r] = load_reg<T>(slot_of(a.buffers[r], a.slot_bytes, epoch) + row * row_bytes, u);
      }
    }
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t u = unit_of(k);
      if (u < end) sq += add_residual<T>(next[k], sum_packs<T, N>(v[k]));  // stored after the row sync
    }
  }
  const float partial = warp_sum(sq);
  const int count = sp.chunks * warps;

  if constexpr (kCluster) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    if (lane == 0) warp_partials[warp] = partial;
    if (threadIdx.x == 0) block_ok = arrived ? 1 : 0;
    cluster.sync();  // arrive.release / wait.acquire: every block's partials are written and visible
    if (warp == 0) {
      float total = 0.f;
      const bool ok = row_total_of_partials(
          count,
          [&](int j, float& value) {
            const unsigned block = static_cast<unsigned>(j / warps);  // cluster rank = chunk
            if (*cluster.map_shared_rank(&block_ok, block) == 0) return false;
            value = cluster.map_shared_rank(warp_partials, block)[j % warps];
            return true;
          },
          total);
      if (lane == 0) row_result = make_float2(total, ok ? 1.f : 0.f);
    }
    cluster.barrier_arrive();  // this thread's DSMEM reads are done; peers may exit after the wait
#else
    __trap();  // the host launches RowSync::cluster only on sm_90+ code (Group: ptxVersion check)
#endif
  } else {
    // Thread 0 of each warp publishes its partial; warp 0 polls the row's C x W words.
    unsigned long long* words = a.signals[a.rank]->row_partial;
    if (lane == 0)
      st_relaxed_gpu_u64(&words[blockIdx.x * kMaxWarps + warp],
                         (static_cast<unsigned long long>(epoch) << 32) | __float_as_uint(partial));
    if (warp == 0) {
      const std::size_t row_first = row * sp.chunks;
      float total = 0.f;
      const bool ok = row_total_of_partials(
          count,
          [&](int j, float& value) {
            const unsigned long long* word = &words[(row_first + j / warps) * kMaxWarps + j % warps];
            unsigned long long seen = 0;
            const bool got = spin_until(
                [&] {
                  seen = ld_relaxed_gpu_u64(word);
                  return static_cast<uint32_t>(seen >> 32) == epoch;
                },
                a);
            value = __uint_as_float(static_cast<uint32_t>(seen));
            return got;
          },
          total);
      if (lane == 0) row_result = make_float2(total, ok ? 1.f : 0.f);
    }
  }
  __syncthreads();  // row_result from warp 0
  if (row_result.y == 0.f) {
    if constexpr (kCluster) cluster_exit_wait();
    return;
  }
  const float inv_rms = rsqrtf(row_result.x / static_cast<float>(f.hidden) + f.eps);
  // Both outputs only now: a residual store before the publish would queue ahead of it.
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const std::size_t u = unit_of(k);
    if (u < end) {
      store_user<T>(res_row, u, f.hidden, f.aligned, next[k]);
      store_user<T>(normed + row * f.hidden, u, f.hidden, f.aligned, rms_scaled<T>(next[k], inv_rms, w[k]));
    }
  }
  finish_call(a, epoch);
  if constexpr (kCluster) cluster_exit_wait();
}

// The unfused tail on its own: residual += sum; normed = rmsnorm(residual) * weight, where `sum`
// is an already reduced [tokens, hidden] array (used after the NCCL fallback of oversize calls).
template <typename T>
__global__ void __launch_bounds__(kThreads) residual_rmsnorm(const T* sum, FusedRows f, T* residual, const T* weight,
                                                             T* normed) {
  __shared__ float scratch[32];
  for (std::size_t row = blockIdx.x; row < f.tokens; row += gridDim.x) {
    const T* sum_row = sum + row * f.hidden;
    residual_rmsnorm_row<T>(f, row, residual, weight, normed, scratch,
                            [&](std::size_t u) { return load_user<T>(sum_row, u, f.hidden, f.aligned); });
  }
}

}  // namespace eaglesim::kernels
