#include "domain/roofline.hpp"

#include <algorithm>

namespace eaglesim {

std::vector<RooflineRow> roofline_rows(const StepResult& step) {
  std::vector<RooflineRow> rows;
  if (!step.ceilings || step.step_us <= 0) return rows;
  const DeviceCeilings& c = *step.ceilings;
  for (int k = 0; k < kOpKindCount; ++k) {
    const double us = step.kind_us[static_cast<std::size_t>(k)];
    const OpTraffic& t = step.kind_traffic[static_cast<std::size_t>(k)];
    if (us <= 0 || us < kRooflineMinShare * step.step_us || (t.bytes <= 0 && t.flops <= 0)) continue;
    RooflineRow r;
    r.kind = static_cast<OpKind>(k);
    r.us = us;
    r.bytes = t.bytes;
    r.flops = t.flops;
    r.gbps = t.bytes / (us * 1e3);     // B/µs = 1e6 B/s, GB/s = 1e9 B/s
    r.tflops = t.flops / (us * 1e6);   // FLOP/µs = 1e6 FLOP/s, TFLOP/s = 1e12 FLOP/s
    const double memory_us = c.read_gbps > 0 ? t.bytes / (c.read_gbps * 1e3) : 0.0;
    const double compute_us = c.bf16_tflops > 0 ? t.flops / (c.bf16_tflops * 1e6) : 0.0;
    r.floor_us = std::max(memory_us, compute_us);
    r.pct_of_floor = 100.0 * r.floor_us / us;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace eaglesim
