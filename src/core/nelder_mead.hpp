#pragma once
// Derivative-free minimisation (Nelder and Mead's simplex) of a function of a few parameters:
// the fitted cost models have a max() in them, whose kink a gradient method trips over, and three
// parameters, where the simplex converges in a few hundred evaluations.
#include <functional>
#include <vector>

namespace eaglesim {

struct NelderMeadResult {
  std::vector<double> x;
  double value = 0;
  int evaluations = 0;
};

// Minimises f from `start`, the first simplex spanning `step` along each axis; stops when the
// simplex's values differ by less than `tolerance` or after `max_evaluations`. Restarts once from
// its result (a collapsed simplex can stall away from the minimum).
NelderMeadResult nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> start,
                             double step, double tolerance = 1e-12, int max_evaluations = 4000);

}  // namespace eaglesim
