#pragma once
// Speculative-decoding arithmetic: expected tokens per cycle from an acceptance model, the cycle
// time, tok/s, speedup over plain decoding and the break-even acceptance rate. Pure functions of
// the step times, so they are unit-tested against hand-computed values.
#include <optional>

#include "domain/report.hpp"

namespace eaglesim {

// Expected tokens emitted per cycle by a chain draft of N tokens accepted position by position
// with probability a (the verify step always yields one more token): sum_{i=0..N} a^i
// = (1 - a^(N+1)) / (1 - a), and N + 1 at a = 1. InputError unless 0 <= a <= 1 and N >= 0.
double chain_tokens_per_cycle(double a, int draft_tokens);

// The per-position rate a at which chain_tokens_per_cycle(a, N) == tokens (bisection; E is
// increasing in a). 0 when tokens <= 1 (speculation pays off at any rate), none when
// tokens > N + 1 (not even full acceptance pays off).
std::optional<double> accept_rate_for_tokens(double tokens, int draft_tokens);

// Tokens per second of one request at `tokens_per_cycle` per cycle of `cycle_us` (0 without a cycle):
// every tok/s figure, the report's acceptance curves included, is this one.
double tokens_per_second(double tokens_per_cycle, double cycle_us);

// Fills the derived fields of `r` (verify/compute/comm split, draft and decode time, cycle,
// tokens per cycle, tok/s, speedup, break-even) from its StepResults. Unsupported results are
// left untouched. The draft step runs N times per cycle; without a draft step draft_us is 0,
// without a decode step speedup and break-even stay unset (decode_us == 0). The break-even rate
// is the chain's, or the tree model's chain-equivalent rate when `acceptance` was resolved for
// a configuration with eagle_topk > 1 (tree_acceptance.hpp).
// `batch` requests share every step (the per-request rates are per request, the totals batch x
// that) and `gpus` GPUs serve them (tokens_per_s_per_gpu = total / gpus); InputError unless both >= 1.
void derive_strategy_metrics(StrategyResult& r, const Acceptance& acceptance, int draft_tokens, int batch = 1,
                             int gpus = 1);

// The plain decoding a result's speed-up and break-even are measured against: one plain decode
// step of `plain_decode_us` (derive_strategy_metrics uses the result's own; a run rebases every
// result on the fastest plain decoding it can deploy, rebase_on_deployable_plain in ranking.hpp).
void set_plain_baseline(StrategyResult& r, const Acceptance& acceptance, int draft_tokens, double plain_decode_us);

}  // namespace eaglesim
