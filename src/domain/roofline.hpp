#pragma once
// How far each op kind of a measured step is from what its device allows: per kind, the time,
// the fewest bytes and the FLOPs, what that achieves, and the floor
// max(bytes / read bandwidth, FLOPs / tensor peak); and the same for the kind's large ops (each
// moving >= 16 MB) and its small ones apart, as the kernel bars judge them: a large op by its
// share of its floor, a small one by its time over its floor. Only for steps that carry their
// device's ceilings (the CUDA backend); the printers show these rows as they are.
#include <optional>
#include <string>
#include <vector>

#include "domain/step_result.hpp"

namespace eaglesim {

// An op (a unit of StepResult::unit_traffic: the op, or the fused kernel that runs it with the op
// after it) moving at least this many bytes is large: held to a share of its floor. Smaller ops
// are launch- and latency-bound: judged by their µs over their floor.
constexpr double kRooflineLargeOpBytes = 16e6;

// One kind's ops of one size.
struct RooflineOps {
  int ops = 0;
  double us = 0;        // the kind's `us` times these ops' share of the kind's op time on the critical rank
  double bytes = 0;
  double flops = 0;
  double floor_us = 0;  // the sum of the ops' own floors, each max(bytes / read_gbps, flops / bf16_tflops)
  std::optional<double> pct_of_floor;      // 100 · floor_us / us; none when us is 0
  std::optional<double> excess_us_per_op;  // (us − floor_us) / ops; none without ops
};

struct RooflineRow {
  OpKind kind = OpKind::other;
  double us = 0;
  double bytes = 0;
  double flops = 0;
  double gbps = 0;          // bytes / us, GB/s
  double tflops = 0;        // flops / us, TFLOP/s
  double floor_us = 0;      // max(bytes / read_gbps, flops / bf16_tflops)
  double pct_of_floor = 0;  // 100 · floor_us / us: 100 % is at the device's limit
  // The split by op size, when the step carries its ops' traffic (StepResult::unit_traffic) and
  // the critical rank's spans of them (by_size); large.us + small.us = us.
  bool by_size = false;
  RooflineOps large;        // ops moving >= kRooflineLargeOpBytes each
  RooflineOps small;        // the rest
};

// Kinds whose time is at least this share of the step, and that move bytes or do FLOPs: the
// rest cannot change where the step's time goes.
constexpr double kRooflineMinShare = 0.01;

// Empty without ceilings or without a step time. An op's time, for the split by size, is its span
// on the critical rank, fitted to the step as `kind_us` is (domain/kind_attribution.hpp: the event
// nodes' overhead off every op alike); each size's `us` is the kind's `us` in proportion to it.
std::vector<RooflineRow> roofline_rows(const StepResult& step);

}  // namespace eaglesim
