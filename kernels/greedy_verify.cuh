#pragma once
// Greedy acceptance of a verify tree (SGLang: verify_tree_greedy, speculative/eagle_utils.py):
// per request, from the root, follow the child whose draft token equals the target's argmax at
// the current node, until no child matches. The argmax itself is the top-k selection
// (topk_select.cuh) at k = 1.
// Key choice: one thread per request walking first-child / next-sibling lists, as the engine's
// kernel does; the walk is at most num_draft_tokens steps and reads a few hundred bytes.
// Hardware: any CUDA GPU.
#include <cstdint>

namespace eaglesim::kernels::cycle {

// Per request b (tokens nodes each, node 0 the root): draft[b * tokens + n] the token node n
// proposes, predict[b * tokens + n] the target's argmax at node n, first_child / next_sibling
// the tree's lists (node indices, -1 none; one tree for every request). Writes accept_len[b]
// (draft tokens accepted) and accepted[b * tokens + j], j <= accept_len[b]: the tokens the cycle
// emits (the accepted drafts and the target's token after them).
__global__ void greedy_verify_kernel(const std::int32_t* __restrict__ draft, const std::int32_t* __restrict__ predict,
                                     const std::int32_t* __restrict__ first_child,
                                     const std::int32_t* __restrict__ next_sibling, int batch, int tokens,
                                     std::int32_t* __restrict__ accept_len, std::int32_t* __restrict__ accepted) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const std::int64_t base = static_cast<std::int64_t>(b) * tokens;
  int node = 0, len = 0;
  for (;;) {
    const std::int32_t target = predict[base + node];
    accepted[base + len] = target;
    int child = first_child[node];
    while (child >= 0 && draft[base + child] != target) child = next_sibling[child];
    if (child < 0) break;
    node = child;
    ++len;
  }
  accept_len[b] = len;
}

}  // namespace eaglesim::kernels::cycle
