#pragma once
// The tree acceptance model: expected tokens per cycle of an EAGLE draft tree as SGLang builds
// it from (num_steps, eagle_topk, num_draft_tokens), given how often the target's token is the
// draft's rank-r candidate at each depth. docs/acceptance.md derives it; at eagle_topk 1 it is
// exactly chain_tokens_per_cycle (speculative.hpp).
#include <optional>
#include <string>
#include <vector>

#include "trace/spec_config.hpp"

namespace eaglesim {

// q_d(r): the probability that the target's token at a node of depth d (1 = a child of the
// root) is the draft's rank-r candidate there (r = 1 its most likely), given that the path to
// the node's parent was accepted. Candidates of one node are mutually exclusive, so a depth's
// probabilities add up to at most 1.
class RankAcceptance {
 public:
  // rows[d - 1][r - 1]. Depths past the last row take the last row; ranks past a row's end have
  // probability 0. InputError (naming `what`) unless there is at least one row, each row has at
  // least one value, every value is in [0, 1] and each row adds up to at most 1.
  RankAcceptance(std::vector<std::vector<double>> rows, const std::string& what);

  // The default decay from one per-position chain rate a: q(r) = a (1 - a)^(r - 1) for
  // r = 1..ranks at every depth, i.e. each further candidate is right with the same
  // probability a given that the ones before it were wrong. q(1) = a, so a chain sees a.
  static RankAcceptance from_chain_rate(double a, int ranks);

  double at(int depth, int rank) const;
  const std::vector<std::vector<double>>& rows() const { return rows_; }
  std::string describe() const;  // "0.8,0.1/0.7": ranks by commas, depths by slashes

 private:
  std::vector<std::vector<double>> rows_;
};

// A verify tree: node 0 is the root (the last verified token), nodes 1..D-1 the draft tokens in
// SGLang's order (by draft step, then by position among the step's candidates), so
// parents[i] < i for every i >= 1.
struct DraftTree {
  std::vector<int> parents;              // parents[0] = -1
  std::vector<int> depth;                // 0 for the root
  std::vector<int> rank;                 // rank among the parent's candidates, 1-based; 0 for the root
  std::vector<double> path_probability;  // product of q along the path; 1 for the root
};

// The tree SGLang verifies for `config` when the draft's scores are the path probabilities
// under `q` (EAGLE-2 found the draft's confidence a close estimate of the acceptance rate):
// the K children of the root; at each further step the K children of each of the K best nodes
// of the previous depth; of all those candidates the D - 1 with the highest path probability
// (ties to the earlier candidate, so a parent always precedes its children and the selection
// is a tree). InputError unless num_steps >= 0, eagle_topk >= 1 and
// 1 <= num_draft_tokens <= 1 + draft_candidates (trace/eagle_tree.hpp).
DraftTree select_draft_tree(const SpecConfig& config, const RankAcceptance& q);

// E = 1 + sum over the tree's draft tokens of P(path to the token accepted): siblings are
// mutually exclusive, so the accepted path holds at most one node per depth and the expected
// number of accepted tokens is the sum of the nodes' probabilities. Evaluated bottom-up,
// E(node) = 1 + sum_children q(child) E(child), which for a chain is chain_tokens_per_cycle's
// Horner scheme term by term.
double tree_tokens_per_cycle(const DraftTree& tree, const RankAcceptance& q);

struct TreeAcceptance {
  DraftTree tree;
  double tokens_per_cycle = 1;
};
TreeAcceptance tree_acceptance(const SpecConfig& config, const RankAcceptance& q);

// The model with the default decay from a per-position chain rate a (InputError unless
// 0 <= a <= 1). Equal to chain_tokens_per_cycle(a, S) for K = 1, D = S + 1.
double tree_tokens_per_cycle(double a, const SpecConfig& config);

// The chain-equivalent rate a at which the default-decay model gives `tokens` for `config`
// (bisection; the model is non-decreasing in a). 0 when tokens <= 1, none when tokens exceeds
// max_tokens_per_cycle(config) or is not finite. At K = 1, D = S + 1 this is
// accept_rate_for_tokens(tokens, S).
std::optional<double> tree_accept_rate_for_tokens(double tokens, const SpecConfig& config);

}  // namespace eaglesim
