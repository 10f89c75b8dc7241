#pragma once
// `eaglesim fidelity`'s outputs: the per-trace table (predicted vs measured per strategy and
// per op kind, the A/B signs) and the same as JSON.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/fidelity.hpp"

namespace eaglesim {

std::string format_fidelity(const std::vector<FidelityTrace>& traces, const FidelitySummary& s,
                            const std::string& topology, const std::string& baseline, double max_error_pct);
nlohmann::json fidelity_json(const std::vector<FidelityTrace>& traces, const FidelitySummary& s,
                             const std::string& topology, const std::string& baseline, double max_error_pct);

}  // namespace eaglesim
