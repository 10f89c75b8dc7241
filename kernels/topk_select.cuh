#pragma once
// Per-row top-k over fp32 logits with the softmax probabilities of the kept tokens: what an EAGLE
// draft does after each draft forward (SGLang: fast_topk(softmax(logits))), and, at k = 1 without
// the probabilities, the target's greedy argmax over the verify rows.
// Key choice: a few rows (the verify's 4 x 128k-vocab argmax) would keep only `rows` SMs busy, so
// each row is split into chunks and the work runs in two stages. Stage 1 (rows x chunks blocks)
// reduces one chunk with 16-byte loads (scalar for the few elements before the first 16-byte
// boundary and after the last) to its sorted top-k (value, index) and its softmax partial
// (max, sum of exp(x - max)); stage 2 (one block per row) merges the chunks x k candidates and
// combines the partials. With enough rows to fill the GPU a row is one chunk and stage 1 writes
// the result directly. Both stages run one block selection: each thread keeps its best k
// candidates in a sorted list in registers (k <= 16), then k rounds of a block argmax over the
// threads' list heads. Equal logits go to the lower token index in every comparison, so the
// result is deterministic, independent of the chunking, and matches a stable CPU reference.
// Hardware: any CUDA GPU.
#include <cfloat>
#include <cstdint>

namespace eaglesim::kernels::cycle {

constexpr int kTopkMax = 16;
constexpr int kTopkThreads = 256;

__device__ __forceinline__ bool ranks_before(float a, int ia, float b, int ib) {
  return a > b || (a == b && ia < ib);
}

// (m, s) absorbs (om, os): the softmax partial of the union; m == -FLT_MAX marks an empty partial.
__device__ __forceinline__ void softmax_combine(float& m, float& s, float om, float os) {
  const float nm = fmaxf(m, om);
  s = (m == -FLT_MAX ? 0.f : s * __expf(m - nm)) + (om == -FLT_MAX ? 0.f : os * __expf(om - nm));
  m = nm;
}

// One thread's best k candidates, best first, and its online softmax partial.
struct TopkList {
  float v[kTopkMax];
  int i[kTopkMax];
  float m, s;

  __device__ __forceinline__ void clear() {
    for (int r = 0; r < kTopkMax; ++r) {
      v[r] = -FLT_MAX;
      i[r] = INT32_MAX;
    }
    m = -FLT_MAX;
    s = 0.f;
  }
  // A candidate into the sorted list (any index order: ties compare the indices).
  __device__ __forceinline__ void keep(float x, int t, int k) {
    if (!ranks_before(x, t, v[k - 1], i[k - 1])) return;
    int p = k - 1;
    while (p > 0 && ranks_before(x, t, v[p - 1], i[p - 1])) {
      v[p] = v[p - 1];
      i[p] = i[p - 1];
      --p;
    }
    v[p] = x;
    i[p] = t;
  }
  // A logit: into the softmax partial and the list.
  __device__ __forceinline__ void add(float x, int t, int k) {
    if (x > m) {
      s = s * __expf(m - x) + 1.f;
      m = x;
    } else {
      s += __expf(x - m);
    }
    keep(x, t, k);
  }
};

// The block's k best of its threads' lists into out_v/out_i [k] (best first; empty slots
// -FLT_MAX / INT32_MAX) and its softmax partial into out_ml[0] (max), out_ml[1] (sum), written by
// thread 0. Every thread of the block calls it; blockDim.x is a multiple of 32.
__device__ void block_select(TopkList& list, int k, float* out_v, int* out_i, float* out_ml) {
  __shared__ float warp_v[32], warp_m[32], warp_s[32];
  __shared__ int warp_i[32], warp_t[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  float m = list.m, s = list.s;
  for (int o = 16; o > 0; o >>= 1)
    softmax_combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  if (lane == 0) {
    warp_m[warp] = m;
    warp_s[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float bm = -FLT_MAX, bs = 0.f;
    for (int w = 0; w < warps; ++w) softmax_combine(bm, bs, warp_m[w], warp_s[w]);
    out_ml[0] = bm;
    out_ml[1] = bs;
  }

  // k rounds: the best head over the block wins and its thread moves to its next entry.
  int head = 0;
  for (int r = 0; r < k; ++r) {
    float v = head < k ? list.v[head] : -FLT_MAX;
    int i = head < k ? list.i[head] : INT32_MAX;
    int owner = threadIdx.x;
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, i, o), ot = __shfl_xor_sync(0xffffffffu, owner, o);
      if (ranks_before(ov, oi, v, i)) {
        v = ov;
        i = oi;
        owner = ot;
      }
    }
    __syncthreads();  // the previous round's winners are read
    if (lane == 0) {
      warp_v[warp] = v;
      warp_i[warp] = i;
      warp_t[warp] = owner;
    }
    __syncthreads();
    float bv = warp_v[0];
    int bi = warp_i[0], bt = warp_t[0];
    for (int w = 1; w < warps; ++w)
      if (ranks_before(warp_v[w], warp_i[w], bv, bi)) {
        bv = warp_v[w];
        bi = warp_i[w];
        bt = warp_t[w];
      }
    if (threadIdx.x == bt) ++head;
    if (threadIdx.x == 0) {
      out_v[r] = bv;
      out_i[r] = bi;
    }
  }
}

// The block's selection as the row's result: ids[k], probs[k] (probs may be null).
__device__ void write_row_result(TopkList& list, int k, int vocab, std::int32_t* ids, float* probs) {
  __shared__ float best_v[kTopkMax], ml[2];
  __shared__ int best_i[kTopkMax];
  block_select(list, k, best_v, best_i, ml);
  __syncthreads();
  if (threadIdx.x < k) {
    const int bi = best_i[threadIdx.x];
    ids[threadIdx.x] = bi < vocab ? bi : -1;
    if (probs) probs[threadIdx.x] = bi < vocab ? __expf(best_v[threadIdx.x] - ml[0]) / ml[1] : 0.f;
  }
}

// Stage 1: block b reduces chunk b % chunks of row b / chunks, elements
// [c * chunk, min(vocab, (c + 1) * chunk)). chunks == 1: the row's result into ids/probs
// [row * k + r]; otherwise the chunk's candidates into cand_v/cand_i [(row * chunks + c) * k + r]
// and its softmax partial into part_ml [(row * chunks + c) * 2 + {0, 1}].
__global__ void __launch_bounds__(kTopkThreads)
topk_select_chunk_kernel(const float* __restrict__ logits, int vocab, int k, int chunks, int chunk,
                         std::int32_t* __restrict__ ids, float* __restrict__ probs, float* __restrict__ cand_v,
                         int* __restrict__ cand_i, float* __restrict__ part_ml) {
  const int row = blockIdx.x / chunks, c = blockIdx.x % chunks;
  const float* x = logits + static_cast<std::size_t>(row) * vocab;
  const int begin = c * chunk, end = min(vocab, begin + chunk);
  // Elements before the first 16-byte boundary of the chunk, then whole float4s, then the tail.
  const int misaligned = static_cast<int>((reinterpret_cast<std::uintptr_t>(x + begin) / sizeof(float)) % 4);
  const int body = min(end, begin + (4 - misaligned) % 4);
  const int quads = (end - body) / 4;
  const int tail = body + quads * 4;
  TopkList list;
  list.clear();
  for (int t = begin + static_cast<int>(threadIdx.x); t < body; t += blockDim.x) list.add(x[t], t, k);
  const float4* x4 = reinterpret_cast<const float4*>(x + body);
  for (int q = threadIdx.x; q < quads; q += blockDim.x) {
    const float4 f = x4[q];
    const int t = body + 4 * q;
    list.add(f.x, t, k);
    list.add(f.y, t + 1, k);
    list.add(f.z, t + 2, k);
    list.add(f.w, t + 3, k);
  }
  for (int t = tail + static_cast<int>(threadIdx.x); t < end; t += blockDim.x) list.add(x[t], t, k);

  if (chunks == 1) {
    write_row_result(list, k, vocab, ids + static_cast<std::size_t>(row) * k,
                     probs ? probs + static_cast<std::size_t>(row) * k : nullptr);
    return;
  }
  const std::size_t slot = static_cast<std::size_t>(row) * chunks + c;
  block_select(list, k, cand_v + slot * k, cand_i + slot * k, part_ml + slot * 2);
}

// Stage 2: one block per row merges its chunks x k candidates and softmax partials into
// ids/probs [row * k + r].
__global__ void __launch_bounds__(kTopkThreads)
topk_select_merge_kernel(const float* __restrict__ cand_v, const int* __restrict__ cand_i,
                         const float* __restrict__ part_ml, int vocab, int k, int chunks,
                         std::int32_t* __restrict__ ids, float* __restrict__ probs) {
  const int row = blockIdx.x;
  const std::size_t first = static_cast<std::size_t>(row) * chunks;
  TopkList list;
  list.clear();
  for (int j = threadIdx.x; j < chunks * k; j += blockDim.x)
    list.keep(cand_v[first * k + j], cand_i[first * k + j], k);
  for (int c = threadIdx.x; c < chunks; c += blockDim.x)
    softmax_combine(list.m, list.s, part_ml[(first + c) * 2], part_ml[(first + c) * 2 + 1]);
  write_row_result(list, k, vocab, ids + static_cast<std::size_t>(row) * k,
                   probs ? probs + static_cast<std::size_t>(row) * k : nullptr);
}

}  // namespace eaglesim::kernels::cycle
