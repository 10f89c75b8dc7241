#include <fmt/format.h>

#include "domain/cycle_parts.hpp"
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
      "model,topology,backend,tp,ranks,draft_tokens,batch,strategy,supported,verify_us,compute_us,comm_us,"
      "comm_fraction,allreduce_count,allreduce_mean_us,draft_us,decode_us,tokens_per_cycle,tokens_per_s,"
      "speedup_vs_decode,breakeven_accept_rate,speedup_vs_first,cycle_us,total_tokens_per_s,tokens_per_s_per_gpu,"
      "decode_tokens_per_s,decode_total_tokens_per_s,breakeven_accept_len,draft_extend_us,draft_forwards,"
      "draft_forward_us,topk_select_us,tree_build_us,verify_forward_us,sampling_us,host_sync_us,reason\n";
  const std::string prefix = fmt::format("{},{},{},{},{},{},{}", csv_field(sc.model), csv_field(sc.topology),
                                         csv_field(sc.backend), sc.tp, sc.ranks, sc.draft_tokens, sc.batch);
  for (const StrategyResult& r : report.results) {
    if (!r.supported) {
      out += fmt::format("{},{},false,{}{}\n", prefix, csv_field(r.strategy), std::string(27, ','), csv_field(r.reason));
      continue;
    }
    const bool dec = r.decode_us > 0;
    const CycleParts p = cycle_parts(r);
    out += fmt::format("{},{},true,{},{},{},{},{},{},{},{},{},{},{},{},{},", prefix, csv_field(r.strategy),
                       num(r.verify_us), num(r.compute_us), num(r.comm_us), num(r.comm_fraction), r.allreduce_count,
                       num(r.allreduce_mean_us), num(r.draft_us), dec ? num(r.decode_us) : "",
                       num(r.tokens_per_cycle), num(r.tokens_per_s), dec ? num(r.speedup_vs_decode) : "",
                       r.breakeven_accept_rate ? num(*r.breakeven_accept_rate) : "",
                       num(speedup_vs_reference(report, r)));
    out += fmt::format("{},{},{},{},{},{},", num(r.cycle_us), num(r.total_tokens_per_s), num(r.tokens_per_s_per_gpu),
                       dec ? num(r.decode_tokens_per_s) : "", dec ? num(r.decode_total_tokens_per_s) : "",
                       dec ? num(r.breakeven_accept_len) : "");
    out += fmt::format("{},{},{},{},{},{},{},{},\n", num(p.draft_extend_us), p.draft_forwards, num(p.draft_forward_us),
                       num(p.topk_select_us), num(p.tree_build_us), num(p.verify_forward_us), num(p.sampling_us),
                       num(p.host_sync_us));
  }
  return out;
}

}  // namespace eaglesim
