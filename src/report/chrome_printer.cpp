// The timelines of every supported strategy, one Perfetto process group each: the whole cycle
// (draft-extend, draft forwards, verify) where the draft steps were priced, else the verify step.
#include "report/printers.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "report/chrome_trace.hpp"

namespace eaglesim {

namespace {

// One step's spans appended to a cycle's timeline from `t0`, its streams matched by name, its
// spans named after the step ("draft 2 | q_proj") so the trace reads as the cycle runs.
void append_step(Timeline& cycle, const Timeline& step, const std::string& label, double t0) {
  cycle.ranks = std::max(cycle.ranks, step.ranks);
  std::vector<int> stream_of(step.stream_names.size());
  for (std::size_t s = 0; s < step.stream_names.size(); ++s) {
    auto it = std::find(cycle.stream_names.begin(), cycle.stream_names.end(), step.stream_names[s]);
    if (it == cycle.stream_names.end()) it = cycle.stream_names.insert(cycle.stream_names.end(), step.stream_names[s]);
    stream_of[s] = static_cast<int>(it - cycle.stream_names.begin());
  }
  for (Span sp : step.spans) {
    sp.start_us += t0;
    sp.end_us += t0;
    if (sp.stream >= 0 && static_cast<std::size_t>(sp.stream) < stream_of.size()) sp.stream = stream_of[static_cast<std::size_t>(sp.stream)];
    sp.name = label + " | " + (sp.name.empty() ? std::string(to_string(sp.kind)) : sp.name);
    cycle.spans.push_back(std::move(sp));
  }
}

// The speculative cycle as it runs, for a strategy whose steps carry timelines: the draft-extend
// pass, the draft forwards, then the verify step, each after the last on every rank (the engine's
// host work between them is not drawn). A step without a timeline is left out.
Timeline cycle_timeline(const StrategyResult& r) {
  Timeline cycle;
  cycle.step = "cycle";
  cycle.ranks = r.verify.timeline.ranks;
  cycle.stream_names.clear();
  double t = 0;
  if (r.draft_extend && !r.draft_extend->timeline.spans.empty()) {
    append_step(cycle, r.draft_extend->timeline, "draft_extend", t);
    t += r.draft_extend->step_us;
  }
  if (r.draft && !r.draft->timeline.spans.empty())
    for (int i = 0; i < r.draft_forwards; ++i) {
      append_step(cycle, r.draft->timeline, fmt::format("draft {}", i + 1), t);
      t += r.draft->step_us;
    }
  append_step(cycle, r.verify.timeline, "verify", t);
  if (cycle.stream_names.empty()) cycle.stream_names.push_back("compute");
  return cycle;
}

}  // namespace

std::string report_to_chrome_trace(const Report& report) {
  std::vector<Timeline> timelines;
  std::vector<std::string> labels;
  for (const StrategyResult& r : report.results) {
    if (!r.supported) continue;
    const bool cycle = (r.draft && !r.draft->timeline.spans.empty()) ||
                       (r.draft_extend && !r.draft_extend->timeline.spans.empty());
    timelines.push_back(cycle ? cycle_timeline(r) : r.verify.timeline);
    labels.push_back(r.strategy);
  }
  return timelines_to_chrome_json(timelines, labels);
}

}  // namespace eaglesim
