#pragma once
// Interpolation in measured tables (topology "calibration" section). Between two measured
// points the cost is interpolated linearly in log(size)-log(µs) space: kernel time follows a
// power law of size piecewise (flat while latency-bound, linear once bandwidth-bound), which a
// log-log line follows on both regimes. Outside the measured range nothing is invented: the
// caller falls back to its model and flags the result as extrapolated.
#include <cstdint>
#include <vector>

#include "topology/topology.hpp"

namespace eaglesim {

struct TableLookup {
  bool has_table = false;  // a table exists for this key
  bool inside = false;     // size within [first, last] point: `us` is valid
  double us = 0;
};

// `table` must be sorted by size, sizes distinct (the topology reader guarantees it).
TableLookup interpolate_table(const std::vector<SizeCalPoint>& table, double size);
// GEMM points with the same n, k and dtype, interpolated in m.
TableLookup lookup_gemm(const Calibration& cal, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype);

}  // namespace eaglesim
