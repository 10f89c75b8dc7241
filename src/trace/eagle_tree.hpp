#pragma once
// The verify tree of EAGLE-2/EAGLE-3 drafting as SGLang builds it, as a parent list over the
// num_draft_tokens tokens a request verifies: token 0 is the root (the last verified token, its
// parent -1), every other token's parent comes before it. docs/trace-format.md, "The verify
// tree", describes the derivation and cites the SGLang sources it follows.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace eaglesim {

// The drafts SGLang scores per request and cycle before choosing the tree: eagle_topk at the
// first level (the draft-extend pass's top-k), eagle_topk^2 at each of the num_steps - 1 further
// ones (each of the topk branches kept at a level proposes topk children), K + (S - 1) K^2; 0
// without a level or a branch (num_steps or eagle_topk below 1).
std::int64_t draft_candidates(int num_steps, int eagle_topk);

// The probability the draft head is assumed to give its r-th most likely token at every node,
// a * (1 - a)^r, which decides the shape of a derived tree (not its size, which is the config's).
constexpr double kDraftTopProbability = 0.7;

// The tree SGLang builds for (num_steps, eagle_topk, num_draft_tokens) when every node's
// children have the probabilities above: each draft forward keeps the topk best-scoring of its
// level's candidates (score = product of the probabilities along the path), then the
// num_draft_tokens - 1 best-scoring candidates of all levels form the tree, in candidate order.
// Equal scores go to the earlier candidate. topk 1 gives the chain. Expects a config that
// passes find_speculative_problem (trace/speculative.hpp).
std::vector<int> derive_eagle_tree(int num_steps, int eagle_topk, int num_draft_tokens);

std::vector<int> tree_depths(const std::vector<int>& parents);  // root 0; expects a valid tree

// Why `parents` is not a tree SGLang could draft with (num_steps, eagle_topk), or nullopt.
// `index` is the element at fault (-1: the list as a whole).
struct TreeProblem {
  int index = -1;
  std::string expected;
  std::string got;
};
std::optional<TreeProblem> find_tree_problem(const std::vector<int>& parents, int num_steps, int eagle_topk,
                                             int num_draft_tokens);

}  // namespace eaglesim
