#include "report/printers.hpp"

#include "domain/cycle_parts.hpp"
#include "domain/ranking.hpp"
#include "domain/roofline.hpp"
#include "domain/speculation_verdict.hpp"
#include "report/strategy_notes.hpp"

namespace eaglesim {

namespace {
using json = nlohmann::ordered_json;

json step_notes(const StrategyResult& r) {
  json notes = json::array();
  for (const auto& n : strategy_notes(r)) notes.push_back(n);
  return notes;
}

// Where a resolved acceptance's E came from (docs/report-format.md, `scenario.acceptance.source`).
json acceptance_source_json(const AcceptanceSource& s) {
  json j;
  j["kind"] = to_string(s.kind);
  j["num_steps"] = s.config.num_steps;
  j["eagle_topk"] = s.config.eagle_topk;
  j["num_draft_tokens"] = s.config.num_draft_tokens;
  if (s.kind == AcceptanceSource::Kind::measured_table) {
    j["file"] = s.table_file;
    j["entry"] = s.table_entry;
    j["batch"] = s.table_batch ? json(*s.table_batch) : json(nullptr);
    j["batch_match"] = s.batch_match;
    j["measured_by"] = s.measured_by;
  }
  if (s.kind == AcceptanceSource::Kind::tree_model) {
    j["rate"] = s.rate ? json(*s.rate) : json(nullptr);
    j["rank_probabilities"] = s.rank_probabilities.empty() ? json(nullptr) : json(s.rank_probabilities);
    j["tree_parents"] = s.tree_parents;
  }
  j["unmatched_table"] = s.unmatched_table.empty() ? json(nullptr) : json(s.unmatched_table);
  return j;
}

json cycle_parts_json(const CycleParts& p) {
  return {{"draft_extend_us", p.draft_extend_us}, {"draft_forwards", p.draft_forwards},
          {"draft_forward_us", p.draft_forward_us}, {"topk_select_us", p.topk_select_us},
          {"tree_build_us", p.tree_build_us},     {"verify_forward_us", p.verify_forward_us},
          {"sampling_us", p.sampling_us},         {"host_sync_us", p.host_sync_us}};
}

json decode_parts_json(const DecodeParts& p) {
  return {{"forward_us", p.forward_us}, {"sampling_us", p.sampling_us}, {"host_sync_us", p.host_sync_us}};
}

json result_json(const Report& report, const StrategyResult& r) {
  json j;
  j["strategy"] = r.strategy;
  j["supported"] = r.supported;
  if (!r.supported) {
    // Same keys as a supported result, so consumers need no special case beyond null checks.
    for (const char* key : {"verify_us", "compute_us", "comm_us", "comm_fraction", "allreduce_count",
                            "allreduce_mean_us", "draft_us", "decode_us", "tokens_per_cycle", "tokens_per_s",
                            "speedup_vs_decode", "breakeven_accept_rate"})
      j[key] = nullptr;
    j["reason"] = r.reason;
    return j;
  }
  const bool has_decode = r.decode_us > 0;
  j["verify_us"] = r.verify_us;
  j["compute_us"] = r.compute_us;
  j["comm_us"] = r.comm_us;
  j["comm_fraction"] = r.comm_fraction;
  j["allreduce_count"] = r.allreduce_count;
  j["allreduce_mean_us"] = r.allreduce_mean_us;
  j["draft_us"] = r.draft_us;
  j["decode_us"] = has_decode ? json(r.decode_us) : json(nullptr);
  j["tokens_per_cycle"] = r.tokens_per_cycle;
  j["tokens_per_s"] = r.tokens_per_s;
  j["speedup_vs_decode"] = has_decode ? json(r.speedup_vs_decode) : json(nullptr);
  j["breakeven_accept_rate"] = r.breakeven_accept_rate ? json(*r.breakeven_accept_rate) : json(nullptr);
  // Extras.
  j["breakeven_accept_len"] = has_decode ? json(r.breakeven_accept_len) : json(nullptr);
  j["cycle_us"] = r.cycle_us;
  j["decode_tokens_per_s"] = has_decode ? json(r.decode_tokens_per_s) : json(nullptr);
  j["batch"] = r.batch;
  j["gpus"] = r.gpus;
  j["total_tokens_per_s"] = r.total_tokens_per_s;
  j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  j["decode_total_tokens_per_s"] = has_decode ? json(r.decode_total_tokens_per_s) : json(nullptr);
  j["cycle_parts"] = cycle_parts_json(cycle_parts(r));
  j["decode_parts"] = r.decode ? decode_parts_json(decode_parts(r)) : json(nullptr);
  j["speedup_vs_first"] = speedup_vs_reference(report, r);
  j["draft_step_us"] = r.draft ? json(r.draft->step_us) : json(nullptr);
  if (r.draft_extend) j["draft_extend_step_us"] = r.draft_extend->step_us;
  j["critical_rank"] = r.verify.critical_rank;
  j["verify_kind_us"] = kind_us_json(r.verify);
  j["verify_spread"] = {{"min_us", r.verify.step_us_min}, {"max_us", r.verify.step_us_max}, {"samples", r.verify.samples}};
  if (r.verify.ceilings) {
    const DeviceCeilings& c = *r.verify.ceilings;
    j["verify_ceilings"] = {{"device", c.device}, {"read_gbps", c.read_gbps}, {"bf16_tflops", c.bf16_tflops}};
    json rows = json::array();
    for (const RooflineRow& row : roofline_rows(r.verify)) {
      json o = {{"kind", to_string(row.kind)}, {"us", row.us}, {"bytes", row.bytes}, {"flops", row.flops},
                {"gbps", row.gbps}, {"tflops", row.tflops}, {"floor_us", row.floor_us},
                {"pct_of_floor", row.pct_of_floor}};
      if (row.by_size) {
        auto value = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
        const RooflineOps& l = row.large;
        const RooflineOps& s = row.small;
        o["large"] = {{"ops", l.ops},           {"us", l.us},
                      {"bytes", l.bytes},       {"flops", l.flops},
                      {"floor_us", l.floor_us}, {"pct_of_floor", value(l.pct_of_floor)}};
        o["small"] = {{"ops", s.ops},           {"us", s.us},
                      {"bytes", s.bytes},       {"flops", s.flops},
                      {"floor_us", s.floor_us}, {"excess_us_per_op", value(s.excess_us_per_op)}};
      }
      rows.push_back(std::move(o));
    }
    j["verify_roofline"] = std::move(rows);
  }
  j["notes"] = step_notes(r);
  j["deployable"] = r.deployable ? json(*r.deployable) : json(nullptr);
  j["deployment"] = r.deployment.empty() ? json(nullptr) : json(r.deployment);
  if (!r.verify.dispatch.empty()) {
    json dispatch;
    auto groups = [](const StepResult& step) {
      json a = json::array();
      for (const DispatchGroup& g : step.dispatch)
        a.push_back({{"bytes", g.bytes}, {"count", g.count}, {"path", g.path}, {"runs_as", g.model},
                     {"fuses_residual_norm", g.fuses}, {"us", g.us > 0 ? json(g.us) : json(nullptr)},
                     {"reason", g.reason}, {"ops", g.ops}});
      return a;
    };
    dispatch["verify"] = groups(r.verify);
    if (r.draft) dispatch["draft"] = groups(*r.draft);
    if (r.decode) dispatch["decode"] = groups(*r.decode);
    j["dispatch"] = std::move(dispatch);
  }
  return j;
}
}  // namespace

nlohmann::ordered_json kind_us_json(const StepResult& step) {
  json out = json::object();
  for (int k = 0; k < kOpKindCount; ++k)
    if (step.kind_us[static_cast<std::size_t>(k)] != 0)
      out[to_string(static_cast<OpKind>(k))] = step.kind_us[static_cast<std::size_t>(k)];
  return out;
}

nlohmann::ordered_json report_to_json(const Report& report) {
  const Scenario& sc = report.scenario;
  json scenario;
  scenario["trace"] = sc.trace_file;
  scenario["model"] = sc.model;
  scenario["topology"] = sc.topology;
  scenario["backend"] = sc.backend;
  scenario["tp"] = sc.tp;
  scenario["ranks"] = sc.ranks;
  scenario["draft_tokens"] = sc.draft_tokens;
  scenario["batch"] = sc.batch;
  scenario["acceptance"] = {{"mode", sc.acceptance.mode == Acceptance::Mode::rate ? "rate" : "length"},
                            {"value", sc.acceptance.value},
                            {"tokens_per_cycle", sc.acceptance.tokens_per_cycle(sc.draft_tokens)},
                            {"description", sc.acceptance.describe(sc.draft_tokens)}};
  if (sc.acceptance.source) scenario["acceptance"]["source"] = acceptance_source_json(*sc.acceptance.source);
  scenario["fused_add_norm"] = sc.fused_add_norm;
  scenario["allow_lossy"] = sc.allow_lossy;
  scenario["plain_baseline"] = sc.plain_baseline.empty() ? json(nullptr) : json(sc.plain_baseline);
  scenario["plain_baseline_tokens_per_s"] = sc.plain_baseline.empty() ? json(nullptr) : json(sc.plain_baseline_tokens_per_s);
  scenario["notes"] = sc.notes;
  json results = json::array();
  for (const StrategyResult& r : report.results) results.push_back(result_json(report, r));
  const StrategyResult* best = best_result(report);
  json doc;
  doc["scenario"] = std::move(scenario);
  doc["results"] = std::move(results);
  doc["best"] = best ? json(best->strategy) : json(nullptr);
  const StrategyResult* deployable = deployable_best_result(report);
  doc["deployable_best"] = deployable ? json(deployable->strategy) : json(nullptr);
  const StrategyResult* lossy = lossy_left_out(report);
  doc["lossy_left_out"] = lossy ? json(lossy->strategy) : json(nullptr);
  if (const StrategyResult* on = verdict_result(report)) {
    const SpeculationVerdict v = speculation_verdict(sc, *on);
    doc["verdict"] = {{"strategy", on->strategy}, {"state", to_string(v.state)}, {"text", v.text()}};
  } else {
    doc["verdict"] = nullptr;
  }
  return doc;
}

}  // namespace eaglesim
