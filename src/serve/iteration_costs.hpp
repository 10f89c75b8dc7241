#pragma once
// What one iteration of a serving engine costs, as the request-level simulation asks it: a plain
// decode forward of a batch, one speculative cycle of a batch (draft extend, draft forwards,
// verify over the batch's trees), and a prefill forward over new tokens. The simulation only
// asks; step_cost_table.hpp answers from the engine-faithful step models, tests from formulas.
#include <cstdint>
#include <vector>

namespace eaglesim {

// One request's part of a prefill forward: `tokens` new tokens after `prefix` positions already
// in its KV cache (a later chunk of a long prompt).
struct PrefillChunk {
  std::int64_t tokens = 0;
  std::int64_t prefix = 0;
};

class IterationCosts {
 public:
  virtual ~IterationCosts() = default;
  // One plain decode forward of `batch` requests whose KV cache averages `kv` positions, µs
  // (with the engine's per-iteration host work).
  virtual double decode_us(int batch, double kv) const = 0;
  // One speculative cycle of `batch` requests at mean KV `kv`, µs.
  virtual double cycle_us(int batch, double kv) const = 0;
  // One prefill forward over the chunks of one or more requests (their GEMMs over all tokens at
  // once, each one's attention over its own prompt so far), µs; `speculative`: the draft head
  // extends over them too.
  virtual double prefill_us(const std::vector<PrefillChunk>& chunks, bool speculative) const = 0;
};

}  // namespace eaglesim
