#include <gtest/gtest.h>

#include "backend/recorded_step_note.hpp"

using namespace eaglesim;

TEST(RecordedStepNote, EveryStrategyBesideTheRecording) {
  Step verify;
  verify.name = "verify";
  std::vector<StrategyResult> results(3);
  results[0].strategy = "nccl";
  results[0].verify.step_us = 210.0;
  results[1].strategy = "oneshot";
  results[1].verify.step_us = 190.0;
  results[2].strategy = "quant";
  results[2].supported = false;
  EXPECT_FALSE(recorded_step_note(verify, results).has_value());  // nothing recorded: no note
  verify.measured_us = 200.0;
  auto note = recorded_step_note(verify, results);
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(*note, "recorded verify step: 200.0 us (the trace's measured_us); verify per strategy against it: "
                   "nccl 210.0 us (+5.0 %), oneshot 190.0 us (-5.0 %)");
}
