#pragma once
// Tokens a request gains per speculative cycle: 1 (the target's own token) plus the draft tokens
// verified before the first rejection, at most `depth` (the deepest draft position: num_steps).
// Drawn per request and cycle from a truncated geometric law whose per-position rate is solved so
// that the mean is the given accept length: a benchmark's "accept length" is that mean.
#include "serve/serve_rng.hpp"

namespace eaglesim {

class AcceptSampler {
 public:
  // InputError unless 1 <= mean_accept_len <= depth + 1.
  AcceptSampler(double mean_accept_len, int depth);
  int draw(ServeRng& rng) const;
  double rate() const { return rate_; }
  double mean() const { return mean_; }
  int depth() const { return depth_; }

 private:
  double mean_ = 1;
  double rate_ = 0;
  int depth_ = 0;
};

}  // namespace eaglesim
