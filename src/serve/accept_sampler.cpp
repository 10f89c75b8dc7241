#include "serve/accept_sampler.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "domain/spec_decode_metrics.hpp"

namespace eaglesim {

AcceptSampler::AcceptSampler(double mean_accept_len, int depth) : mean_(mean_accept_len), depth_(depth) {
  if (depth < 1) throw InputError(fmt::format("speculative decoding: expected a draft depth >= 1, got {}", depth));
  if (!(mean_accept_len >= 1.0) || mean_accept_len > depth + 1.0)
    throw InputError(fmt::format("--accept-len: expected a mean accept length in [1, {}] (num_steps + 1), got {}",
                                 depth + 1, mean_accept_len));
  // E(q) = 1 + q + ... + q^depth rises with q: bisect.
  double lo = 0, hi = 1;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (chain_tokens_per_cycle(mid, depth) < mean_accept_len ? lo : hi) = mid;
  }
  rate_ = 0.5 * (lo + hi);
}

int AcceptSampler::draw(ServeRng& rng) const {
  int tokens = 1;
  while (tokens <= depth_ && rng.uniform() < rate_) ++tokens;
  return tokens;
}

}  // namespace eaglesim
