#pragma once
// SGLang's selection of the verify tree from the draft's scored candidates, written once for
// every caller that scores the drafts its own way: the trace's derived tree (eagle_tree.hpp,
// under assumed draft probabilities) and the tree acceptance model (domain/tree_acceptance.hpp,
// under the user's acceptance probabilities). SGLang (python/sglang/srt/speculative/
// eagle_worker.py draft_forward, spec_utils.py select_top_k_tokens, eagle_utils.py
// organize_draft_results): level 1 is the draft-extend pass's top-k; each later draft forward
// expands the topk branches kept at its level (best first) into topk x topk candidates and keeps
// the topk best as the next level's branches; the tree is the num_draft_tokens - 1 best
// candidates of all levels, in candidate order. Equal scores go to the earlier candidate.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace eaglesim {

// A selected draft: its parent (node index, 0 the root), depth (1: a child of the root) and rank
// among its parent's candidates (0: the draft's most likely token there).
struct EagleTreeNode {
  int parent = 0;
  int depth = 1;
  int rank = 0;
};

// The selected drafts, nodes 1..num_draft_tokens-1 of the verify tree in order (the root is not
// listed). `child(parent_score, depth, rank)` scores a candidate from its parent's score
// (`root` for the root's children); a Score compares with `better(a, b)` (strictly better).
// A child must never score better than its parent, so that the selection is a tree. Expects
// num_steps >= 0, eagle_topk >= 1 and num_draft_tokens - 1 at most the candidates scored.
template <typename Score, typename Child, typename Better>
std::vector<EagleTreeNode> select_eagle_tree(int num_steps, int eagle_topk, int num_draft_tokens, const Score& root,
                                             Child child, Better better) {
  struct Candidate {
    std::int64_t index;
    std::int64_t parent;  // candidate index, -1: the root
    int depth, rank;
    Score score;
  };
  const auto ranks_before = [&](const Candidate& a, const Candidate& b) {
    if (better(a.score, b.score)) return true;
    if (better(b.score, a.score)) return false;
    return a.index < b.index;
  };
  const auto keep_best = [&](std::vector<Candidate>& v, std::size_t keep) {
    keep = std::min(keep, v.size());
    std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(keep), v.end(), ranks_before);
    v.resize(keep);
  };
  const std::size_t k = static_cast<std::size_t>(eagle_topk);
  const std::size_t drafts = static_cast<std::size_t>(std::max(0, num_draft_tokens - 1));
  std::vector<Candidate> pool;  // every level's candidates that can still be among the best `drafts`
  std::vector<Candidate> branches;
  if (num_steps >= 1)
    for (std::size_t r = 0; r < k; ++r)
      branches.push_back({static_cast<std::int64_t>(r), -1, 1, static_cast<int>(r), child(root, 1, static_cast<int>(r))});
  pool = branches;
  std::int64_t base = static_cast<std::int64_t>(k);
  for (int step = 1; step < num_steps; ++step) {
    keep_best(branches, k);  // best first: the order of the next level's parent slots
    std::vector<Candidate> level;
    level.reserve(branches.size() * k);
    for (std::size_t j = 0; j < branches.size(); ++j)
      for (std::size_t r = 0; r < k; ++r)
        level.push_back({base + static_cast<std::int64_t>(j * k + r), branches[j].index, step + 1, static_cast<int>(r),
                         child(branches[j].score, step + 1, static_cast<int>(r))});
    base += static_cast<std::int64_t>(k * k);
    // A candidate outside its level's best `drafts` cannot be among the best `drafts` overall.
    keep_best(level, std::max(k, drafts));
    branches = level;
    pool.insert(pool.end(), level.begin(), level.end());
  }
  keep_best(pool, drafts);
  std::sort(pool.begin(), pool.end(), [](const Candidate& a, const Candidate& b) { return a.index < b.index; });
  std::vector<EagleTreeNode> nodes;
  nodes.reserve(pool.size());
  for (const Candidate& c : pool) {
    int parent = 0;
    if (c.parent >= 0) {
      // A parent scores at least as well as its children and comes earlier, so it is in the
      // tree, earlier in candidate order.
      auto it = std::lower_bound(pool.begin(), pool.end(), c.parent,
                                 [](const Candidate& x, std::int64_t index) { return x.index < index; });
      if (it == pool.end() || it->index != c.parent)
        throw std::logic_error("select_eagle_tree: a selected candidate's parent was not selected (a child scored "
                               "better than its parent)");
      parent = 1 + static_cast<int>(it - pool.begin());
    }
    nodes.push_back({parent, c.depth, c.rank});
  }
  return nodes;
}

}  // namespace eaglesim
