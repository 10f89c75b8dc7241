#pragma once
// Per-row top-k over fp32 logits with the softmax probabilities of the kept tokens: what an EAGLE
// draft does after each draft forward (SGLang: fast_topk(softmax(logits))), and, at k = 1 without
// the probabilities, the target's greedy argmax over the verify rows.
// Key choice: the selection is a streaming reduction, so it is shaped to run at the HBM floor.
// Each row is split into chunks so that rows x chunks blocks fill the SMs several times over (a
// few verify rows would otherwise keep only `rows` SMs busy); one kernel does everything, and the
// last block of a row to finish (a per-row atomic counter in the workspace, reset by that block)
// merges the chunks' candidates, so there is no second launch.
// Per thread: 16-byte loads, kTopkUnroll of them in flight, over elements in increasing index
// order. k = 1 keeps a running (max, index) with a strict compare (equal logits keep the lower
// index). k > 1 keeps the thread's best K (K = k rounded up to a power of two; its first k are the
// top-k) in a sorted register list and filters every element with one compare against a warp
// threshold: the largest of the lanes' K-th values, refreshed once per unrolled step. An element
// below it has K better elements in that lane and cannot be in the top-K, so the filter is exact
// and rejects almost every element once the lists have filled. The softmax partial (max, sum of
// exp(x - max)) is updated once per unrolled step with that step's max, not per element.
// The block's K best come from K rounds of a block argmax over the threads' list heads. Equal
// logits go to the lower token index in every comparison, so the result is deterministic,
// independent of the chunking, and matches a stable CPU reference.
// Hardware: sm_80 or newer (__reduce_max_sync).
#include <cfloat>
#include <cstdint>

namespace eaglesim::kernels::cycle {

constexpr int kTopkMax = 16;
constexpr int kTopkThreads = 256;
constexpr int kTopkUnroll = 4;  // float4 loads in flight per thread

__device__ __forceinline__ bool ranks_before(float a, int ia, float b, int ib) {
  return a > b || (a == b && ia < ib);
}

// (m, s) absorbs (om, os): the softmax partial of the union; m == -FLT_MAX marks an empty partial.
__device__ __forceinline__ void softmax_combine(float& m, float& s, float om, float os) {
  const float nm = fmaxf(m, om);
  s = (m == -FLT_MAX ? 0.f : s * __expf(m - nm)) + (om == -FLT_MAX ? 0.f : os * __expf(om - nm));
  m = nm;
}

// Floats as ints that order as the floats do (an involution), for the warp max instruction.
__device__ __forceinline__ int ordered_key(float x) {
  const int b = __float_as_int(x);
  return b >= 0 ? b : b ^ 0x7fffffff;
}
__device__ __forceinline__ float from_ordered_key(int b) { return __int_as_float(b >= 0 ? b : b ^ 0x7fffffff); }

// One thread's best K candidates, best first (empty slots -FLT_MAX / INT32_MAX). Every index is
// static, so the list lives in registers.
template <int K>
struct TopkList {
  float v[K];
  int i[K];

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int r = 0; r < K; ++r) {
      v[r] = -FLT_MAX;
      i[r] = INT32_MAX;
    }
  }
  // (x, t) into the list, given that it ranks before the last entry. All comparisons read the
  // list before it changes: slot p takes slot p - 1 when x ranks before that, x when x ranks
  // before slot p only, else keeps its entry.
  __device__ __forceinline__ void insert(float x, int t) {
    bool before_next = true;  // x ranks before slot p (known for p = K - 1)
#pragma unroll
    for (int p = K - 1; p > 0; --p) {
      const bool before_prev = ranks_before(x, t, v[p - 1], i[p - 1]);
      if (before_prev) {
        v[p] = v[p - 1];
        i[p] = i[p - 1];
      } else if (before_next) {
        v[p] = x;
        i[p] = t;
      }
      before_next = before_prev;
    }
    if (before_next) {
      v[0] = x;
      i[0] = t;
    }
  }
  // A candidate in any index order.
  __device__ __forceinline__ void keep(float x, int t) {
    if (ranks_before(x, t, v[K - 1], i[K - 1])) insert(x, t);
  }
  // The head leaves the list.
  __device__ __forceinline__ void pop() {
#pragma unroll
    for (int p = 0; p + 1 < K; ++p) {
      v[p] = v[p + 1];
      i[p] = i[p + 1];
    }
    v[K - 1] = -FLT_MAX;
    i[K - 1] = INT32_MAX;
  }
};

// One thread's stream over its elements (increasing index order): the list, the softmax partial
// and the warp threshold.
template <int K, bool kProbs>
struct ChunkScan {
  TopkList<K> list;
  float m = -FLT_MAX, s = 0.f;  // softmax partial
  float thr = -FLT_MAX;         // no element below it can be in the top-K

  // An element whose index follows every element this thread has seen: a strict compare keeps
  // the lower index on equal logits.
  __device__ __forceinline__ void take(float x, int t) {
    if (K == 1) {
      if (x > list.v[0]) {
        list.v[0] = x;
        list.i[0] = t;
      }
    } else if (x > list.v[K - 1] && x >= thr) {
      list.insert(x, t);
    }
  }
  __device__ __forceinline__ void absorb_softmax(float step_max, const float* x, int n) {
    if (!kProbs) return;
    const float nm = fmaxf(m, step_max);
    float add = 0.f;
#pragma unroll
    for (int j = 0; j < n; ++j) add += __expf(x[j] - nm);
    s = (m == -FLT_MAX ? 0.f : s * __expf(m - nm)) + add;
    m = nm;
  }
  // N of this thread's float4s, the u-th at element index t[u] (increasing in u).
  template <int N>
  __device__ __forceinline__ void take_quads(const float4* f, const int* t) {
    float x[4 * N];
#pragma unroll
    for (int u = 0; u < N; ++u) {
      x[4 * u] = f[u].x;
      x[4 * u + 1] = f[u].y;
      x[4 * u + 2] = f[u].z;
      x[4 * u + 3] = f[u].w;
    }
    float step_max = x[0];
#pragma unroll
    for (int j = 1; j < 4 * N; ++j) step_max = fmaxf(step_max, x[j]);
    absorb_softmax(step_max, x, 4 * N);
    if (K == 1) {
#pragma unroll
      for (int j = 0; j < 4 * N; ++j) take(x[j], t[j / 4] + j % 4);
    } else if (step_max > list.v[K - 1] && step_max >= thr) {
#pragma unroll
      for (int j = 0; j < 4 * N; ++j) take(x[j], t[j / 4] + j % 4);
    }
  }
  __device__ __forceinline__ void take_scalar(float x, int t) {
    absorb_softmax(x, &x, 1);
    take(x, t);
  }
  // The warp's threshold: the largest K-th value of the lanes in `mask` (all at this call).
  __device__ __forceinline__ void refresh_threshold(unsigned mask) {
    if (K > 1) thr = from_ordered_key(__reduce_max_sync(mask, ordered_key(list.v[K - 1])));
  }
};

// Shared memory of one block's reductions.
struct TopkBlockShared {
  float round_v[2][32];
  int round_i[2][32];
  float warp_m[32], warp_s[32];
  float best_v[kTopkMax];
  int best_i[kTopkMax];
  float ml[2];
  int last;
};

// The block's softmax partial into sh.ml (valid after the next __syncthreads).
__device__ __forceinline__ void block_softmax(float m, float s, TopkBlockShared& sh) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    softmax_combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  if (lane == 0) {
    sh.warp_m[warp] = m;
    sh.warp_s[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float bm = -FLT_MAX, bs = 0.f;
    for (int w = 0; w < warps; ++w) softmax_combine(bm, bs, sh.warp_m[w], sh.warp_s[w]);
    sh.ml[0] = bm;
    sh.ml[1] = bs;
  }
}

// The block's K best of its threads' lists into sh.best_v / best_i (best first), valid after the
// next __syncthreads. K rounds of a block argmax over the list heads; the round's winner (the one
// thread holding that token) pops its head. The round buffers alternate, so one barrier a round
// suffices. Every thread of the block calls it; blockDim.x is a multiple of 32.
template <int K>
__device__ __forceinline__ void block_select(TopkList<K>& list, TopkBlockShared& sh) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#pragma unroll 1
  for (int r = 0; r < K; ++r) {
    float v = list.v[0];
    int i = list.i[0];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, i, o);
      if (ranks_before(ov, oi, v, i)) {
        v = ov;
        i = oi;
      }
    }
    if (lane == 0) {
      sh.round_v[r & 1][warp] = v;
      sh.round_i[r & 1][warp] = i;
    }
    __syncthreads();
    float bv = sh.round_v[r & 1][0];
    int bi = sh.round_i[r & 1][0];
    for (int w = 1; w < warps; ++w) {
      const float wv = sh.round_v[r & 1][w];
      const int wi = sh.round_i[r & 1][w];
      if (ranks_before(wv, wi, bv, bi)) {
        bv = wv;
        bi = wi;
      }
    }
    if (list.i[0] == bi && list.v[0] == bv) list.pop();
    if (threadIdx.x == 0) {
      sh.best_v[r] = bv;
      sh.best_i[r] = bi;
    }
  }
}

// The row's result from sh (after a barrier): ids[k], probs[k] (probs only with kProbs).
template <bool kProbs>
__device__ __forceinline__ void write_row_result(const TopkBlockShared& sh, int k, int vocab, std::int32_t* ids,
                                                 float* probs) {
  if (threadIdx.x < k) {
    const int bi = sh.best_i[threadIdx.x];
    ids[threadIdx.x] = bi < vocab ? bi : -1;
    if (kProbs) probs[threadIdx.x] = bi < vocab ? __expf(sh.best_v[threadIdx.x] - sh.ml[0]) / sh.ml[1] : 0.f;
  }
}

// The workspace of a split launch: per row a counter of finished chunks (zero between launches),
// per (row, chunk) slot its K candidates and its softmax partial.
struct TopkScratch {
  unsigned* done;  // [rows]
  float* cand_v;   // [rows * chunks * K]
  int* cand_i;     // [rows * chunks * K]
  float* part_ml;  // [rows * chunks * 2]
};

// Block b reduces chunk b % chunks of row b / chunks, elements [c * chunk, min(vocab, (c + 1) *
// chunk)). chunks == 1: the row's result into ids/probs [row * k + r]. Otherwise the chunk's K
// candidates and softmax partial into the scratch slot, and the row's last block to finish merges
// the row's slots into ids/probs and resets the row's counter.
template <int K, bool kProbs>
__global__ void __launch_bounds__(kTopkThreads)
topk_select_kernel(const float* __restrict__ logits, int vocab, int k, int chunks, int chunk,
                   std::int32_t* __restrict__ ids, float* __restrict__ probs, TopkScratch ws) {
  __shared__ TopkBlockShared sh;
  const int row = blockIdx.x / chunks, c = blockIdx.x % chunks;
  const float* x = logits + static_cast<std::size_t>(row) * vocab;
  const int begin = c * chunk, end = min(vocab, begin + chunk);
  // Elements before the first 16-byte boundary of the chunk (threads 0..2), then whole float4s,
  // then the tail (threads 0..2): each thread's elements are in increasing index order.
  const int misaligned = static_cast<int>((reinterpret_cast<std::uintptr_t>(x + begin) / sizeof(float)) % 4);
  const int body = min(end, begin + (4 - misaligned) % 4);
  const int quads = (end - body) / 4;
  const int tail = body + quads * 4;
  const int tid = static_cast<int>(threadIdx.x), threads = static_cast<int>(blockDim.x);
  ChunkScan<K, kProbs> scan;
  scan.list.clear();
  if (begin + tid < body) scan.take_scalar(__ldg(x + begin + tid), begin + tid);
  const float4* x4 = reinterpret_cast<const float4*>(x + body);
  // Unrolled steps while every lane of the warp has kTopkUnroll quads left (a warp-uniform
  // condition, so the warp threshold's shuffle sees the whole warp), then one quad at a time.
  int q = tid;
  const int lane = tid % 32;
  for (; q - lane + 31 + (kTopkUnroll - 1) * threads < quads; q += kTopkUnroll * threads) {
    float4 f[kTopkUnroll];
    int t[kTopkUnroll];
#pragma unroll
    for (int u = 0; u < kTopkUnroll; ++u) {
      f[u] = __ldg(x4 + q + u * threads);
      t[u] = body + 4 * (q + u * threads);
    }
    scan.template take_quads<kTopkUnroll>(f, t);
    scan.refresh_threshold(0xffffffffu);
  }
  for (; q < quads; q += threads) {
    const float4 f = __ldg(x4 + q);
    const int t = body + 4 * q;
    scan.template take_quads<1>(&f, &t);
  }
  if (tail + tid < end) scan.take_scalar(__ldg(x + tail + tid), tail + tid);

  if (kProbs) block_softmax(scan.m, scan.s, sh);
  block_select<K>(scan.list, sh);
  __syncthreads();
  if (chunks == 1) {
    write_row_result<kProbs>(sh, k, vocab, ids + static_cast<std::size_t>(row) * k,
                             kProbs ? probs + static_cast<std::size_t>(row) * k : nullptr);
    return;
  }

  // This chunk's slot, then the row's counter; the last block of the row merges.
  const std::size_t slot = static_cast<std::size_t>(row) * chunks + c;
  if (tid < K) {
    ws.cand_v[slot * K + tid] = sh.best_v[tid];
    ws.cand_i[slot * K + tid] = sh.best_i[tid];
  }
  if (kProbs && tid == 0) {
    ws.part_ml[slot * 2] = sh.ml[0];
    ws.part_ml[slot * 2 + 1] = sh.ml[1];
  }
  __threadfence();  // the slot is visible before the counter counts it
  __syncthreads();
  if (tid == 0) sh.last = atomicAdd(ws.done + row, 1u) == static_cast<unsigned>(chunks - 1);
  __syncthreads();
  if (!sh.last) return;
  __threadfence();  // the other blocks' slots are read after their counts

  const std::size_t first = static_cast<std::size_t>(row) * chunks;
  TopkList<K> list;
  list.clear();
  for (int j = tid; j < chunks * K; j += threads)
    list.keep(__ldcg(ws.cand_v + first * K + j), __ldcg(ws.cand_i + first * K + j));
  float m = -FLT_MAX, s = 0.f;
  if (kProbs)
    for (int j = tid; j < chunks; j += threads)
      softmax_combine(m, s, __ldcg(ws.part_ml + (first + j) * 2), __ldcg(ws.part_ml + (first + j) * 2 + 1));
  if (kProbs) block_softmax(m, s, sh);
  block_select<K>(list, sh);
  __syncthreads();
  write_row_result<kProbs>(sh, k, vocab, ids + static_cast<std::size_t>(row) * k,
                           kProbs ? probs + static_cast<std::size_t>(row) * k : nullptr);
  if (tid == 0) ws.done[row] = 0;  // ready for the next launch
}

}  // namespace eaglesim::kernels::cycle
