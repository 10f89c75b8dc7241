// Speculative-decoding arithmetic against hand-computed values.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "domain/spec_decode_metrics.hpp"

namespace eaglesim {
namespace {

TEST(Acceptance, ChainTokensPerCycle) {
  // 1 + a + a^2 + a^3 at a = 0.7: 1 + 0.7 + 0.49 + 0.343
  EXPECT_NEAR(chain_tokens_per_cycle(0.7, 3), 2.533, 1e-12);
  EXPECT_NEAR(chain_tokens_per_cycle(0.5, 2), 1.75, 1e-12);
  EXPECT_DOUBLE_EQ(chain_tokens_per_cycle(1.0, 3), 4.0);  // every draft accepted: N + 1
  EXPECT_DOUBLE_EQ(chain_tokens_per_cycle(0.0, 3), 1.0);  // only the verify token
  EXPECT_NEAR(chain_tokens_per_cycle(0.999999, 3), 4.0, 1e-5) << "continuous towards a = 1";
  EXPECT_THROW(chain_tokens_per_cycle(1.2, 3), InputError);
  EXPECT_THROW(chain_tokens_per_cycle(-0.1, 3), InputError);
}

TEST(Acceptance, RateAndLengthModes) {
  Acceptance rate{Acceptance::Mode::rate, 0.7};
  EXPECT_NEAR(rate.tokens_per_cycle(3), 2.533, 1e-12);
  Acceptance len{Acceptance::Mode::length, 2.5};
  EXPECT_DOUBLE_EQ(len.tokens_per_cycle(3), 2.5);
  EXPECT_DOUBLE_EQ((Acceptance{Acceptance::Mode::length, 4.0}.tokens_per_cycle(3)), 4.0);
  EXPECT_THROW((Acceptance{Acceptance::Mode::length, 4.5}.tokens_per_cycle(3)), InputError);
  EXPECT_THROW((Acceptance{Acceptance::Mode::length, 0.5}.tokens_per_cycle(3)), InputError);
}

TEST(Acceptance, Describe) {
  EXPECT_EQ((Acceptance{Acceptance::Mode::rate, 0.7}.describe(3)),
            "accept rate a=0.70 per position (chain), E=2.53 for N=3");
  EXPECT_EQ((Acceptance{Acceptance::Mode::length, 2.5}.describe(3)),
            "mean accepted length E=2.50 tokens per cycle (given, N=3)");
}

TEST(BreakEven, InvertsTheChainFormula) {
  // N = 1: E = 1 + a, so the break-even rate is E* - 1.
  EXPECT_NEAR(*accept_rate_for_tokens(1.2, 1), 0.2, 1e-12);
  // N = 2, a = 0.5 gives 1.75.
  EXPECT_NEAR(*accept_rate_for_tokens(1.75, 2), 0.5, 1e-12);
  EXPECT_NEAR(*accept_rate_for_tokens(2.533, 3), 0.7, 1e-12);
  EXPECT_DOUBLE_EQ(*accept_rate_for_tokens(0.8, 3), 0.0) << "cycle shorter than decode: pays off at any rate";
  EXPECT_NEAR(*accept_rate_for_tokens(4.0, 3), 1.0, 1e-12);
  EXPECT_FALSE(accept_rate_for_tokens(4.5, 3).has_value()) << "E* > N + 1: never pays off";
}

StepResult step_of(double us) {
  StepResult s;
  s.step_us = s.step_us_min = s.step_us_max = us;
  return s;
}

TEST(Derive, FullCycle) {
  StrategyResult r;
  r.strategy = "nccl";
  r.verify = step_of(1000);
  r.verify.comm_us = 400;
  r.verify.compute_us = 600;
  r.verify.allreduce_count = 8;
  r.verify.allreduce_mean_us = 50;
  r.draft = step_of(50);
  r.decode = step_of(800);
  derive_strategy_metrics(r, {Acceptance::Mode::rate, 0.7}, 3);
  EXPECT_DOUBLE_EQ(r.verify_us, 1000);
  EXPECT_DOUBLE_EQ(r.comm_fraction, 0.4);
  EXPECT_EQ(r.allreduce_count, 8);
  EXPECT_DOUBLE_EQ(r.draft_us, 150);   // 3 draft forwards of 50 us
  EXPECT_DOUBLE_EQ(r.cycle_us, 1150);
  EXPECT_NEAR(r.tokens_per_cycle, 2.533, 1e-12);
  EXPECT_NEAR(r.tokens_per_s, 2.533 / 1150e-6, 1e-6);  // 2202.6 tok/s
  EXPECT_DOUBLE_EQ(r.decode_tokens_per_s, 1250);
  EXPECT_NEAR(r.speedup_vs_decode, 2.533 * 800 / 1150, 1e-12);  // 1.762
  EXPECT_DOUBLE_EQ(r.breakeven_accept_len, 1.4375);
  ASSERT_TRUE(r.breakeven_accept_rate.has_value());
  // a + a^2 + a^3 = 0.4375 -> a = 0.31084...
  EXPECT_NEAR(*r.breakeven_accept_rate, 0.3108424407, 1e-9);
}

TEST(Derive, BatchScalesTotalsButNotPerRequestRates) {
  StrategyResult r;
  r.verify = step_of(2000);
  r.draft = step_of(100);
  r.decode = step_of(1000);
  derive_strategy_metrics(r, {Acceptance::Mode::length, 2.5}, 3, 16, 8);
  EXPECT_EQ(r.batch, 16);
  EXPECT_EQ(r.gpus, 8);
  EXPECT_DOUBLE_EQ(r.cycle_us, 2300);
  EXPECT_NEAR(r.tokens_per_s, 2.5 / 2300e-6, 1e-9);             // one request
  EXPECT_NEAR(r.total_tokens_per_s, 16 * 2.5 / 2300e-6, 1e-6);   // the whole batch
  EXPECT_NEAR(r.tokens_per_s_per_gpu, 2 * 2.5 / 2300e-6, 1e-6);  // 16 requests over 8 GPUs
  EXPECT_DOUBLE_EQ(r.decode_tokens_per_s, 1000);
  EXPECT_DOUBLE_EQ(r.decode_total_tokens_per_s, 16000);
  EXPECT_NEAR(r.speedup_vs_decode, 2.5 * 1000 / 2300, 1e-12);
  EXPECT_DOUBLE_EQ(r.breakeven_accept_len, 2.3);
  EXPECT_THROW(derive_strategy_metrics(r, {Acceptance::Mode::length, 2.5}, 3, 0, 8), InputError);
}

TEST(Derive, SlowCycleNeverPaysOff) {
  StrategyResult r;
  r.verify = step_of(4000);
  r.decode = step_of(900);
  derive_strategy_metrics(r, {Acceptance::Mode::length, 3.0}, 3);
  EXPECT_DOUBLE_EQ(r.draft_us, 0);  // no draft step
  EXPECT_NEAR(r.speedup_vs_decode, 3.0 * 900 / 4000, 1e-12);
  EXPECT_NEAR(r.breakeven_accept_len, 4000.0 / 900, 1e-12);
  EXPECT_FALSE(r.breakeven_accept_rate.has_value());
}

TEST(Derive, NoDecodeStepLeavesSpeedupUnset) {
  StrategyResult r;
  r.verify = step_of(500);
  derive_strategy_metrics(r, {Acceptance::Mode::rate, 1.0}, 1);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 2.0 / 500e-6);
  EXPECT_DOUBLE_EQ(r.decode_us, 0);
  EXPECT_DOUBLE_EQ(r.speedup_vs_decode, 0);
  EXPECT_FALSE(r.breakeven_accept_rate.has_value());
}

TEST(Derive, UnsupportedIsLeftAlone) {
  StrategyResult r;
  r.supported = false;
  r.verify = step_of(500);
  derive_strategy_metrics(r, {Acceptance::Mode::rate, 0.7}, 3);
  EXPECT_DOUBLE_EQ(r.verify_us, 0);
}

}  // namespace
}  // namespace eaglesim
