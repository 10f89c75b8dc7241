#pragma once
// The verify tree of one cycle from the draft's scores, as SGLang builds it
// (speculative/eagle_utils.py organize_draft_results + build_tree_kernel_efficient): per
// request, the tokens - 1 best-scoring of the `candidates` drafts, in candidate order, become
// nodes 1..tokens-1 under the root; each node's parent is its candidate's parent, and the tree's
// index arrays follow: depth (the position offset), the ancestor-or-self mask words, first child
// and next sibling (what the greedy acceptance walks).
// Key choice: one block per request; a candidate's rank is the number of candidates that score
// higher (equal scores to the lower index), counted by one thread per candidate, so the
// selection needs no sort and no atomics; the nodes' arrays are then filled by one thread in
// candidate order (a parent precedes its children). Draft scores are products of probabilities
// along the path, so a parent always outranks its children and is selected with them.
// Hardware: any CUDA GPU.
#include <cstdint>

namespace eaglesim::kernels::cycle {

// scores, cand_parent [batch, candidates] (cand_parent: the candidate index of the parent, -1
// the root); node_of [batch, candidates] scratch. Outputs per request b, [tokens] each:
// parent (node index, -1 for the root), depth, first_child, next_sibling (-1: none), and mask
// [tokens, words] with words = ceil(tokens / 32). A selected candidate whose parent was not
// selected (scores that are not path products) hangs from the root.
__global__ void tree_build_kernel(const float* __restrict__ scores, const std::int32_t* __restrict__ cand_parent,
                                  int candidates, int tokens, std::int32_t* __restrict__ node_of,
                                  std::int32_t* __restrict__ parent, std::int32_t* __restrict__ depth,
                                  std::int32_t* __restrict__ first_child, std::int32_t* __restrict__ next_sibling,
                                  std::uint32_t* __restrict__ mask) {
  const int b = blockIdx.x;
  const float* sc = scores + static_cast<std::int64_t>(b) * candidates;
  const std::int32_t* cp = cand_parent + static_cast<std::int64_t>(b) * candidates;
  std::int32_t* nodes = node_of + static_cast<std::int64_t>(b) * candidates;
  const int drafts = tokens - 1;
  // Selected: fewer than `drafts` candidates rank before it.
  for (int c = threadIdx.x; c < candidates; c += blockDim.x) {
    const float v = sc[c];
    int rank = 0;
    for (int o = 0; o < candidates && rank < drafts; ++o) rank += (sc[o] > v || (sc[o] == v && o < c)) ? 1 : 0;
    nodes[c] = rank < drafts ? 1 : 0;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  const std::int64_t at = static_cast<std::int64_t>(b) * tokens;
  const int words = (tokens + 31) / 32;
  std::uint32_t* m = mask + at * words;
  for (int n = 0; n < tokens; ++n) {
    parent[at + n] = -1;
    depth[at + n] = 0;
    first_child[at + n] = -1;
    next_sibling[at + n] = -1;
    for (int w = 0; w < words; ++w) m[static_cast<std::int64_t>(n) * words + w] = 0;
  }
  m[0] = 1u;
  int n = 0;  // nodes in candidate order; a parent (a better-scoring, earlier candidate) comes first
  for (int c = 0; c < candidates; ++c) {
    if (!nodes[c]) {
      nodes[c] = -1;
      continue;
    }
    nodes[c] = ++n;
    const int pc = cp[c];
    int p = pc < 0 ? 0 : nodes[pc];
    if (p < 0) p = 0;
    parent[at + n] = p;
    depth[at + n] = depth[at + p] + 1;
    for (int w = 0; w < words; ++w)
      m[static_cast<std::int64_t>(n) * words + w] = m[static_cast<std::int64_t>(p) * words + w];
    m[static_cast<std::int64_t>(n) * words + n / 32] |= 1u << (n % 32);
    if (first_child[at + p] < 0) {
      first_child[at + p] = n;
    } else {  // children in node order: appended to the parent's list
      int s = first_child[at + p];
      while (next_sibling[at + s] >= 0) s = next_sibling[at + s];
      next_sibling[at + s] = n;
    }
  }
}

}  // namespace eaglesim::kernels::cycle
