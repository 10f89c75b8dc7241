// bench-comm's correctness baseline: a plain two-pass kernel over the same registered buffers as
// our P2P strategies. No cost model: it shows whether the others are right, not what an allreduce
// costs, and it is no --strategy.
#include "comm/strategies.hpp"

namespace eaglesim {

const StrategySpec& reference_spec() {
  static const StrategySpec spec{own_kernel_facts("reference", kBenchCommOnly | kCorrectnessBaseline),
                                 "plain two-pass kernel, the correctness baseline", nullptr};
  return spec;
}

}  // namespace eaglesim
