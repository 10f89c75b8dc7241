#include "domain/speculation_verdict.hpp"

#include <fmt/format.h>

namespace eaglesim {

std::string SpeculationVerdict::text() const { return detail.empty() ? headline : headline + "; " + detail; }

const char* to_string(SpeculationVerdict::State s) {
  switch (s) {
    case SpeculationVerdict::State::faster: return "faster";
    case SpeculationVerdict::State::slower: return "slower";
    case SpeculationVerdict::State::unknown: return "unknown";
  }
  return "unknown";
}

SpeculationVerdict speculation_verdict(const Scenario& sc, const StrategyResult& best) {
  SpeculationVerdict v;
  if (best.decode_us <= 0) {
    v.headline = sc.method + " against plain decoding: unknown, the trace has no decode step";
    return v;
  }
  const bool faster = best.speedup_vs_decode > 1.0;
  v.state = faster ? SpeculationVerdict::State::faster : SpeculationVerdict::State::slower;
  // The plain decoding it is against: the fastest the run can deploy, named when it is another
  // strategy's than the one speculating.
  const std::string against =
      sc.plain_baseline.empty() || sc.plain_baseline == best.strategy ? "" : " (" + sc.plain_baseline + ")";
  v.headline = fmt::format("{} is {} than plain decoding{} at batch {}: {:.2f}x", sc.method, faster ? "faster" : "slower",
                           against, sc.batch, best.speedup_vs_decode);
  const std::string given = fmt::format("given {:.2f}", best.tokens_per_cycle);
  if (!best.breakeven_accept_rate)
    // E* > N + 1: a cycle cannot yield that many tokens, so no acceptance helps.
    v.detail = fmt::format("no acceptance breaks even: it needs accept length {:.2f}, more than the {} tokens a cycle "
                           "can yield ({})",
                           best.breakeven_accept_len, sc.draft_tokens + 1, given);
  else
    v.detail = fmt::format("break-even {} accept length {:.2f}, {} (per-position rate a={:.2f})",
                           faster ? "at" : "needs", best.breakeven_accept_len, given, *best.breakeven_accept_rate);
  return v;
}

}  // namespace eaglesim
