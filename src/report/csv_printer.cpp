#include <fmt/format.h>

#include "domain/ranking.hpp"
#include "report/printers.hpp"

namespace eaglesim {

namespace {
// RFC 4180: quote fields containing separators, quotes or newlines.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}
std::string num(double v) { return fmt::format("{:.6g}", v); }
}  // namespace

std::string report_to_csv(const Report& report) {
  const Scenario& sc = report.scenario;
  std::string out =
      "model,topology,backend,tp,ranks,draft_tokens,strategy,supported,verify_us,compute_us,comm_us,comm_fraction,"
      "allreduce_count,allreduce_mean_us,draft_us,decode_us,tokens_per_cycle,tokens_per_s,speedup_vs_decode,"
      "breakeven_accept_rate,speedup_vs_first,reason\n";
  const std::string prefix = fmt::format("{},{},{},{},{},{}", csv_field(sc.model), csv_field(sc.topology),
                                         csv_field(sc.backend), sc.tp, sc.ranks, sc.draft_tokens);
  for (const StrategyResult& r : report.results) {
    if (!r.supported) {
      out += fmt::format("{},{},false,,,,,,,,,,,,,,{}\n", prefix, csv_field(r.strategy), csv_field(r.reason));
      continue;
    }
    const bool dec = r.decode_us > 0;
    out += fmt::format("{},{},true,{},{},{},{},{},{},{},{},{},{},{},{},{},\n", prefix, csv_field(r.strategy),
                       num(r.verify_us), num(r.compute_us), num(r.comm_us), num(r.comm_fraction), r.allreduce_count,
                       num(r.allreduce_mean_us), num(r.draft_us), dec ? num(r.decode_us) : "",
                       num(r.tokens_per_cycle), num(r.tokens_per_s), dec ? num(r.speedup_vs_decode) : "",
                       r.breakeven_accept_rate ? num(*r.breakeven_accept_rate) : "",
                       num(speedup_vs_reference(report, r)));
  }
  return out;
}

}  // namespace eaglesim
