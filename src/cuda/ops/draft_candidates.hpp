#pragma once
// The draft's scored candidates of one cycle with the structure SGLang's draft gives them, for
// the replay's tree building: per request, `topk` children of the root, then at each further
// level topk x topk children of the level's topk best-scoring candidates (parent slot major),
// each scored by the product of random probabilities along its path, so that a parent always
// outranks its children as in the engine. Host C++ only.
#include <cstdint>
#include <vector>

namespace eaglesim::cuda {

struct DraftCandidates {
  int candidates = 0;                 // per request
  std::vector<float> scores;          // [batch, candidates]
  std::vector<std::int32_t> parent;   // [batch, candidates]: the parent's candidate index, -1 the root
};

// `candidates` = draft_candidates(num_steps, topk) (trace/eagle_tree.hpp) gives that structure;
// any other count (or num_steps / topk unknown, 0) gives candidates that are all children of
// the root.
DraftCandidates random_draft_candidates(int batch, int candidates, int num_steps, int topk, std::uint64_t seed);

// The verify tree's parent nodes (node 0 the root, -1) that tree_build_kernel builds from one
// request's `candidates` scores and candidate parents (-1: the root): the tokens - 1 best
// candidates (equal scores: the lower index first) become nodes 1.. in candidate order, each under
// its candidate's parent's node, or under the root when that candidate was not selected. The host
// reference of the kernel's selection.
std::vector<int> verify_tree_parents(const float* scores, const std::int32_t* cand_parent, int candidates, int tokens);

// The first-child and next-sibling lists of a parent list (parents[i] < i), -1 for none; children
// in index order.
void child_lists(const std::vector<int>& parents, std::vector<std::int32_t>& first_child,
                 std::vector<std::int32_t>& next_sibling);

}  // namespace eaglesim::cuda
