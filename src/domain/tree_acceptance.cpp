#include "domain/tree_acceptance.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "domain/rate_bisection.hpp"
#include "trace/eagle_tree.hpp"
#include "trace/eagle_tree_selection.hpp"

namespace eaglesim {

namespace {

// Rounding slack when a row of probabilities is checked against 1 (0.7 + 0.2 + 0.1 > 1 by an ulp).
constexpr double kSumSlack = 1e-9;

void check_rate(double a) {
  if (!(a >= 0.0 && a <= 1.0)) throw SettingError(Setting::accept_rate, fmt::format("expected a number in [0, 1], got {}", a));
}

}  // namespace

RankAcceptance::RankAcceptance(std::vector<std::vector<double>> rows, const std::string& what) : rows_(std::move(rows)) {
  if (rows_.empty()) throw InputError(fmt::format("{}: expected per-rank probabilities for at least one depth", what));
  for (std::size_t d = 0; d < rows_.size(); ++d) {
    const auto& row = rows_[d];
    if (row.empty()) throw InputError(fmt::format("{}: depth {}: expected at least one probability", what, d + 1));
    double sum = 0;
    for (std::size_t r = 0; r < row.size(); ++r) {
      if (!(row[r] >= 0.0 && row[r] <= 1.0))
        throw InputError(fmt::format("{}: depth {}, rank {}: expected a probability in [0, 1], got {}", what, d + 1,
                                     r + 1, row[r]));
      sum += row[r];
    }
    if (sum > 1.0 + kSumSlack)
      throw InputError(fmt::format("{}: depth {}: expected probabilities adding up to at most 1 (one candidate "
                                   "at most is the target's token), got {:.6g}",
                                   what, d + 1, sum));
  }
}

RankAcceptance RankAcceptance::from_chain_rate(double a, int ranks) {
  check_rate(a);
  std::vector<double> row;
  double p = a;
  for (int r = 0; r < std::max(1, ranks); ++r) {
    row.push_back(p);
    p *= 1.0 - a;
  }
  return RankAcceptance({row}, setting_name(Setting::accept_rate));
}

double RankAcceptance::at(int depth, int rank) const {
  const auto& row = rows_[static_cast<std::size_t>(std::min<int>(depth, static_cast<int>(rows_.size())) - 1)];
  return rank >= 1 && rank <= static_cast<int>(row.size()) ? row[static_cast<std::size_t>(rank - 1)] : 0.0;
}

std::string RankAcceptance::describe() const {
  std::vector<std::string> depths;
  for (const auto& row : rows_) depths.push_back(fmt::format("{}", fmt::join(row, ",")));
  return fmt::format("{}", fmt::join(depths, "/"));
}

DraftTree select_draft_tree(const SpecConfig& config, const RankAcceptance& q) {
  const int S = config.num_steps, K = config.eagle_topk, D = config.num_draft_tokens;
  if (S < 0) throw InputError(fmt::format("num_steps: expected >= 0, got {}", S));
  if (K < 1) throw InputError(fmt::format("eagle_topk: expected >= 1, got {}", K));
  if (D < 1 || D > 1 + draft_candidates(S, K))
    throw InputError(fmt::format("num_draft_tokens: expected 1 to {} for {}, got {}", 1 + draft_candidates(S, K),
                                 describe(config), D));

  // SGLang's selection as trace/eagle_tree_selection.hpp writes it for the trace's derived tree
  // too, each draft scored here by its path probability under q.
  const std::vector<EagleTreeNode> nodes = select_eagle_tree(
      S, K, D, 1.0, [&](double parent, int depth, int rank) { return parent * q.at(depth, rank + 1); },
      [](double a, double b) { return a > b; });
  DraftTree t;
  t.parents = {-1};
  t.depth = {0};
  t.rank = {0};
  t.path_probability = {1.0};
  for (const EagleTreeNode& n : nodes) {
    t.parents.push_back(n.parent);
    t.depth.push_back(n.depth);
    t.rank.push_back(n.rank + 1);
    t.path_probability.push_back(t.path_probability[static_cast<std::size_t>(n.parent)] *
                                 q.at(n.depth, n.rank + 1));
  }
  return t;
}

double tree_tokens_per_cycle(const DraftTree& tree, const RankAcceptance& q) {
  std::vector<double> e(tree.parents.size(), 1.0);
  for (std::size_t i = tree.parents.size(); i-- > 1;) {
    const auto p = static_cast<std::size_t>(tree.parents[i]);
    e[p] = e[p] + q.at(tree.depth[i], tree.rank[i]) * e[i];
  }
  return e[0];
}

TreeAcceptance tree_acceptance(const SpecConfig& config, const RankAcceptance& q) {
  TreeAcceptance out;
  out.tree = select_draft_tree(config, q);
  out.tokens_per_cycle = tree_tokens_per_cycle(out.tree, q);
  return out;
}

double tree_tokens_per_cycle(double a, const SpecConfig& config) {
  return tree_acceptance(config, RankAcceptance::from_chain_rate(a, config.eagle_topk)).tokens_per_cycle;
}

std::optional<double> tree_accept_rate_for_tokens(double tokens, const SpecConfig& config) {
  return rate_for_tokens(tokens, max_tokens_per_cycle(config), [&](double a) { return tree_tokens_per_cycle(a, config); });
}

}  // namespace eaglesim
