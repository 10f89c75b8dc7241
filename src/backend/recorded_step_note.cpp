#include "backend/recorded_step_note.hpp"

#include <fmt/format.h>

namespace eaglesim {

std::optional<std::string> recorded_step_note(const Step& verify, const std::vector<StrategyResult>& results) {
  if (!verify.measured_us || *verify.measured_us <= 0) return std::nullopt;
  const double recorded = *verify.measured_us;
  std::string each;
  for (const auto& r : results) {
    if (!r.supported) continue;
    each += fmt::format("{}{} {:.1f} us ({:+.1f} %)", each.empty() ? "" : ", ", r.strategy, r.verify.step_us,
                        100.0 * (r.verify.step_us - recorded) / recorded);
  }
  return fmt::format("recorded verify step: {:.1f} us (the trace's measured_us); verify per strategy against it: {}",
                     recorded, each.empty() ? "none ran" : each);
}

}  // namespace eaglesim
