#pragma once
// The per-position rate a at which an acceptance model, non-decreasing in a, gives `tokens` per
// cycle: the one inversion behind the chain's and the tree model's break-even rates, so both
// stop on the same bracket and agree bit for bit where the models do.
#include <cmath>
#include <optional>

namespace eaglesim {

// 0 when tokens <= 1 (any rate reaches it), none when tokens exceeds `most` (the model's value
// at a = 1) or is not finite; otherwise bisection on [0, 1] to 1e-13.
template <class TokensAtRate>
std::optional<double> rate_for_tokens(double tokens, double most, TokensAtRate tokens_at_rate) {
  if (!std::isfinite(tokens)) return std::nullopt;
  if (tokens <= 1.0) return 0.0;
  if (tokens > most) return std::nullopt;
  double lo = 0.0, hi = 1.0;
  for (int it = 0; it < 200 && hi - lo > 1e-13; ++it) {
    double mid = 0.5 * (lo + hi);
    if (tokens_at_rate(mid) < tokens) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace eaglesim
