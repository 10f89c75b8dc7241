#include "domain/spec_decode_metrics.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "domain/rate_bisection.hpp"
#include "domain/tree_acceptance.hpp"

namespace eaglesim {

double chain_tokens_per_cycle(double a, int draft_tokens) {
  if (!(a >= 0.0 && a <= 1.0)) throw SettingError(Setting::accept_rate, fmt::format("expected a number in [0, 1], got {}", a));
  if (draft_tokens < 0) throw InputError(fmt::format("draft tokens: expected >= 0, got {}", draft_tokens));
  // sum_{i=0..N} a^i by Horner: equal to (1 - a^(N+1)) / (1 - a) but without its cancellation
  // near a = 1 (which would make the break-even bisection imprecise there) and exact at a = 1.
  double e = 1.0;
  for (int i = 0; i < draft_tokens; ++i) e = 1.0 + a * e;
  return e;
}

std::optional<double> accept_rate_for_tokens(double tokens, int draft_tokens) {
  return rate_for_tokens(tokens, draft_tokens + 1.0, [&](double a) { return chain_tokens_per_cycle(a, draft_tokens); });
}

double Acceptance::tokens_per_cycle(int draft_tokens) const {
  if (source) return value;  // checked against its configuration when it was resolved
  if (mode == Mode::rate) return chain_tokens_per_cycle(value, draft_tokens);
  if (!(value >= 1.0 && value <= draft_tokens + 1.0))
    throw SettingError(Setting::accept_len,
                       fmt::format("expected a mean accepted length in [1, N+1] = [1, {}] for N={} draft tokens, got {}",
                                   draft_tokens + 1, draft_tokens, value));
  return value;
}

std::string Acceptance::describe() const {
  if (source) return source->description;
  if (mode == Mode::rate) return fmt::format("accept rate a={:.2f} per position (chain)", value);
  return fmt::format("mean accepted length E={:.2f} tokens per cycle", value);
}

std::string Acceptance::describe(int draft_tokens) const {
  if (source) return source->description;
  if (mode == Mode::rate)
    return fmt::format("{}, E={:.2f} for N={}", describe(), tokens_per_cycle(draft_tokens), draft_tokens);
  return fmt::format("{} (given, N={})", describe(), draft_tokens);
}

double tokens_per_second(double tokens_per_cycle, double cycle_us) {
  return cycle_us > 0 ? tokens_per_cycle / cycle_us * 1e6 : 0.0;
}

void derive_strategy_metrics(StrategyResult& r, const Acceptance& acceptance, int draft_tokens, int batch, int gpus) {
  if (batch < 1 || gpus < 1)
    throw InputError(fmt::format("cycle metrics: batch {} and gpus {} must both be at least 1", batch, gpus));
  if (!r.supported) return;
  const StepResult& v = r.verify;
  r.verify_us = v.step_us;
  r.compute_us = v.compute_us;
  r.comm_us = v.comm_us;
  r.comm_fraction = v.step_us > 0 ? v.comm_us / v.step_us : 0.0;
  r.allreduce_count = v.allreduce_count;
  r.allreduce_mean_us = v.allreduce_mean_us;
  // The draft-extend pass stands for the first of the N draft forwards (trace/trace.hpp,
  // draft_forwards_per_cycle).
  r.draft_forwards = r.draft_extend ? std::max(0, draft_tokens - 1) : draft_tokens;
  r.draft_us = (r.draft ? r.draft_forwards * r.draft->step_us : 0.0) + (r.draft_extend ? r.draft_extend->step_us : 0.0);
  r.decode_us = r.decode ? r.decode->step_us : 0.0;
  r.cycle_us = r.draft_us + r.verify_us;
  r.tokens_per_cycle = acceptance.tokens_per_cycle(draft_tokens);
  r.tokens_per_s = tokens_per_second(r.tokens_per_cycle, r.cycle_us);
  r.decode_tokens_per_s = r.decode_us > 0 ? 1e6 / r.decode_us : 0.0;
  r.batch = batch;
  r.gpus = gpus;
  r.total_tokens_per_s = batch * r.tokens_per_s;
  r.tokens_per_s_per_gpu = r.total_tokens_per_s / gpus;
  r.decode_total_tokens_per_s = batch * r.decode_tokens_per_s;
  set_plain_baseline(r, acceptance, draft_tokens, r.decode_us);
}

void set_plain_baseline(StrategyResult& r, const Acceptance& acceptance, int draft_tokens, double plain_decode_us) {
  r.breakeven_accept_rate.reset();
  r.breakeven_accept_len = 0;
  r.speedup_vs_decode = 0;
  if (!r.supported || plain_decode_us <= 0 || r.decode_us <= 0) return;
  r.speedup_vs_decode = r.tokens_per_s * plain_decode_us / 1e6;
  // Speculation breaks even when E / cycle == 1 / decode, i.e. E* = cycle / decode.
  r.breakeven_accept_len = r.cycle_us / plain_decode_us;
  // For a tree, the rate is the chain-equivalent one of the tree model; at eagle_topk 1 the
  // model is the chain formula, so the chain's inverse answers.
  const bool tree = acceptance.source && acceptance.source->config.eagle_topk > 1;
  r.breakeven_accept_rate = tree ? tree_accept_rate_for_tokens(r.breakeven_accept_len, acceptance.source->config)
                                 : accept_rate_for_tokens(r.breakeven_accept_len, draft_tokens);
}

}  // namespace eaglesim
