#pragma once
// An imported trace whose verify step was GPU-bound when recorded (a CUDA-graph profile)
// carries the recorded step time (Step::measured_us). Replaying the recorded compute with each
// strategy's allreduces (--op-times measured) is only meaningful next to it: the strategy that
// runs the engine's own path should land on the recording, and the others differ from it by
// their allreduces alone. This note puts every strategy's verify time beside the recording.
#include <optional>
#include <string>
#include <vector>

#include "domain/report.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

// nullopt when the verify step has no measured_us.
std::optional<std::string> recorded_step_note(const Step& verify, const std::vector<StrategyResult>& results);

}  // namespace eaglesim
