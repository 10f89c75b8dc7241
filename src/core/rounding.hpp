#pragma once
// Rounding of figures for output (JSON, HTML, traces, tables): `v` to `digits` decimals, and never
// "-0", so that values written in two places compare equal and a zero reads as one.
namespace eaglesim {

double round_to(double v, int digits);

}  // namespace eaglesim
