#include "core/rounding.hpp"

#include <cmath>

namespace eaglesim {

double round_to(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  const double r = std::round(v * scale) / scale;
  return r == 0 ? 0.0 : r;
}

}  // namespace eaglesim
