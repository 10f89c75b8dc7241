#pragma once
// The middle of a set of measurements, in the two forms the code base reports:
//   median:        the mean of the two middle values for an even count (the usual median); the
//                  replay's step time, calibration's per-op times, the import's clock offsets;
//   middle_sample: the value of rank n / 2 once sorted, so always one measured sample (the upper
//                  of the two middle ones for an even count); bench-comm reports it, and its
//                  published figures were taken that way.
// Both take the vector by value (they sort a copy) and return 0 for an empty one.
#include <vector>

namespace eaglesim {

double median(std::vector<double> values);
double middle_sample(std::vector<double> values);

}  // namespace eaglesim
