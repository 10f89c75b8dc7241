#pragma once
// How far each op kind of a measured step is from what its device allows: per kind, the time,
// the fewest bytes and the FLOPs, what that achieves, and the floor
// max(bytes / read bandwidth, FLOPs / tensor peak). Only for steps that carry their device's
// ceilings (the CUDA backend); the printers show these rows as they are.
#include <string>
#include <vector>

#include "domain/step_result.hpp"

namespace eaglesim {

struct RooflineRow {
  OpKind kind = OpKind::other;
  double us = 0;
  double bytes = 0;
  double flops = 0;
  double gbps = 0;          // bytes / us, GB/s
  double tflops = 0;        // flops / us, TFLOP/s
  double floor_us = 0;      // max(bytes / read_gbps, flops / bf16_tflops)
  double pct_of_floor = 0;  // 100 · floor_us / us: 100 % is at the device's limit
};

// Kinds whose time is at least this share of the step, and that move bytes or do FLOPs: the
// rest cannot change where the step's time goes.
constexpr double kRooflineMinShare = 0.01;

// Empty without ceilings or without a step time.
std::vector<RooflineRow> roofline_rows(const StepResult& step);

}  // namespace eaglesim
