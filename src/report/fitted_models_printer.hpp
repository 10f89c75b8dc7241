#pragma once
// The fitted cost models of a calibrated topology and what each fit misses on the points it was
// fitted to, by kind: how far a shape far from every measured point can be off (fidelity prints it
// before its table; a held-out case's error should be of that order).
#include <string>

#include <nlohmann/json.hpp>

#include "topology/topology.hpp"

namespace eaglesim {

// One line per fitted key: parameters, points, rms and max residual; "" without fitted models.
std::string format_fitted_models(const Topology& topo);
// {"KEY": {"fixed_us", "bw_gbs", "tflops", "points", "rms_residual", "max_residual"}}; {} without.
nlohmann::json fitted_models_json(const Topology& topo);

}  // namespace eaglesim
