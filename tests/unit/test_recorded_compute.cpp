// Which compute ops a replay runs as their recorded durations (backend/recorded_compute.hpp).
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "backend/recorded_compute.hpp"

using namespace eaglesim;

namespace {

Step step_with(bool every_op_recorded) {
  Step s;
  s.name = "verify";
  Op g;
  g.kind = OpKind::gemm;
  g.name = "qkv";
  g.m = 4, g.n = 1024, g.k = 1024;
  g.us = 12.5;
  Op ar;
  ar.kind = OpKind::allreduce;
  ar.name = "attn_allreduce";
  ar.bytes = 8192;  // allreduces never need a recorded time: they always run for real
  Op norm;
  norm.kind = OpKind::rmsnorm;
  norm.name = "post_attention_norm";
  norm.tokens = 4, norm.hidden = 1024;
  if (every_op_recorded) norm.us = 2.0;
  s.ops = {g, ar, norm};
  return s;
}

}  // namespace

TEST(RecordedCompute, AutoFollowsWhereTheTraceCameFrom) {
  EXPECT_TRUE(replay_runs_recorded_compute(step_with(true), OpTimes::automatic, true));
  EXPECT_FALSE(replay_runs_recorded_compute(step_with(true), OpTimes::automatic, false));
  // auto on an imported trace with gaps: the ops without a time run as eaglesim's kernels.
  EXPECT_TRUE(replay_runs_recorded_compute(step_with(false), OpTimes::automatic, true));
}

TEST(RecordedCompute, ModelNeverAndMeasuredAlways) {
  EXPECT_FALSE(replay_runs_recorded_compute(step_with(true), OpTimes::model, true));
  EXPECT_TRUE(replay_runs_recorded_compute(step_with(true), OpTimes::measured, false));
}

TEST(RecordedCompute, MeasuredNamesTheFirstOpWithoutATime) {
  try {
    (void)replay_runs_recorded_compute(step_with(false), OpTimes::measured, true);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("op_times measured"), std::string::npos) << what;
    EXPECT_NE(what.find("op 2 ('post_attention_norm', rmsnorm)"), std::string::npos) << what;
  }
}
