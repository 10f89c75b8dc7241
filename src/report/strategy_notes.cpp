#include "report/strategy_notes.hpp"

#include <algorithm>

namespace eaglesim {

std::vector<std::string> strategy_notes(const StrategyResult& r) {
  std::vector<std::string> out;
  auto seen = [&](const std::string& n) { return std::find(out.begin(), out.end(), n) != out.end(); };
  for (const std::string& n : r.verify.notes)
    if (!seen(n)) out.push_back(n);
  const std::vector<std::string> verify_notes = out;
  auto add_step = [&](const std::optional<StepResult>& step, const char* name) {
    if (!step) return;
    // The simulator's notes already start with their step's name ("draft: 2 allreduces fused ...").
    const std::string prefix = std::string(name) + ":";
    for (const std::string& n : step->notes) {
      if (std::find(verify_notes.begin(), verify_notes.end(), n) != verify_notes.end()) continue;
      const std::string marked = n.compare(0, prefix.size(), prefix) == 0 ? n : std::string(name) + " step: " + n;
      if (!seen(marked)) out.push_back(marked);
    }
  };
  add_step(r.draft, "draft");
  add_step(r.draft_extend, "draft_extend");
  add_step(r.decode, "decode");
  return out;
}

}  // namespace eaglesim
