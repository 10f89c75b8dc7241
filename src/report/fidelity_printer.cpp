#include "report/fidelity_printer.hpp"

#include <cmath>

#include <fmt/format.h>

#include "report/printers.hpp"

namespace eaglesim {

namespace {

std::string pct(double e) {
  if (!std::isfinite(e)) return "inf";
  return fmt::format("{:+.2f}%", 100.0 * e);
}

}  // namespace

std::string format_fidelity(const std::vector<FidelityTrace>& traces, const FidelitySummary& s,
                            const std::string& topology, const std::string& baseline, double max_error_pct) {
  std::string out;
  out += fmt::format("# eaglesim fidelity: verify step, sim (calibrated: {}){} vs CUDA replay (measured)\n", topology,
                     baseline.empty() ? "" : fmt::format(" and sim (preset: {})", baseline));
  for (const auto& t : traces) {
    out += fmt::format("\n{} ({} rank{})\n", t.trace, t.ranks, t.ranks == 1 ? "" : "s");
    out += fmt::format("  {:<9} {:>11} {:>21} {:>11} {:>8}", "strategy", "measured_us", "[min..max]", "sim_us", "err");
    if (!baseline.empty()) out += fmt::format(" {:>11} {:>8}", "preset_us", "err");
    out += "\n";
    for (const auto& r : t.runs) {
      if (!r.measured || !r.predicted) {
        out += fmt::format("  {:<9} not run: {}\n", r.strategy, r.unsupported);
        continue;
      }
      const StepResult& m = *r.measured;
      const StepResult& p = *r.predicted;
      out += fmt::format("  {:<9} {:>11.1f} {:>21} {:>11.1f} {:>8}", r.strategy, m.step_us,
                         fmt::format("[{:.1f}..{:.1f}]", m.step_us_min, m.step_us_max), p.step_us,
                         pct(relative_error(p.step_us, m.step_us)));
      if (!baseline.empty()) {
        if (r.baseline)
          out += fmt::format(" {:>11.1f} {:>8}", r.baseline->step_us, pct(relative_error(r.baseline->step_us, m.step_us)));
        else
          out += fmt::format(" {:>11} {:>8}", "-", "-");
      }
      out += "\n";
    }
    std::string marginals;
    for (const auto& r : t.runs) {
      if (!r.measured || !r.predicted) continue;
      std::string line;
      for (int k = 0; k < kOpKindCount; ++k) {
        const auto& mk = r.measured->kind_marginal_us[k];
        const auto& pk = r.predicted->kind_marginal_us[k];
        if (!mk || !pk) continue;
        line += fmt::format(" {} {:.1f}/{:.1f} ({});", to_string(static_cast<OpKind>(k)), *mk, *pk,
                            pct(relative_error(*pk, *mk)));
      }
      if (!line.empty()) marginals += fmt::format("    {:<9}{}\n", r.strategy, line);
    }
    if (!marginals.empty())
      out += "  per op kind, marginal (the step minus the step without the kind; measured / sim calibrated, us):\n" +
             marginals;
    out += "  per op kind, split (measured: attribution replay with events between ops / sim calibrated, us):\n";
    for (const auto& r : t.runs) {
      if (!r.measured || !r.predicted) continue;
      std::string line;
      for (int k = 0; k < kOpKindCount; ++k) {
        const double mk = r.measured->kind_us[k], pk = r.predicted->kind_us[k];
        if (mk == 0 && pk == 0) continue;
        line += fmt::format(" {} {:.1f}/{:.1f} ({});", to_string(static_cast<OpKind>(k)), mk, pk,
                            pct(relative_error(pk, mk)));
      }
      out += fmt::format("    {:<9}{}\n", r.strategy, line);
    }
    const auto ab = compare_ab(t.runs, false);
    const auto ab_base = compare_ab(t.runs, true);
    if (!ab.empty()) {
      out += "  A/B (a - b, us): measured | sim | same sign";
      out += baseline.empty() ? "\n" : " | preset | same sign\n";
      for (const auto& c : ab) {
        out += fmt::format("    {:>8} - {:<8} {:>+9.1f} | {:>+9.1f} | {}{}", c.a, c.b, c.measured_diff,
                           c.predicted_diff, c.same_sign ? "yes" : "NO",
                           !c.same_sign && c.measured_within_noise ? " (measured within noise)" : "");
        for (const auto& b : ab_base)
          if (b.a == c.a && b.b == c.b)
            out += fmt::format(" | {:>+9.1f} | {}", b.predicted_diff, b.same_sign ? "yes" : "NO");
        out += "\n";
      }
    }
    for (const auto& n : t.notes) out += "  note: " + n + "\n";
  }
  out += fmt::format("\nsummary: calibrated max |err| {:.2f}% ({} the {:.1f}% target); A/B pairs with the same sign: "
                     "{}/{}",
                     100 * s.max_abs_error, 100 * s.max_abs_error <= max_error_pct ? "within" : "OUTSIDE",
                     max_error_pct, s.ab_pairs - s.ab_mismatches, s.ab_pairs);
  if (s.ab_mismatches > 0) out += fmt::format(" ({} outside measurement noise)", s.ab_mismatches_outside_noise);
  if (s.has_baseline)
    out += fmt::format("; preset max |err| {:.2f}%, A/B same sign {}/{}", 100 * s.max_abs_error_baseline,
                       s.ab_pairs_baseline - s.ab_mismatches_baseline, s.ab_pairs_baseline);
  out += "\n";
  return out;
}

nlohmann::json fidelity_json(const std::vector<FidelityTrace>& traces, const FidelitySummary& s,
                             const std::string& topology, const std::string& baseline, double max_error_pct) {
  using nlohmann::json;
  auto finite = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  auto step = [](const StepResult& r) {
    const json kinds = kind_us_json(r);
    json marginals = json::object();
    for (int k = 0; k < kOpKindCount; ++k)
      if (r.kind_marginal_us[k]) marginals[to_string(static_cast<OpKind>(k))] = *r.kind_marginal_us[k];
    return json{{"step_us", r.step_us},       {"step_us_min", r.step_us_min},
                {"step_us_max", r.step_us_max}, {"samples", r.samples},
                {"comm_us", r.comm_us},         {"compute_us", r.compute_us},
                {"kind_us", kinds},             {"kind_marginal_us", marginals},
                {"notes", r.notes}};
  };
  json j;
  j["topology"] = topology;
  j["baseline_topology"] = baseline.empty() ? json(nullptr) : json(baseline);
  j["max_error_pct"] = max_error_pct;
  j["traces"] = json::array();
  for (const auto& t : traces) {
    json jt{{"trace", t.trace}, {"ranks", t.ranks}, {"notes", t.notes}};
    jt["strategies"] = json::array();
    for (const auto& r : t.runs) {
      json jr{{"strategy", r.strategy}};
      if (!r.unsupported.empty()) jr["unsupported"] = r.unsupported;
      if (r.measured) jr["measured"] = step(*r.measured);
      if (r.predicted) jr["predicted"] = step(*r.predicted);
      if (r.baseline) jr["baseline"] = step(*r.baseline);
      if (r.measured && r.predicted) jr["error"] = finite(relative_error(r.predicted->step_us, r.measured->step_us));
      if (r.measured && r.baseline)
        jr["baseline_error"] = finite(relative_error(r.baseline->step_us, r.measured->step_us));
      jt["strategies"].push_back(jr);
    }
    auto ab_json = [](const std::vector<AbComparison>& v) {
      json a = json::array();
      for (const auto& c : v)
        a.push_back({{"a", c.a}, {"b", c.b}, {"measured_diff_us", c.measured_diff},
                     {"predicted_diff_us", c.predicted_diff}, {"same_sign", c.same_sign},
                     {"measured_within_noise", c.measured_within_noise}});
      return a;
    };
    jt["ab"] = ab_json(compare_ab(t.runs, false));
    jt["ab_baseline"] = ab_json(compare_ab(t.runs, true));
    j["traces"].push_back(jt);
  }
  j["summary"] = {{"max_abs_error", s.max_abs_error},
                  {"max_abs_error_baseline", s.has_baseline ? json(s.max_abs_error_baseline) : json(nullptr)},
                  {"ab_pairs", s.ab_pairs},
                  {"ab_mismatches", s.ab_mismatches},
                  {"ab_mismatches_outside_noise", s.ab_mismatches_outside_noise},
                  {"ab_pairs_baseline", s.ab_pairs_baseline},
                  {"ab_mismatches_baseline", s.ab_mismatches_baseline},
                  {"within_target", 100 * s.max_abs_error <= max_error_pct && s.ab_mismatches == 0}};
  return j;
}

}  // namespace eaglesim
