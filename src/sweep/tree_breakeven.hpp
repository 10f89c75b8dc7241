#pragma once
// The break-even rate of a tree configuration, as tree_accept_rate_for_tokens (domain/
// tree_acceptance.hpp) defines it, computed fast enough to be evaluated for every row of a sweep.
//
// Under the default decay q(r) = a (1 - a)^(r - 1), a draft node at depth d whose path has
// ranks r_1..r_d has path probability a^d (1 - a)^m with m = sum (r_i - 1), and the tree model's
// E = 1 + the sum of the D - 1 largest path probabilities among the candidates SGLang scores.
// Within one depth the order of the candidates is the order of m for every a in (0, 1), so the
// K nodes each step expands, and with them the multiset of (d, m) among all candidates, do not
// depend on a (ties have equal values, so whichever is expanded gives the same children). The
// curve keeps, per depth, the candidates' m values with their counts in ascending order; E(a)
// is then a merge of S sorted lists that stops after D - 1 nodes, with no tree built and nothing
// allocated. The inversion is the same bisection (rate_bisection.hpp) the domain uses.
#include <optional>
#include <vector>

#include "trace/spec_config.hpp"

namespace eaglesim {

class TreeBreakevenCurve {
 public:
  explicit TreeBreakevenCurve(const SpecConfig& config);

  // The default-decay tree model's tokens per cycle at rate a (tree_tokens_per_cycle(a, config)).
  double tokens_at(double a) const;
  // tree_accept_rate_for_tokens(tokens, config).
  std::optional<double> rate_for_tokens(double tokens) const;

 private:
  struct Level {
    std::vector<int> m;      // ascending
    std::vector<long long> count;
  };
  SpecConfig config_;
  std::vector<Level> levels_;  // depth 1..S
  int max_m_ = 0;
};

}  // namespace eaglesim
