#include "trace/eagle_tree.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace eaglesim {

namespace {

// A scored draft: its index in SGLang's candidate list (level 1 first, then each further level's
// topk x topk block, parent slot major), its depth and the sum of its tokens' ranks along the
// path. Under the assumed probabilities its score is a^depth * (1 - a)^rank_sum, so two
// candidates compare by depth and rank sum alone, exactly.
struct Candidate {
  std::int64_t index = 0;
  int depth = 0;
  int rank_sum = 0;
  std::int64_t parent = -1;  // candidate index of the parent; -1: the root
};

double log_score(const Candidate& c) {
  static const double log_top = std::log(kDraftTopProbability);
  static const double log_rest = std::log(1.0 - kDraftTopProbability);
  return c.depth * log_top + c.rank_sum * log_rest;
}

// Better first: higher score, then the earlier candidate.
bool better(const Candidate& a, const Candidate& b) {
  const double sa = log_score(a), sb = log_score(b);
  if (sa != sb) return sa > sb;
  return a.index < b.index;
}

// Keeps the `keep` best of `level` (all of them when fewer), best first.
void keep_best(std::vector<Candidate>& level, std::size_t keep) {
  keep = std::min(keep, level.size());
  std::partial_sort(level.begin(), level.begin() + static_cast<std::ptrdiff_t>(keep), level.end(), better);
  level.resize(keep);
}

}  // namespace

std::int64_t draft_candidates(int num_steps, int eagle_topk) {
  const std::int64_t k = eagle_topk;
  return k + static_cast<std::int64_t>(std::max(0, num_steps - 1)) * k * k;
}

// SGLang (python/sglang/srt/speculative/eagle_worker.py draft_forward, spec_utils.py
// select_top_k_tokens, eagle_utils.py organize_draft_results): level 1 is the draft-extend
// pass's top-k; each later draft forward expands the topk branches kept at its level into
// topk x topk candidates and keeps the topk best as the next level's branches; the tree is the
// num_draft_tokens - 1 best candidates of all levels, sorted by candidate index.
std::vector<int> derive_eagle_tree(int num_steps, int eagle_topk, int num_draft_tokens) {
  const std::size_t k = static_cast<std::size_t>(eagle_topk);
  const std::size_t drafts = static_cast<std::size_t>(std::max(0, num_draft_tokens - 1));
  std::vector<Candidate> pool;  // every level's candidates that can still be among the best `drafts`
  std::vector<Candidate> branches;
  for (std::size_t r = 0; r < k; ++r) branches.push_back({static_cast<std::int64_t>(r), 1, static_cast<int>(r), -1});
  pool.insert(pool.end(), branches.begin(), branches.end());
  for (int step = 1; step < num_steps; ++step) {
    std::vector<Candidate> level;
    level.reserve(k * k);
    const std::int64_t base = static_cast<std::int64_t>(k) + static_cast<std::int64_t>(step - 1) * static_cast<std::int64_t>(k * k);
    for (std::size_t j = 0; j < branches.size(); ++j)
      for (std::size_t r = 0; r < k; ++r)
        level.push_back({base + static_cast<std::int64_t>(j * k + r), step + 1, branches[j].rank_sum + static_cast<int>(r),
                         branches[j].index});
    // A candidate outside its level's best `drafts` cannot be among the best `drafts` overall.
    keep_best(level, std::max(k, drafts));
    branches.assign(level.begin(), level.begin() + static_cast<std::ptrdiff_t>(std::min(k, level.size())));
    pool.insert(pool.end(), level.begin(), level.end());
  }
  keep_best(pool, drafts);
  std::sort(pool.begin(), pool.end(), [](const Candidate& a, const Candidate& b) { return a.index < b.index; });
  std::vector<int> parents(1, -1);
  for (const Candidate& c : pool) {
    int parent = 0;
    if (c.parent >= 0) {
      // A parent scores above its children, so it is in the tree, earlier in candidate order.
      auto it = std::lower_bound(pool.begin(), pool.end(), c.parent,
                                 [](const Candidate& x, std::int64_t index) { return x.index < index; });
      parent = 1 + static_cast<int>(it - pool.begin());
    }
    parents.push_back(parent);
  }
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
