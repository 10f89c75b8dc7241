#include "trace/eagle_tree.hpp"

#include <cmath>

#include <fmt/format.h>

#include "trace/eagle_tree_selection.hpp"

namespace eaglesim {

namespace {

// A candidate's score under the assumed probabilities, a^depth * (1 - a)^rank_sum with rank_sum
// the sum of the ranks along its path: two candidates compare by depth and rank sum alone,
// exactly (equal pairs give equal logarithms, whatever the order the path was walked in).
struct PathRanks {
  int depth = 0;
  int rank_sum = 0;
  double log_score() const {
    static const double log_top = std::log(kDraftTopProbability);
    static const double log_rest = std::log(1.0 - kDraftTopProbability);
    return depth * log_top + rank_sum * log_rest;
  }
};

}  // namespace

std::int64_t draft_candidates(int num_steps, int eagle_topk) {
  if (num_steps < 1 || eagle_topk < 1) return 0;
  const std::int64_t k = eagle_topk;
  return k + static_cast<std::int64_t>(num_steps - 1) * k * k;
}

std::vector<int> derive_eagle_tree(int num_steps, int eagle_topk, int num_draft_tokens) {
  const std::vector<EagleTreeNode> nodes = select_eagle_tree(
      num_steps, eagle_topk, num_draft_tokens, PathRanks{},
      [](const PathRanks& parent, int depth, int rank) { return PathRanks{depth, parent.rank_sum + rank}; },
      [](const PathRanks& a, const PathRanks& b) { return a.log_score() > b.log_score(); });
  std::vector<int> parents(1, -1);
  for (const EagleTreeNode& n : nodes) parents.push_back(n.parent);
  return parents;
}

std::vector<int> tree_depths(const std::vector<int>& parents) {
  std::vector<int> depth(parents.size(), 0);
  for (std::size_t i = 1; i < parents.size(); ++i) depth[i] = depth[static_cast<std::size_t>(parents[i])] + 1;
  return depth;
}

std::optional<TreeProblem> find_tree_problem(const std::vector<int>& parents, int num_steps, int eagle_topk,
                                             int num_draft_tokens) {
  const int n = static_cast<int>(parents.size());
  if (n != num_draft_tokens)
    return TreeProblem{-1, fmt::format("a parent for each of the num_draft_tokens = {} tokens", num_draft_tokens),
                       fmt::format("{} parents", n)};
  if (n == 0) return std::nullopt;
  if (parents[0] != -1)
    return TreeProblem{0, "-1 (token 0 is the root, the last verified token)", std::to_string(parents[0])};
  for (int i = 1; i < n; ++i) {
    const int p = parents[i];
    if (p < -1 || p >= n)
      return TreeProblem{i, fmt::format("a token index in [0, {}) (out of range)", i), std::to_string(p)};
    if (p == -1)
      return TreeProblem{i, fmt::format("a parent in [0, {}): only token 0 is a root", i), std::to_string(p)};
    if (p >= i)
      return TreeProblem{i, fmt::format("a parent before the token, in [0, {}) (a later parent makes a cycle)", i),
                         std::to_string(p)};
  }
  const std::vector<int> depth = tree_depths(parents);
  std::vector<int> children(static_cast<std::size_t>(n), 0);
  std::vector<int> expanded_at(static_cast<std::size_t>(num_steps) + 2, 0);  // nodes with children, per depth
  for (int i = 1; i < n; ++i) {
    const std::size_t p = static_cast<std::size_t>(parents[i]);
    if (depth[static_cast<std::size_t>(i)] > num_steps)
      return TreeProblem{i, fmt::format("a token at depth at most num_steps = {} (SGLang drafts {} levels)", num_steps,
                                        num_steps),
                         fmt::format("{} (depth {})", parents[i], depth[static_cast<std::size_t>(i)])};
    if (++children[p] > eagle_topk)
      return TreeProblem{i, fmt::format("at most eagle_topk = {} children per token", eagle_topk),
                         fmt::format("{} (child {} of token {})", parents[i], children[p], p)};
    if (children[p] == 1 && ++expanded_at[static_cast<std::size_t>(depth[p])] > eagle_topk)
      return TreeProblem{i, fmt::format("children of at most eagle_topk = {} tokens at depth {} (SGLang extends only "
                                        "the {} best of a level)",
                                        eagle_topk, depth[p], eagle_topk),
                         fmt::format("{} (token {} would be token number {} with children at depth {})", parents[i], p,
                                     expanded_at[static_cast<std::size_t>(depth[p])], depth[p])};
  }
  return std::nullopt;
}

}  // namespace eaglesim
