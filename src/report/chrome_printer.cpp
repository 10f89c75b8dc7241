// The verify-step timelines of every supported strategy, one Perfetto process group each.
#include "report/printers.hpp"
#include "report/chrome_trace.hpp"

namespace eaglesim {

std::string report_to_chrome_trace(const Report& report) {
  std::vector<Timeline> timelines;
  std::vector<std::string> labels;
  for (const StrategyResult& r : report.results) {
    if (!r.supported) continue;
    timelines.push_back(r.verify.timeline);
    labels.push_back(r.strategy);
  }
  return timelines_to_chrome_json(timelines, labels);
}

}  // namespace eaglesim
