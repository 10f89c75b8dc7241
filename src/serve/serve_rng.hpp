#pragma once
// The serving simulation's random numbers: xoshiro256** seeded by SplitMix64, with the draws the
// workload and the acceptance need written here rather than taken from <random>'s distributions,
// whose algorithms differ between standard libraries: a run with --seed S gives the same numbers
// on every platform.
#include <cstdint>

namespace eaglesim {

class ServeRng {
 public:
  explicit ServeRng(std::uint64_t seed);
  std::uint64_t next();
  // Uniform in [0, 1), 53 bits.
  double uniform();
  // Uniform integer in [lo, hi] (lo <= hi).
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi);
  // Exponential with the given mean.
  double exponential(double mean);
  // Standard normal (Box-Muller, one of the pair).
  double normal();
  // Gamma(shape, scale), Marsaglia and Tsang's method (shape < 1 by the boost shape + 1).
  double gamma(double shape, double scale);

 private:
  std::uint64_t s_[4];
};

}  // namespace eaglesim
