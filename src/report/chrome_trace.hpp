#pragma once
// Chrome trace JSON (opens in Perfetto / chrome://tracing): a process per rank, a thread per
// stream, "X" events with args, instant markers at layer starts. Several timelines (e.g. one per
// strategy) become separate process groups, labelled by `labels`.
#include <string>
#include <vector>

#include "domain/timeline.hpp"

namespace eaglesim {

std::string timelines_to_chrome_json(const std::vector<Timeline>& timelines,
                                     const std::vector<std::string>& labels);

}  // namespace eaglesim
