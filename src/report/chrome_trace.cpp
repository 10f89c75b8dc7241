#include "report/chrome_trace.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/rounding.hpp"

namespace eaglesim {

namespace {
// Chrome-trace timestamps are µs; keep nanosecond resolution and print short numbers.
double us3(double us) { return round_to(us, 3); }
}  // namespace

std::string timelines_to_chrome_json(const std::vector<Timeline>& timelines, const std::vector<std::string>& labels) {
  if (!labels.empty() && labels.size() != timelines.size())
    throw std::logic_error("timelines_to_chrome_json: one label per timeline expected");
  using json = nlohmann::ordered_json;
  json events = json::array();
  int next_pid = 1;
  for (std::size_t g = 0; g < timelines.size(); ++g) {
    const Timeline& tl = timelines[g];
    const std::string label = labels.empty() ? std::string() : labels[g];
    const int base_pid = next_pid;
    next_pid += tl.ranks;
    // Metadata first: one process per rank (sorted strategy by strategy), one thread per stream.
    for (int r = 0; r < tl.ranks; ++r) {
      const int pid = base_pid + r;
      std::string pname = label.empty() ? fmt::format("{} rank {}", tl.step, r)
                                        : fmt::format("{} | {} rank {}", label, tl.step, r);
      events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", pname}}}});
      events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                        {"args", {{"sort_index", pid}}}});
      for (std::size_t s = 0; s < tl.stream_names.size(); ++s) {
        const int tid = static_cast<int>(s) + 1;
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                          {"args", {{"name", tl.stream_names[s]}}}});
        events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                          {"args", {{"sort_index", tid}}}});
      }
    }
    std::vector<int> last_layer(static_cast<std::size_t>(tl.ranks), -2);
    for (const Span& sp : tl.spans) {
      const int pid = base_pid + sp.rank;
      const int tid = sp.stream + 1;
      if (sp.rank >= 0 && sp.rank < tl.ranks && sp.layer >= 0 && sp.layer != last_layer[static_cast<std::size_t>(sp.rank)]) {
        events.push_back({{"name", fmt::format("layer {}", sp.layer)}, {"ph", "i"}, {"s", "p"}, {"ts", us3(sp.start_us)},
                          {"pid", pid}, {"tid", tid}});
      }
      if (sp.rank >= 0 && sp.rank < tl.ranks) last_layer[static_cast<std::size_t>(sp.rank)] = sp.layer;
      json args = {{"kind", to_string(sp.kind)}, {"layer", sp.layer}, {"op_index", sp.op_index}};
      if (!sp.shape.empty()) args["shape"] = sp.shape;
      if (sp.bytes > 0) args["bytes"] = sp.bytes;
      if (!sp.detail.empty()) args["detail"] = sp.detail;
      if (sp.kind == OpKind::allreduce) args["wait_us"] = us3(sp.wait_us);
      events.push_back({{"name", sp.name.empty() ? std::string(to_string(sp.kind)) : sp.name},
                        {"cat", to_string(sp.kind)},
                        {"ph", "X"},
                        {"ts", us3(sp.start_us)},
                        {"dur", us3(sp.end_us - sp.start_us)},
                        {"pid", pid},
                        {"tid", tid},
                        {"args", std::move(args)}});
    }
  }
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"generator", "eaglesim"}, {"version", EAGLESIM_VERSION}}}};
  return doc.dump() + "\n";
}

}  // namespace eaglesim
