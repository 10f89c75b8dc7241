#include "import/step_splitter.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace {

void mark_usual_size_complete(StepSplit& s) {
  // A step is complete when it has the usual number of ops: the first one can hold warm-up
  // extras and the last one can be cut off when the profiler stops before its GPU work ends.
  std::map<std::size_t, int> sizes;
  for (const auto& st : s.steps) ++sizes[st.size()];
  std::size_t usual = 0;
  int best = 0;
  for (auto [size, count] : sizes)
    if (count > best || (count == best && size > usual)) { usual = size; best = count; }
  for (const auto& st : s.steps) s.complete.push_back(st.size() == usual);
}

StepSplit by_profiler_steps(const RankTrace& rank, const std::vector<ImportedOp>& ops) {
  StepSplit s;
  s.method = fmt::format("ProfilerStep#N marks ({} steps)", rank.profiler_steps.size());
  s.steps.resize(rank.profiler_steps.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const double t = ops[i].launch_ts;
    auto it = std::find_if(rank.profiler_steps.begin(), rank.profiler_steps.end(),
                           [t](const ProfilerStepMark& m) { return t >= m.ts && t <= m.end; });
    if (t < 0 || it == rank.profiler_steps.end()) { ++s.unassigned_ops; continue; }
    s.steps[static_cast<std::size_t>(it - rank.profiler_steps.begin())].push_back(i);
  }
  s.steps.erase(std::remove_if(s.steps.begin(), s.steps.end(), [](const auto& v) { return v.empty(); }), s.steps.end());
  mark_usual_size_complete(s);
  return s;
}

// A serving engine captures one forward pass per CUDA graph and replays it once per step, so
// without ProfilerStep marks each graph launch is a step.
StepSplit by_graph_launches(const std::vector<ImportedOp>& ops) {
  StepSplit s;
  std::int64_t current = -2;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].graph_launch != current) {
      s.steps.push_back({});
      current = ops[i].graph_launch;
    }
    s.steps.back().push_back(i);
  }
  s.method = fmt::format("one step per CUDA graph launch ({} launches)", s.steps.size());
  mark_usual_size_complete(s);
  return s;
}

// Smallest p such that the sequence repeats with period p at least twice; ids.size() if none.
std::size_t smallest_period(const std::vector<int>& ids) {
  const std::size_t n = ids.size();
  for (std::size_t p = 1; 2 * p <= n; ++p) {
    bool ok = true;
    for (std::size_t i = 0; i + p < n && ok; ++i) ok = ids[i] == ids[i + p];
    if (ok) return p;
  }
  return n;
}

}  // namespace

StepSplit split_steps(const RankTrace& rank, const std::vector<ImportedOp>& ops, std::optional<int> layers_per_step) {
  if (!rank.profiler_steps.empty()) return by_profiler_steps(rank, ops);
  if (!ops.empty() && std::all_of(ops.begin(), ops.end(), [](const ImportedOp& o) { return o.graph_launch >= 0; }))
    return by_graph_launches(ops);

  std::vector<int> ids;
  std::unordered_map<std::string, int> intern;
  for (const auto& op : ops) ids.push_back(intern.emplace(op.signature(), static_cast<int>(intern.size())).first->second);

  const bool has_allreduce = std::any_of(ops.begin(), ops.end(), [](const ImportedOp& o) { return o.op.kind == OpKind::allreduce; });
  const OpKind marker = has_allreduce ? OpKind::allreduce : OpKind::attention;
  const int markers_per_layer = has_allreduce ? 2 : 1;
  const char* marker_name = has_allreduce ? "allreduces" : "attention ops";

  const std::size_t period = smallest_period(ids);
  int markers_in_period = 0;
  for (std::size_t i = 0; i < period; ++i) markers_in_period += ops[i].op.kind == marker;

  StepSplit s;
  int per_step = 0;
  if (layers_per_step) {
    per_step = *layers_per_step * markers_per_layer;
    s.method = fmt::format("{} layers per step ({}), {} {} per step", *layers_per_step, setting_name(Setting::layers),
                           per_step, marker_name);
  } else if (period == ops.size()) {
    s.steps.push_back({});
    for (std::size_t i = 0; i < ops.size(); ++i) s.steps.back().push_back(i);
    s.complete.push_back(true);
    s.method = "no ProfilerStep#N marks and no repetition: the whole trace is one step";
    return s;
  } else if (markers_in_period <= markers_per_layer) {
    throw InputError::at(
        rank.file, "traceEvents",
        fmt::format("no ProfilerStep#N marks, and the ops repeat one decoder layer ({} ops, {} {}) {} times with "
                    "nothing between steps, so where a step ends is ambiguous; pass {} N (decoder layers per step)",
                    period, markers_in_period, marker_name, ops.size() / period, setting_name(Setting::layers)));
  } else {
    per_step = markers_in_period;
    s.method = fmt::format("repeating op pattern: {} ops and {} {} per step", period, per_step, marker_name);
  }

  // The trace is taken to open at the start of a step (the profiler wraps whole steps); a new
  // step begins once a step's markers have been seen and that opening op comes round again.
  const int opening = ids.front();
  int seen = 0;
  s.steps.push_back({});
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (seen >= per_step && ids[i] == opening) {
      s.complete.push_back(seen == per_step);
      s.steps.push_back({});
      seen = 0;
    }
    s.steps.back().push_back(i);
    seen += ops[i].op.kind == marker;
  }
  s.complete.push_back(seen == per_step);
  return s;
}

}  // namespace eaglesim
