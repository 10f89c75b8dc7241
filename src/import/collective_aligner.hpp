#pragma once
// The cost of a collective, from several ranks' timelines. A collective kernel starts when its
// rank gets there and ends when the data of every rank has arrived, so its duration on an early
// rank is mostly waiting for the latest one (in an eager profile, ~10x the real cost). What the
// collective itself costs is the time from the moment the LAST rank entered it to the moment
// the FIRST rank left it: during that window every rank is inside the kernel and nobody is
// waiting for an arrival any more. cost_i = min_r end_r,i - max_r start_r,i.
//
// Ranks' clocks may be offset (different hosts, or different time bases). The ends of one
// collective are simultaneous up to the propagation of its last message (well under a
// microsecond over NVLink, a few over PCIe), much less than the waiting skew, so the offset of
// rank r is estimated as the median over all collectives of end_r,i - end_0,i; the median keeps
// a few collectives whose completion the profiler recorded late from moving it.
#include <vector>

namespace eaglesim {

struct CollectiveTiming {
  double start = 0, end = 0;  // this rank's clock, µs
};

struct CollectiveAlignment {
  std::vector<double> cost_us;          // per collective (by order of issue)
  std::vector<double> clock_offset_us;  // per rank, relative to rank 0
  int clamped = 0;                      // collectives whose window came out <= 0 (clock noise)
};

// timings[r][i]: collective i on rank r; every rank must have the same count (the caller
// checks and reports which file differs). Needs at least two ranks.
CollectiveAlignment align_collectives(const std::vector<std::vector<CollectiveTiming>>& timings);

}  // namespace eaglesim
