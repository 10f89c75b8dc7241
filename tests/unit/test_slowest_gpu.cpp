// Which GPUs a calibration entry's time comes from: the slowest of the GPUs the steps that use it
// run on (a one-GPU step on GPU 0), so that a 2-GPU calibration does not price a TP1 step at the
// other GPU when the two differ.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "calibration/calibration_plan.hpp"
#include "calibration/slowest_gpu.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Trace trace(const char* name) { return read_trace(std::string(EAGLESIM_REPO) + "/traces/" + name); }

}  // namespace

TEST(SlowestGpu, EachEntryTakesTheSlowestOfItsFirstGpus) {
  const std::vector<std::vector<double>> per_gpu{{10, 20, 30, 40}, {11, 19, 33, 38}};
  const std::vector<double> out = slowest_of_first_gpus(per_gpu, {1, 2, 2, 1});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_DOUBLE_EQ(out[0], 10);  // one-GPU entry: GPU 0, although GPU 1 was slower
  EXPECT_DOUBLE_EQ(out[1], 20);
  EXPECT_DOUBLE_EQ(out[2], 33);
  EXPECT_DOUBLE_EQ(out[3], 40);
}

TEST(SlowestGpu, MissingSpansMeanEveryGpuAndAreClamped) {
  const std::vector<std::vector<double>> per_gpu{{10, 20}, {12, 25}};
  const std::vector<double> all = slowest_of_first_gpus(per_gpu, {});
  EXPECT_DOUBLE_EQ(all[0], 12);
  EXPECT_DOUBLE_EQ(all[1], 25);
  const std::vector<double> clamped = slowest_of_first_gpus(per_gpu, {0, 9});
  EXPECT_DOUBLE_EQ(clamped[0], 10);  // below 1: GPU 0
  EXPECT_DOUBLE_EQ(clamped[1], 25);  // beyond the GPUs measured: all of them
}

TEST(SlowestGpu, AnEntryNotMeasuredOnAGpuTakesTheOthersAndNoneGivesNaN) {
  const std::vector<std::vector<double>> per_gpu{{kNaN, 5, kNaN, 0}, {7, kNaN, kNaN, -1}};
  const std::vector<double> out = slowest_of_first_gpus(per_gpu, {2, 2, 2, 2});
  EXPECT_DOUBLE_EQ(out[0], 7);
  EXPECT_DOUBLE_EQ(out[1], 5);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_TRUE(std::isnan(out[3]));  // non-positive is not a measurement
  EXPECT_TRUE(std::isnan(slowest_of_first_gpus({{kNaN}}, {1})[0]));
}

TEST(SlowestGpu, GpusThatMeasuredDifferentEntryCountsAreAnError) {
  EXPECT_THROW(slowest_of_first_gpus({{1, 2}, {1}}, {}), std::invalid_argument);
  EXPECT_TRUE(slowest_of_first_gpus({}, {1}).empty());
}

TEST(SlowestGpu, PlanMarksTp1ShapesForGpu0AndSharedShapesForBoth) {
  const Trace tp1 = trace("llama-3.1-8b_tp1_t4.json");
  const Trace tp2 = trace("llama-3.1-8b_tp2_t4.json");
  CalibrationPlanOptions o;
  o.ranks = 2;
  o.strategies = {"nccl"};
  const CalibrationRequest q = plan_calibration({tp1, tp2}, o);
  ASSERT_EQ(q.compute_gpus.size(), q.compute.size());
  bool tp1_gemm = false, tp2_gemm = false, norm = false;
  for (std::size_t i = 0; i < q.compute.size(); ++i) {
    const Op& op = q.compute[i];
    if (op.kind == OpKind::gemm && op.k == 4096 && op.n == 6144) {  // fused QKV, whole (TP1)
      tp1_gemm = true;
      EXPECT_EQ(q.compute_gpus[i], 1) << op.shape_string();
    }
    if (op.kind == OpKind::gemm && op.k == 4096 && op.n == 3072) {  // fused QKV, half (TP2)
      tp2_gemm = true;
      EXPECT_EQ(q.compute_gpus[i], 2) << op.shape_string();
    }
    if (op.kind == OpKind::rmsnorm && op.hidden == 4096) {  // both traces: the wider counts
      norm = true;
      EXPECT_EQ(q.compute_gpus[i], 2) << op.shape_string();
    }
  }
  EXPECT_TRUE(tp1_gemm && tp2_gemm && norm);
  ASSERT_FALSE(q.compute_layers.empty());
  for (const ComputeLayerCase& c : q.compute_layers)
    EXPECT_EQ(c.gpus, c.where.find(" tp1 ") != std::string::npos ? 1 : 2) << c.where;

  // On one GPU everything is GPU 0's; a TP2 trace calibrated on one GPU too.
  CalibrationPlanOptions one;
  const CalibrationRequest q1 = plan_calibration({tp1, tp2}, one);
  for (int g : q1.compute_gpus) EXPECT_EQ(g, 1);
  for (const ComputeLayerCase& c : q1.compute_layers) EXPECT_EQ(c.gpus, 1);
}
