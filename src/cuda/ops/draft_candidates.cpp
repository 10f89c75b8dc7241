#include "cuda/ops/draft_candidates.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "trace/eagle_tree.hpp"

namespace eaglesim::cuda {

DraftCandidates random_draft_candidates(int batch, int candidates, int num_steps, int topk, std::uint64_t seed) {
  DraftCandidates d;
  d.candidates = candidates;
  const bool structured = num_steps >= 1 && topk >= 1 && draft_candidates(num_steps, topk) == candidates;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> prob(0.05f, 1.0f);
  const std::size_t c = static_cast<std::size_t>(candidates);
  d.scores.resize(static_cast<std::size_t>(batch) * c);
  d.parent.assign(static_cast<std::size_t>(batch) * c, -1);
  for (int b = 0; b < batch; ++b) {
    float* s = d.scores.data() + static_cast<std::size_t>(b) * c;
    std::int32_t* p = d.parent.data() + static_cast<std::size_t>(b) * c;
    if (!structured) {
      for (std::size_t i = 0; i < c; ++i) s[i] = prob(rng);
      continue;
    }
    const int k = topk;
    std::vector<int> level(static_cast<std::size_t>(k));
    for (int r = 0; r < k; ++r) {
      s[r] = prob(rng);
      level[static_cast<std::size_t>(r)] = r;
    }
    int base = k;
    for (int step = 1; step < num_steps; ++step) {
      // The level's topk best (equal scores: the earlier candidate) are the next level's parents.
      std::vector<int> order = level;
      std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return s[x] > s[y]; });
      order.resize(std::min<std::size_t>(order.size(), static_cast<std::size_t>(k)));
      level.clear();
      for (int j = 0; j < k; ++j)
        for (int r = 0; r < k; ++r) {
          const int idx = base + j * k + r;
          const int parent = order[static_cast<std::size_t>(std::min<int>(j, static_cast<int>(order.size()) - 1))];
          p[idx] = parent;
          s[idx] = s[parent] * prob(rng);
          level.push_back(idx);
        }
      base += k * k;
    }
  }
  return d;
}

std::vector<int> verify_tree_parents(const float* scores, const std::int32_t* cand_parent, int candidates, int tokens) {
  std::vector<int> order(static_cast<std::size_t>(candidates));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  order.resize(static_cast<std::size_t>(tokens - 1));
  std::sort(order.begin(), order.end());
  std::vector<int> node(static_cast<std::size_t>(candidates), -1), parents{-1};
  for (std::size_t n = 0; n < order.size(); ++n) {
    node[static_cast<std::size_t>(order[n])] = static_cast<int>(n) + 1;
    const int pc = cand_parent[order[n]];
    parents.push_back(pc < 0 ? 0 : std::max(0, node[static_cast<std::size_t>(pc)]));
  }
  return parents;
}

void child_lists(const std::vector<int>& parents, std::vector<std::int32_t>& first_child,
                 std::vector<std::int32_t>& next_sibling) {
  const std::size_t n = parents.size();
  first_child.assign(n, -1);
  next_sibling.assign(n, -1);
  std::vector<std::int32_t> last(n, -1);
  for (std::size_t i = 1; i < n; ++i) {
    const auto p = static_cast<std::size_t>(parents[i]);
    if (first_child[p] < 0) first_child[p] = static_cast<std::int32_t>(i);
    else next_sibling[static_cast<std::size_t>(last[p])] = static_cast<std::int32_t>(i);
    last[p] = static_cast<std::int32_t>(i);
  }
}

}  // namespace eaglesim::cuda
