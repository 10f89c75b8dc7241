#pragma once
// Per-row top-k over fp32 logits with the softmax probabilities of the kept tokens: what an EAGLE
// draft does after each draft forward (SGLang: fast_topk(softmax(logits))), and, at k = 1 without
// the probabilities, the target's greedy argmax over the verify rows.
// Key choice: one block per row, each thread keeping its best k of the row's strided elements in
// a sorted list, then k rounds of a block argmax over the threads' list heads; k <= 16 keeps the
// lists in registers. Equal logits go to the lower token index, so the result is deterministic
// and matches a stable CPU reference. The softmax's max and sum are reduced alongside (online
// per thread, one combine over the block).
// Hardware: any CUDA GPU.
#include <cfloat>
#include <cstdint>

namespace eaglesim::kernels::cycle {

constexpr int kTopkMax = 16;
constexpr int kTopkThreads = 256;

__device__ __forceinline__ bool ranks_before(float a, int ia, float b, int ib) {
  return a > b || (a == b && ia < ib);
}

// ids[row * k + r], probs[row * k + r] (probs may be null: only the ids). One block per row.
__global__ void __launch_bounds__(kTopkThreads)
topk_select_kernel(const float* __restrict__ logits, int vocab, int k, std::int32_t* __restrict__ ids,
                   float* __restrict__ probs) {
  const float* row = logits + static_cast<std::size_t>(blockIdx.x) * vocab;
  float best_v[kTopkMax];
  int best_i[kTopkMax];
  for (int r = 0; r < kTopkMax; ++r) {
    best_v[r] = -FLT_MAX;
    best_i[r] = INT32_MAX;
  }
  float m = -FLT_MAX, s = 0.f;  // online softmax: running max and sum of exp(x - m)
  for (int t = threadIdx.x; t < vocab; t += blockDim.x) {
    const float x = row[t];
    if (x > m) {
      s = s * __expf(m - x) + 1.f;
      m = x;
    } else {
      s += __expf(x - m);
    }
    if (!ranks_before(x, t, best_v[k - 1], best_i[k - 1])) continue;
    int p = k - 1;  // insertion into the sorted list (t grows, so equal values stay behind)
    while (p > 0 && ranks_before(x, t, best_v[p - 1], best_i[p - 1])) {
      best_v[p] = best_v[p - 1];
      best_i[p] = best_i[p - 1];
      --p;
    }
    best_v[p] = x;
    best_i[p] = t;
  }

  __shared__ float warp_v[32], warp_m[32], warp_s[32];
  __shared__ int warp_i[32], warp_t[32];
  __shared__ float row_m, row_s;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  // The softmax's (max, sum) over the block.
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
    const float nm = fmaxf(m, om);
    s = (m == -FLT_MAX ? 0.f : s * __expf(m - nm)) + (om == -FLT_MAX ? 0.f : os * __expf(om - nm));
    m = nm;
  }
  if (lane == 0) {
    warp_m[warp] = m;
    warp_s[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float bm = -FLT_MAX, bs = 0.f;
    for (int w = 0; w < warps; ++w) {
      const float nm = fmaxf(bm, warp_m[w]);
      bs = (bm == -FLT_MAX ? 0.f : bs * __expf(bm - nm)) + (warp_m[w] == -FLT_MAX ? 0.f : warp_s[w] * __expf(warp_m[w] - nm));
      bm = nm;
    }
    row_m = bm;
    row_s = bs;
  }

  // k rounds: the best head over the block wins and its thread moves to its next entry.
  int head = 0;
  for (int r = 0; r < k; ++r) {
    float v = head < k ? best_v[head] : -FLT_MAX;
    int i = head < k ? best_i[head] : INT32_MAX;
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
      const std::size_t at = static_cast<std::size_t>(blockIdx.x) * k + r;
      ids[at] = bi < vocab ? bi : -1;
      if (probs) probs[at] = bi < vocab ? __expf(bv - row_m) / row_s : 0.f;
    }
  }
}

}  // namespace eaglesim::kernels::cycle
