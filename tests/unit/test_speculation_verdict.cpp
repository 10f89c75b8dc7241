// The verdict line on the best strategy, from hand-computed cycles: faster, slower with the
// accept length that would break even, and slower whatever the acceptance.
#include <gtest/gtest.h>

#include "domain/speculation_verdict.hpp"
#include "domain/spec_decode_metrics.hpp"

namespace eaglesim {
namespace {

StepResult step_of(double us) {
  StepResult s;
  s.step_us = us;
  return s;
}

Scenario batch_of(int batch, int draft_tokens) {
  Scenario sc;
  sc.batch = batch;
  sc.draft_tokens = draft_tokens;
  return sc;
}

StrategyResult priced(double verify_us, double decode_us, double accept_len, int draft_tokens) {
  StrategyResult r;
  r.verify = step_of(verify_us);
  if (decode_us > 0) r.decode = step_of(decode_us);
  derive_strategy_metrics(r, {Acceptance::Mode::length, accept_len}, draft_tokens);
  return r;
}

struct VerdictCase {
  const char* what;
  int batch;
  double verify_us, decode_us, accept_len;
  SpeculationVerdict::State state;
  const char* text;
};

// N = 3 draft tokens throughout.
const VerdictCase kCases[] = {
    // E = 1.5 per 2000 us against 1 per 1000 us: 0.75x; E* = 2000 / 1000 = 2, which the chain
    // yields at 1 + a + a^2 + a^3 = 2, a = 0.5437.
    {"slower: the accept length that would break even", 8, 2000, 1000, 1.5, SpeculationVerdict::State::slower,
     "EAGLE-3 is slower than plain decoding at batch 8: 0.75x; break-even needs accept length 2.00, given 1.50 "
     "(per-position rate a=0.54)"},
    // E = 3 per 1500 us against 1 per 1000 us: 2x; E* = 1.5, a = 0.3425.
    {"faster: where it breaks even", 1, 1500, 1000, 3.0, SpeculationVerdict::State::faster,
     "EAGLE-3 is faster than plain decoding at batch 1: 2.00x; break-even at accept length 1.50, given 3.00 "
     "(per-position rate a=0.34)"},
    // E* = 5000 / 1000 = 5 > N + 1 = 4: not even full acceptance pays off.
    {"slower whatever the acceptance", 64, 5000, 1000, 2.5, SpeculationVerdict::State::slower,
     "EAGLE-3 is slower than plain decoding at batch 64: 0.50x; no acceptance breaks even: it needs accept length "
     "5.00, more than the 4 tokens a cycle can yield (given 2.50)"},
};

TEST(SpeculationVerdict, SaysFasterOrSlowerAndTheBreakEvenAgainstTheGivenAcceptLength) {
  for (const VerdictCase& c : kCases) {
    SCOPED_TRACE(c.what);
    const SpeculationVerdict v = speculation_verdict(batch_of(c.batch, 3), priced(c.verify_us, c.decode_us, c.accept_len, 3));
    EXPECT_EQ(v.state, c.state);
    EXPECT_EQ(v.text(), c.text);
  }
  EXPECT_STREQ(to_string(SpeculationVerdict::State::slower), "slower");
}

TEST(SpeculationVerdict, UnknownWithoutADecodeStep) {
  const SpeculationVerdict v = speculation_verdict(batch_of(1, 3), priced(1500, 0, 2.5, 3));
  EXPECT_EQ(v.state, SpeculationVerdict::State::unknown);
  EXPECT_EQ(v.text(), "EAGLE-3 against plain decoding: unknown, the trace has no decode step");
}

}  // namespace
}  // namespace eaglesim
