#include "import/import_summary.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace eaglesim {

std::string summary_to_text(const ImportSummary& s) {
  std::string out;
  std::string steps;
  for (int i : s.steps_imported) steps += (steps.empty() ? "" : ",") + std::to_string(i);
  out += fmt::format("imported {} rank file(s), tp {}; steps: {} found, {} complete, imported {} ({})\n",
                     s.files.size(), s.tp, s.steps_found, s.complete_steps, steps, s.step_method);
  std::string kinds;
  for (const auto& [k, n] : s.ops_by_kind) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, k);
  out += fmt::format("per step: {} (op us sum {:.1f}, of which collectives {:.1f})\n", kinds, s.op_us_per_step,
                     s.collective_us_per_step);

  if (!s.shape_source.empty()) out += "shapes: " + s.shape_source + "\n";
  for (const auto& p : s.allreduce_paths) out += "allreduce path: " + p + "\n";
  // Per kind, how many kernels were recognised; then the names that were not.
  std::map<std::string, int> recognised;
  std::string unrecognised;
  int unrecognised_count = 0;
  for (const auto& r : s.kernels) {
    if (r.kind != "other") recognised[r.kind] += r.count;
    else if (r.what == "unrecognised") {
      unrecognised_count += r.count;
      unrecognised += fmt::format("{}{} x{}", unrecognised.empty() ? "" : ", ", r.kernel, r.count);
    }
  }
  std::string rec;
  for (const auto& [k, n] : recognised) rec += fmt::format("{}{} {}", rec.empty() ? "" : ", ", k, n);
  out += fmt::format("recognised kernels: {}\n", rec.empty() ? "none" : rec);
  out += fmt::format("unrecognised kernels: {}\n",
                     unrecognised_count == 0 ? "none" : fmt::format("{} ({})", unrecognised_count, unrecognised));

  std::vector<ImportSummaryRow> rows = s.kernels;
  std::stable_sort(rows.begin(), rows.end(), [](const ImportSummaryRow& a, const ImportSummaryRow& b) {
    const bool ao = a.kind == "other", bo = b.kind == "other";
    if (ao != bo) return bo;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.us > b.us;
  });
  out += "kernels (first rank, imported steps, raw durations):\n";
  std::string current;
  for (const auto& r : rows) {
    std::string head = r.kind == "other" ? "other (not typed; keeps measured us)" : r.kind;
    if (head != current) {
      current = head;
      out += fmt::format("  {}\n", head);
    }
    std::string tag = r.family;
    if (!r.what.empty()) tag = r.what + (tag.empty() || tag == r.what ? "" : ", " + tag);
    out += fmt::format("    {:>6} x {:>10.1f} us  {}{}\n", r.count, r.us, r.kernel, tag.empty() ? "" : "  [" + tag + "]");
  }
  return out;
}

}  // namespace eaglesim
