#pragma once
// The verify tree of one cycle from the draft's scores, as SGLang builds it
// (speculative/eagle_utils.py organize_draft_results + build_tree_kernel_efficient): per
// request, the tokens - 1 best-scoring of the `candidates` drafts, in candidate order, become
// nodes 1..tokens-1 under the root; each node's parent is its candidate's parent, and the tree's
// index arrays follow: depth (the position offset), the ancestor-or-self mask words, first child
// and next sibling (what the greedy acceptance walks).
// Key choice: one block per request and every phase parallel over the block, no sort and no
// atomics: up to one candidate per thread (1024), a candidate's rank is the number that score
// higher (equal scores: the lower candidate first), from a pass over the scores staged in
// shared memory; beyond that, the (tokens - 1)-th best score is found by a radix search over
// the scores' bits (32 block-wide counts); a node's index is a block-wide prefix count; then
// one thread per node finds its parent node, walks its ancestors (at most the draft's depth) for depth and mask,
// and finds its next sibling and whether it is its parent's first child from the parent array
// in shared memory. Draft scores are products of probabilities along the path, so a parent
// always outranks its children and is selected with them.
// Hardware: any CUDA GPU.
#include <cstddef>
#include <cstdint>

namespace eaglesim::kernels::cycle {

constexpr int kTreeBuildThreads = 1024;  // one candidate per thread up to (8, 10, 64)'s 710

// Shared memory tree_build_kernel needs: the per-node arrays, plus the scores when they fit
// (stage_scores); without them the rank loop reads the scores from global memory.
__host__ __device__ constexpr std::size_t tree_build_node_smem(int tokens) {
  return static_cast<std::size_t>(tokens) * 2 * sizeof(std::int32_t);
}

// A float's bits as an unsigned key in the float order (-0 and +0 equal).
__device__ __forceinline__ std::uint32_t order_key(float f) {
  const std::uint32_t u = f == 0.0f ? 0u : __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Block-wide sum of one int per thread (blockDim.x a multiple of 32, warp_sums one per warp).
__device__ __forceinline__ int block_sum(int v, int* warp_sums) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  if ((threadIdx.x & 31u) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  int total = 0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums free for the next call
  return total;
}

// Block-wide inclusive prefix sum of one int per thread in thread order; total: the block's sum.
__device__ __forceinline__ int block_prefix(int v, int* warp_sums, int& total) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  int incl = v;
  for (int d = 1; d < 32; d <<= 1) {
    const int up = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= static_cast<unsigned>(d)) incl += up;
  }
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  int before = 0;
  total = 0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) {
    if (w < warp) before += warp_sums[w];
    total += warp_sums[w];
  }
  __syncthreads();
  return before + incl;
}

// scores, cand_parent [batch, candidates] (cand_parent: the candidate index of the parent, -1
// the root). Outputs per request b: node_of [candidates] (the candidate's node, -1 when not
// selected), and [tokens] each: parent (node index, -1 for the root), depth, first_child,
// next_sibling (-1: none), and mask [tokens, words] with words = ceil(tokens / 32). A selected
// candidate whose parent was not selected (scores that are not path products), or whose parent
// does not precede it in candidate order, hangs from the root.
__global__ void __launch_bounds__(kTreeBuildThreads)
    tree_build_kernel(const float* __restrict__ scores, const std::int32_t* __restrict__ cand_parent, int candidates,
                      int tokens, bool stage_scores, std::int32_t* __restrict__ node_of,
                      std::int32_t* __restrict__ parent, std::int32_t* __restrict__ depth,
                      std::int32_t* __restrict__ first_child, std::int32_t* __restrict__ next_sibling,
                      std::uint32_t* __restrict__ mask) {
  extern __shared__ std::int32_t smem[];
  std::int32_t* pnode = smem;            // [tokens] parent node of each node
  std::int32_t* cand_of = smem + tokens;  // [tokens] candidate of each node
  float* s_scores = reinterpret_cast<float*>(smem + 2 * tokens);
  __shared__ int warp_sums[kTreeBuildThreads / 32];

  const int b = blockIdx.x, tid = threadIdx.x;
  const float* g_scores = scores + static_cast<std::int64_t>(b) * candidates;
  const std::int32_t* cp = cand_parent + static_cast<std::int64_t>(b) * candidates;
  std::int32_t* nodes = node_of + static_cast<std::int64_t>(b) * candidates;
  const int drafts = tokens - 1;
  if (stage_scores)
    for (int c = tid; c < candidates; c += blockDim.x) s_scores[c] = g_scores[c];
  __syncthreads();
  const float* sc = stage_scores ? s_scores : g_scores;

  if (candidates <= static_cast<int>(blockDim.x)) {
    // One candidate per thread: its rank is the number of candidates that score higher (equal
    // scores: the lower index first), a branch-free pass over the staged scores (broadcast
    // reads, 32 warps to hide them); the node index is one block-wide prefix count.
    int rank = 0;
    if (tid < candidates) {
      const float v = sc[tid];
#pragma unroll 8
      for (int o = 0; o < candidates; ++o) {
        const float w = sc[o];
        rank += (w > v) | ((w == v) & (o < tid));
      }
    }
    const int selected = tid < candidates && rank < drafts ? 1 : 0;
    int total = 0;
    const int n = block_prefix(selected, warp_sums, total);  // 1-based node index
    if (tid < candidates) {
      nodes[tid] = selected ? n : -1;
      if (selected) cand_of[n] = tid;
    }
  } else {
    // More candidates than threads: the drafts-th largest score by a radix search over an
    // order-preserving key (32 block-wide counts), then the candidates above it and, of those
    // equal to it, the first ones in candidate order, numbered in chunks of one candidate per
    // thread by block-wide prefix counts of the ties and of the selected candidates (`ties_before`
    // and `base` carry the counts of the chunks before).
    auto count_keys = [&](std::uint32_t bound, bool strictly_above) {
      int k = 0;
      for (int c = tid; c < candidates; c += blockDim.x) {
        const std::uint32_t key = order_key(sc[c]);
        k += (strictly_above ? key > bound : key >= bound) ? 1 : 0;
      }
      return block_sum(k, warp_sums);  // the same answer in every thread
    };
    std::uint32_t kth = 0;
    for (int bit = 31; bit >= 0; --bit) {
      const std::uint32_t trial = kth | (1u << bit);
      if (count_keys(trial, false) >= drafts) kth = trial;
    }
    const int ties_taken = drafts - count_keys(kth, true);
    int base = 0, ties_before = 0;
    for (int start = 0; start < candidates; start += blockDim.x) {
      const int c = start + tid;
      const std::uint32_t key = c < candidates ? order_key(sc[c]) : 0u;
      const int tie = c < candidates && key == kth ? 1 : 0;
      int tie_total = 0;
      const int tie_rank = ties_before + block_prefix(tie, warp_sums, tie_total);  // inclusive
      const int selected = c < candidates && (key > kth || (tie && tie_rank <= ties_taken)) ? 1 : 0;
      int total = 0;
      const int n = base + block_prefix(selected, warp_sums, total);  // 1-based node index
      if (c < candidates) {
        nodes[c] = selected ? n : -1;
        if (selected) cand_of[n] = c;
      }
      base += total;
      ties_before += tie_total;
    }
  }
  __syncthreads();  // node_of and cand_of complete for the whole block

  // Parent node of every node (the root's is -1).
  for (int n = tid; n < tokens; n += blockDim.x) {
    int p = -1;
    if (n > 0) {
      const int pc = cp[cand_of[n]];
      p = pc < 0 ? 0 : nodes[pc];
      if (p < 0 || p >= n) p = 0;  // unselected, or not a preceding candidate: under the root
    }
    pnode[n] = p;
  }
  __syncthreads();

  const std::int64_t at = static_cast<std::int64_t>(b) * tokens;
  const int words = (tokens + 31) / 32;
  for (int n = tid; n < tokens; n += blockDim.x) {
    // Depth and the ancestor-or-self mask row, by walking up to the root.
    std::uint32_t* row = mask + (at + n) * words;
    for (int w = 0; w < words; ++w) row[w] = 0u;
    int d = 0;
    for (int a = n;; a = pnode[a]) {
      row[a / 32] |= 1u << (a % 32);
      if (a == 0) break;
      ++d;
    }
    parent[at + n] = pnode[n];
    depth[at + n] = d;
    // Children in node order: a node's first child is the lowest node under it, its next
    // sibling the next node under the same parent.
    int first = -1;
    for (int m = n + 1; m < tokens; ++m)
      if (pnode[m] == n) {
        first = m;
        break;
      }
    first_child[at + n] = first;
    int next = -1;
    if (n > 0)
      for (int m = n + 1; m < tokens; ++m)
        if (pnode[m] == pnode[n]) {
          next = m;
          break;
        }
    next_sibling[at + n] = next;
  }
}

}  // namespace eaglesim::kernels::cycle
