#pragma once
// Measured points as local corrections to a fitted model (cost/fitted_model.hpp). A table of one
// shape family (a GEMM's n, k and dtype by m; an attention layout by KV positions; an elementwise
// kind by tokens x hidden) says, at each measured size, how far the fit is from the measurement.
// Near those sizes the prediction takes that ratio on; away from them the fit stands alone:
//   r(size) = exp(fade(d) · log-linear interpolation of log(measured_i / fit_i) in log(size))
//   fade(d) = max(0, 1 - d / kCorrectionFadeOctaves), d = octaves to the nearest measured size
// so a measured size is reproduced exactly, a size between close points follows both, and a
// shape far from every point (another model's width, a longer KV) is priced by the fit: a
// correction learnt at one size says little about one 4x away.
#include <functional>
#include <vector>

#include "topology/topology.hpp"

namespace eaglesim {

inline constexpr double kCorrectionFadeOctaves = 2.0;

struct LocalCorrection {
  double factor = 1;    // multiply the fit by it
  double weight = 0;    // fade(d): 1 at a measured size, 0 where no point is near
};

// `table` sorted by size (the topology reader guarantees it); `fit_at(s)`: the fitted µs of the
// priced op at size s (its shape family's other fields kept). Points where the fit is not
// positive are skipped.
LocalCorrection local_correction(const std::vector<SizeCalPoint>& table, double size,
                                 const std::function<double(double)>& fit_at);

}  // namespace eaglesim
