#include "sweep/sweep_output.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/strategy_facts.hpp"
#include "core/rounding.hpp"

namespace eaglesim {

namespace {

using json = nlohmann::ordered_json;

double us(double v) { return round_to(v, 3); }
double rate(double v) { return round_to(v, 6); }
double gb(double v) { return round_to(v, 3); }

const char* mode_name(const Acceptance& a) {
  if (a.source && !a.source->rank_probabilities.empty()) return "probs";
  return a.mode == Acceptance::Mode::rate ? "rate" : "length";
}
json accept_value(const Acceptance& a) {
  if (a.source && !a.source->rank_probabilities.empty()) return a.source->rank_probabilities;
  return a.value;
}

// Which input gave a priced row's E: the chain formula of a rate, a given length, a measured
// table's entry or the tree model (AcceptanceSource::Kind).
json accept_source_name(const SweepResults& res, const SweepRow& r) {
  if (r.accept_source < 0) return nullptr;
  const Acceptance& a = res.acceptance_sources[static_cast<std::size_t>(r.accept_source)];
  if (a.source) return to_string(a.source->kind);
  return a.mode == Acceptance::Mode::rate ? "chain_rate" : "measured_flag";
}

// E and where it came from, as the text tables show it: "2.80 meas" (a measurement: --acceptance or
// --accept-len) or "2.41 model" (the acceptance model at a rate given, fitted or assumed).
std::string e_text(const SweepResults& res, const SweepRow& r) {
  return fmt::format("{:.2f} {}", r.tokens_per_cycle, row_e_measured(res, r) ? "meas" : "model");
}

// One row as ordered (key, value) pairs; JSON and CSV both come from this list so they cannot
// disagree on names, order or rounding.
std::vector<std::pair<const char*, json>> row_fields(const SweepResults& res, const SweepRow& r) {
  const bool ok = r.ok();
  const bool mem_known = r.unfit != UnfitKind::tp_exceeds_gpus && r.unfit != UnfitKind::tp_sharding;
  auto metric = [&](double v) { return ok ? json(v) : json(nullptr); };
  return {
      {"index", r.index},
      {"model", r.model},
      {"draft_model", r.draft_model},
      {"topology", r.topology},
      {"gpu", r.gpu},
      {"gpu_count", r.gpu_count},
      {"weight_dtype", to_string(r.weight_dtype)},
      {"tp", r.tp},
      {"ep", r.ep},
      {"dp_attention", r.dp_attention},
      {"batch", r.batch},
      {"kv_len", res.axes.kv_len},
      {"num_steps", r.spec.num_steps},
      {"eagle_topk", r.spec.eagle_topk},
      {"num_draft_tokens", r.spec.num_draft_tokens},
      {"draft_tokens", r.draft_tokens},
      {"accept_mode", mode_name(r.acceptance)},
      {"accept_value", accept_value(r.acceptance)},
      {"accept_source", accept_source_name(res, r)},
      {"accept_source_index", r.accept_source >= 0 ? json(r.accept_source) : json(nullptr)},
      {"strategy", r.strategy},
      {"status", to_string(r.unfit)},
      {"reason", r.reason},
      {"mem_need_gb", mem_known ? json(gb(r.mem_need_gb)) : json(nullptr)},
      {"mem_usable_gb", mem_known ? json(gb(r.mem_usable_gb)) : json(nullptr)},
      {"verify_us", metric(us(r.verify_us))},
      {"verify_compute_us", metric(us(r.verify_compute_us))},
      {"verify_allreduce_us", metric(us(r.comm_us))},
      {"verify_other_us", metric(us(r.verify_other_us))},
      {"allreduce_count", ok ? json(r.allreduce_count) : json(nullptr)},
      {"allreduce_mean_us", metric(us(r.allreduce_mean_us))},
      {"draft_us", metric(us(r.draft_us))},
      {"decode_us", ok && r.decode_us > 0 ? json(us(r.decode_us)) : json(nullptr)},
      {"cycle_us", metric(us(r.cycle_us))},
      {"tokens_per_cycle", metric(rate(r.tokens_per_cycle))},
      {"tokens_per_s", metric(us(r.tokens_per_s))},
      {"total_tokens_per_s", metric(us(r.total_tokens_per_s))},
      {"tokens_per_s_per_gpu", metric(us(r.tokens_per_s_per_gpu))},
      {"decode_tokens_per_s", ok && r.decode_us > 0 ? json(us(r.decode_tokens_per_s)) : json(nullptr)},
      {"decode_total_tokens_per_s", ok && r.decode_us > 0 ? json(us(r.decode_total_tokens_per_s)) : json(nullptr)},
      {"speedup_vs_decode", ok && r.decode_us > 0 ? json(rate(r.speedup_vs_decode)) : json(nullptr)},
      {"breakeven_accept_rate",
       ok && r.breakeven_accept_rate ? json(rate(*r.breakeven_accept_rate)) : json(nullptr)},
      {"breakeven_accept_len", ok && r.decode_us > 0 ? json(rate(r.breakeven_accept_len)) : json(nullptr)},
  };
}

// What a chosen configuration's JSON entry starts with: where it was chosen and, when there is
// one, the row and its strategy, weights and TP.
json choice_head(const SweepResults& res, const std::string& model, const std::string& topology, const Acceptance& a,
                 const std::optional<std::size_t>& row) {
  json j;
  j["model"] = model;
  j["topology"] = topology;
  j["accept_mode"] = mode_name(a);
  j["accept_value"] = accept_value(a);
  j["row"] = row ? json(*row) : json(nullptr);
  if (row) {
    const SweepRow& r = res.row(*row);
    j["strategy"] = r.strategy;
    j["weight_dtype"] = to_string(r.weight_dtype);
    j["tp"] = r.tp;
    j["ep"] = r.ep;
    j["dp_attention"] = r.dp_attention;
  }
  return j;
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  return v.dump();
}

std::string fmt_rate(double v) { return fmt::format("{:.1f}", v); }

// The tables' parallelism column: the TP alone when every layout is plain tensor parallelism,
// else the layout's label ("TP16 EP16 DPA") in a column as wide as the longest.
bool plain_tp_only(const SweepAxes& ax) { return tensor_parallel_only(ax.layouts); }
std::size_t layout_width(const SweepAxes& ax) {
  if (plain_tp_only(ax)) return 3;
  std::size_t w = 6;
  for (const ParallelLayout& l : ax.layouts) w = std::max(w, layout_label(l).size());
  return w;
}
std::string layout_header(const SweepAxes& ax) {
  return fmt::format("{:>{}}", plain_tp_only(ax) ? "TP" : "layout", layout_width(ax));
}
std::string layout_cell(const SweepAxes& ax, const SweepRow& r) {
  if (plain_tp_only(ax)) return fmt::format("{:>3}", r.tp);
  return fmt::format("{:>{}}", layout_label({r.tp, r.ep, r.dp_attention}), layout_width(ax));
}

// The best configuration per batch and where speculation stops paying; shown when the sweep
// has more than one batch or a configuration other than a chain (otherwise the table above
// says it all).
std::string batch_table(const SweepResults& res) {
  const SweepAxes& ax = res.axes;
  bool trees = false;
  for (const SpecConfig& c : ax.spec_configs) trees = trees || !is_chain(c);
  if (ax.batches.size() < 2 && !trees) return "";
  std::size_t wm = 5, wt = 8;
  for (const std::string& m : ax.models) wm = std::max(wm, m.size());
  for (const std::string& t : ax.topologies) wt = std::max(wt, t.size());
  std::string out = "\nBest configuration per batch (by total tok/s; S/K/D = num_steps/eagle_topk/num_draft_tokens; "
                    "plain = fastest plain decoding at that batch)\n";
  out += fmt::format("{:<{}}  {:<{}}  {:<6}  {:>5}  {:<9} {} {:<5} {:<8} {:<10}  {:>10}  {:>9}  {:>9}  {:>10}  {:>7}\n",
                     "model", wm, "topology", wt, "accept", "batch", "strategy", layout_header(ax), "dtype", "S/K/D", "E",
                     "total tok/s", "req tok/s", "tok/s/GPU", "plain", "speedup");
  std::size_t li = 0;
  const std::size_t B = ax.batches.size();
  for (std::size_t i = 0; i < res.batch_best.size(); ++i) {
    const SweepBatchBest& b = res.batch_best[i];
    const std::string acc = short_acceptance(ax.acceptances[b.acceptance]);
    // A (model, topology, acceptance) where nothing runs at any batch: one line, not one per batch.
    if (i % B == 0 && B > 1 &&
        std::none_of(res.batch_best.begin() + static_cast<std::ptrdiff_t>(i),
                     res.batch_best.begin() + static_cast<std::ptrdiff_t>(i + B),
                     [](const SweepBatchBest& e) { return e.row.has_value(); })) {
      out += fmt::format("{:<{}}  {:<{}}  {:<6}  {:>5}  nothing runs at any batch (see below)\n", ax.models[b.model], wm,
                         ax.topologies[b.topology], wt, acc, "all");
      i += B - 1;
      ++li;
      continue;
    }
    if (!b.row) {
      out += fmt::format("{:<{}}  {:<{}}  {:<6}  {:>5}  nothing runs (see below)\n", ax.models[b.model], wm,
                         ax.topologies[b.topology], wt, acc, b.batch);
    } else {
      const SweepRow& r = res.row(*b.row);
      out += fmt::format("{:<{}}  {:<{}}  {:<6}  {:>5}  {:<9} {} {:<5} {:<8} {:<10}  {:>10}  {:>9}  {:>9}  {:>10}  {:>7}\n",
                         ax.models[b.model], wm, ax.topologies[b.topology], wt, acc, b.batch, r.strategy, layout_cell(ax, r),
                         to_string(r.weight_dtype), short_spec(r.spec), e_text(res, r), fmt_rate(r.total_tokens_per_s),
                         fmt_rate(r.tokens_per_s), fmt_rate(r.tokens_per_s_per_gpu),
                         b.plain_row ? fmt_rate(b.plain_total_tokens_per_s) : "n/a",
                         b.plain_row ? fmt::format("{:.2f}x", b.speedup_vs_plain) : "n/a");
    }
    const bool last_of_group = i + 1 == res.batch_best.size() || res.batch_best[i + 1].acceptance != b.acceptance ||
                               res.batch_best[i + 1].topology != b.topology || res.batch_best[i + 1].model != b.model;
    if (last_of_group && li < res.pay_limits.size())
      out += fmt::format("  -> {} on {} at {}: {}\n", ax.models[b.model], ax.topologies[b.topology], acc,
                         pay_limit_text(res.pay_limits[li++]));
  }
  if (!ax.skipped_configs.empty()) {
    out += fmt::format("Skipped {} configuration{} SGLang would not run:", ax.skipped_configs.size(),
                       ax.skipped_configs.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < ax.skipped_configs.size() && i < 3; ++i)
      out += fmt::format("\n  {}: {}", short_spec(ax.skipped_configs[i].config), ax.skipped_configs[i].reason);
    out += ax.skipped_configs.size() > 3 ? "\n  ... (every one in the JSON, axes.skipped_configs)\n" : "\n";
  }
  return out;
}

// The layouts side by side per batch (shown when the sweep has more than one): each one's fastest
// speculative configuration and plain decoding, and which is the batch's fastest.
std::string layout_table(const SweepResults& res) {
  if (res.layout_best.empty()) return "";
  const SweepAxes& ax = res.axes;
  const std::size_t L = ax.layouts.size();
  std::size_t wm = 5, wt = 8, wl = 6;
  for (const std::string& m : ax.models) wm = std::max(wm, m.size());
  for (const std::string& t : ax.topologies) wt = std::max(wt, t.size());
  for (const ParallelLayout& l : ax.layouts) wl = std::max(wl, layout_label(l).size());
  std::string out = "\nParallel layouts per batch (total tok/s; * = the batch's fastest; DPA = data-parallel attention, "
                    "the MoE by all-to-all";
  out += ax.a2a.empty() ? ")\n" : fmt::format(", {})\n", ax.a2a);
  out += fmt::format("{:<{}}  {:<{}}  {:<6}  {:>5}  {:<{}}  {:<9} {:<5} {:<8}  {:>12}  {:>12}  {}\n", "model", wm,
                     "topology", wt, "accept", "batch", "layout", wl, "strategy", "dtype", "S/K/D", "speculative",
                     "plain", "speedup");
  for (std::size_t i = 0; i < res.layout_best.size(); i += L) {
    double fastest = 0;
    for (std::size_t l = 0; l < L; ++l) {
      const SweepLayoutBest& e = res.layout_best[i + l];
      fastest = std::max({fastest, e.total_tokens_per_s, e.plain_total_tokens_per_s});
    }
    for (std::size_t l = 0; l < L; ++l) {
      const SweepLayoutBest& e = res.layout_best[i + l];
      const std::string head = fmt::format("{:<{}}  {:<{}}  {:<6}  {:>5}  {:<{}}  ", ax.models[e.model], wm,
                                           ax.topologies[e.topology], wt, short_acceptance(ax.acceptances[e.acceptance]),
                                           e.batch, layout_label(ax.layouts[l]), wl);
      if (!e.row && !e.plain_row) {
        out += head + "cannot run (see below)\n";
        continue;
      }
      auto cell = [&](bool has, double v) {
        return has ? fmt::format("{}{}", fmt_rate(v), v == fastest && v > 0 ? "*" : " ") : std::string("n/a ");
      };
      const SweepRow* r = e.row ? &res.row(*e.row) : nullptr;
      out += head + fmt::format("{:<9} {:<5} {:<8}  {:>12}  {:>12}  {}\n", r ? r->strategy : "-",
                                r ? to_string(r->weight_dtype) : "-", r ? short_spec(r->spec) : "-",
                                cell(e.row.has_value(), e.total_tokens_per_s),
                                cell(e.plain_row.has_value(), e.plain_total_tokens_per_s),
                                e.row && e.plain_row && e.plain_total_tokens_per_s > 0
                                    ? fmt::format("{:.2f}x", e.total_tokens_per_s / e.plain_total_tokens_per_s)
                                    : "n/a");
    }
  }
  return out;
}

}  // namespace

std::string pay_limit_text(const SweepPayLimit& l) {
  if (l.batches_run == 0) return "nothing runs with a plain-decoding baseline to compare";
  if (l.stops_at_batch) return fmt::format("speculation stops paying at batch {}", *l.stops_at_batch);
  return "speculation pays at every batch swept";
}

std::string short_acceptance(const Acceptance& a) {
  if (a.source && !a.source->rank_probabilities.empty()) return "q=" + a.source->rank_probabilities;
  return a.mode == Acceptance::Mode::rate ? fmt::format("a={:.2f}", a.value) : fmt::format("E={:.2f}", a.value);
}

json sweep_to_json(const SweepResults& res) {
  const SweepAxes& ax = res.axes;
  json doc;
  doc["format"] = "eaglesim-sweep";
  doc["version"] = 2;
  json axes;
  axes["models"] = ax.models;
  axes["draft_models"] = ax.draft_models;
  axes["topologies"] = ax.topologies;
  json dtypes = json::array();
  for (DType d : ax.weight_dtypes) dtypes.push_back(to_string(d));
  axes["weight_dtypes"] = dtypes;
  std::vector<int> tps;
  for (const ParallelLayout& l : ax.layouts)
    if (std::find(tps.begin(), tps.end(), l.tp) == tps.end()) tps.push_back(l.tp);
  axes["tp"] = tps;
  json layouts = json::array();
  for (const ParallelLayout& l : ax.layouts)
    layouts.push_back({{"tp", l.tp}, {"ep", l.ep}, {"dp_attention", l.dp_attention}, {"label", layout_label(l)}});
  axes["layouts"] = layouts;
  json skipped_layouts = json::array();
  for (const SkippedLayout& k : ax.skipped_layouts)
    skipped_layouts.push_back(
        {{"tp", k.layout.tp}, {"ep", k.layout.ep}, {"dp_attention", k.layout.dp_attention}, {"reason", k.reason}});
  axes["skipped_layouts"] = skipped_layouts;
  axes["a2a"] = ax.a2a;
  axes["batch"] = ax.batches;
  json specs = json::array();
  for (const SpecConfig& c : ax.spec_configs)
    specs.push_back({{"num_steps", c.num_steps}, {"eagle_topk", c.eagle_topk}, {"num_draft_tokens", c.num_draft_tokens}});
  axes["spec_configs"] = specs;
  json skipped = json::array();
  for (const SkippedSpecConfig& k : ax.skipped_configs)
    skipped.push_back({{"num_steps", k.config.num_steps},
                       {"eagle_topk", k.config.eagle_topk},
                       {"num_draft_tokens", k.config.num_draft_tokens},
                       {"reason", k.reason}});
  axes["skipped_configs"] = skipped;
  axes["draft_tokens"] = ax.draft_tokens;
  json acc = json::array();
  for (const Acceptance& a : ax.acceptances) acc.push_back({{"mode", mode_name(a)}, {"value", accept_value(a)}});
  axes["acceptance"] = acc;
  axes["acceptance_table"] = ax.acceptance_table.empty() ? json(nullptr) : json(ax.acceptance_table);
  axes["engine_cycle"] = ax.engine_cycle;
  axes["strategies"] = ax.strategies;
  axes["kv_len"] = ax.kv_len;
  axes["gpu_mem_util"] = ax.gpu_mem_util;
  axes["fused_add_norm"] = ax.fused_add_norm;
  axes["allow_lossy"] = ax.allow_lossy;
  json excluded = json::array(), lossy = json::array();
  for (const std::string& s : ax.strategies) {
    if (is_lower_bound(s)) excluded.push_back(s);
    else if (!is_exact(s) && !ax.allow_lossy) lossy.push_back(s);
  }
  axes["best_excludes"] = excluded;  // the free-allreduce reference: charted, never "best"
  axes["lossy_left_out"] = lossy;    // lossy strategies: priced, not picked unless --allow-lossy
  doc["axes"] = axes;

  json unfit = json::object();
  for (const auto& [k, v] : res.counts.by_status) unfit[k] = v;
  doc["counts"] = {{"combinations", res.counts.combinations}, {"ok", res.counts.ok}, {"unfit", unfit},
                   {"skipped_configs", ax.skipped_configs.size()},
                   {"traces_generated", res.traces_generated}, {"steps_priced", res.steps_priced}};
  doc["notes"] = res.notes;
  json sources = json::array();
  for (const Acceptance& a : res.acceptance_sources) sources.push_back(a.describe());
  doc["acceptance_sources"] = sources;  // rows' accept_source_index points here

  json best = json::array();
  for (const SweepBest& b : res.best) {
    json j = choice_head(res, b.model, b.topology, b.acceptance, b.row);
    if (b.row) {
      const SweepRow& r = res.row(*b.row);
      j["draft_tokens"] = r.draft_tokens;
      j["tokens_per_s"] = us(r.tokens_per_s);
    }
    if (b.row) {
      const SweepRow& r = res.row(*b.row);
      j["tokens_per_cycle"] = rate(r.tokens_per_cycle);
      j["accept_source"] = accept_source_name(res, r);
    }
    j["measured_row"] = b.measured_row ? json(*b.measured_row) : json(nullptr);
    j["plain_row"] = b.plain_row ? json(*b.plain_row) : json(nullptr);
    j["best_plain_tokens_per_s"] = b.plain_row ? json(us(b.best_plain_tokens_per_s)) : json(nullptr);
    j["speedup_vs_best_plain"] = b.row && b.plain_row ? json(rate(b.speedup_vs_best_plain)) : json(nullptr);
    j["eagle3_pays_off"] = b.row && b.plain_row ? json(b.speedup_vs_best_plain > 1.0) : json(nullptr);
    best.push_back(std::move(j));
  }
  doc["best"] = best;

  json per_batch = json::array();
  for (const SweepBatchBest& b : res.batch_best) {
    json j = choice_head(res, ax.models[b.model], ax.topologies[b.topology], ax.acceptances[b.acceptance], b.row);
    j["batch"] = b.batch;
    if (b.row) {
      const SweepRow& r = res.row(*b.row);
      j["num_steps"] = r.spec.num_steps;
      j["eagle_topk"] = r.spec.eagle_topk;
      j["num_draft_tokens"] = r.spec.num_draft_tokens;
      j["total_tokens_per_s"] = us(r.total_tokens_per_s);
      j["tokens_per_s"] = us(r.tokens_per_s);
      j["tokens_per_s_per_gpu"] = us(r.tokens_per_s_per_gpu);
    }
    j["plain_row"] = b.plain_row ? json(*b.plain_row) : json(nullptr);
    j["plain_total_tokens_per_s"] = b.plain_row ? json(us(b.plain_total_tokens_per_s)) : json(nullptr);
    j["speedup_vs_plain"] = b.row && b.plain_row ? json(rate(b.speedup_vs_plain)) : json(nullptr);
    j["speculation_pays"] = b.row && b.plain_row ? json(b.pays()) : json(nullptr);
    per_batch.push_back(std::move(j));
  }
  doc["best_per_batch"] = per_batch;
  json per_layout = json::array();
  for (const SweepLayoutBest& b : res.layout_best) {
    json j = choice_head(res, ax.models[b.model], ax.topologies[b.topology], ax.acceptances[b.acceptance], b.row);
    const ParallelLayout& l = ax.layouts[b.layout];
    j["batch"] = b.batch;
    j["layout"] = layout_label(l);
    j["tp"] = l.tp;
    j["ep"] = l.ep;
    j["dp_attention"] = l.dp_attention;
    if (b.row) {
      const SweepRow& r = res.row(*b.row);
      j["num_steps"] = r.spec.num_steps;
      j["eagle_topk"] = r.spec.eagle_topk;
      j["num_draft_tokens"] = r.spec.num_draft_tokens;
    }
    j["total_tokens_per_s"] = b.row ? json(us(b.total_tokens_per_s)) : json(nullptr);
    j["plain_row"] = b.plain_row ? json(*b.plain_row) : json(nullptr);
    j["plain_total_tokens_per_s"] = b.plain_row ? json(us(b.plain_total_tokens_per_s)) : json(nullptr);
    per_layout.push_back(std::move(j));
  }
  doc["best_per_layout"] = per_layout;
  json limits = json::array();
  for (const SweepPayLimit& l : res.pay_limits) {
    const Acceptance& a = ax.acceptances[l.acceptance];
    limits.push_back({{"model", ax.models[l.model]},
                      {"topology", ax.topologies[l.topology]},
                      {"accept_mode", mode_name(a)},
                      {"accept_value", accept_value(a)},
                      {"batches_run", l.batches_run},
                      {"stops_paying_at_batch", l.stops_at_batch ? json(*l.stops_at_batch) : json(nullptr)},
                      {"summary", pay_limit_text(l)}});
  }
  doc["speculation_limits"] = limits;

  // Rows that cannot run leave out the metrics they do not have (the CSV keeps every column,
  // empty): in a wide sweep most rows are such, and this halves the document.
  // Without kept rows (sweep --best-only) the document has the picks only; the CSV has every row.
  if (res.rows_kept) {
    json rows = json::array();
    for (const SweepRow& r : res.rows) {
      json j = json::object();
      for (auto& [k, v] : row_fields(res, r))
        if (r.ok() || !v.is_null()) j[k] = std::move(v);
      rows.push_back(std::move(j));
    }
    doc["rows"] = std::move(rows);
  }
  return doc;
}

std::string sweep_json_text(const SweepResults& res) {
  // Indented like dump(2), except that each row stays on one line: a sweep has tens of thousands
  // of rows, and one per line keeps the file small and greppable.
  json doc = sweep_to_json(res);
  if (!doc.contains("rows")) return doc.dump(2) + "\n";
  json rows = std::move(doc["rows"]);
  doc.erase("rows");
  std::string text = doc.dump(2);
  text.pop_back();  // the closing brace
  text += ",\n  \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    text += i ? ",\n    " : "\n    ";
    text += rows[i].dump(-1, ' ', false, json::error_handler_t::replace);
  }
  text += rows.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return text;
}

std::string sweep_csv_header() {
  std::string out;
  const SweepResults none;
  for (const auto& [k, v] : row_fields(none, SweepRow{})) {
    (void)v;
    out += out.empty() ? "" : ",";
    out += k;
  }
  return out + "\n";
}

std::string sweep_csv_line(const SweepResults& res, const SweepRow& r) {
  std::string out;
  bool first = true;
  for (const auto& [k, v] : row_fields(res, r)) {
    (void)k;
    if (!first) out += ",";
    out += csv_cell(v);
    first = false;
  }
  return out + "\n";
}

std::string sweep_to_csv(const SweepResults& res) {
  std::string out = sweep_csv_header();
  for (const SweepRow& r : res.rows) out += sweep_csv_line(res, r);
  return out;
}

// How much the verdicts lean on E: a best configuration's tok/s is proportional to its E, so at
// E 10 % lower its speed-up over plain decoding is 0.9x. Says how many "pays off" verdicts hold
// there, and how many best rows take E from the acceptance model rather than a measurement.
std::string sensitivity_line(const SweepResults& res) {
  int pays = 0, holds = 0, model_e = 0, rows = 0;
  for (const SweepBest& b : res.best) {
    if (!b.row) continue;
    ++rows;
    const SweepRow& r = res.row(*b.row);
    model_e += !row_e_measured(res, r);
    if (!b.plain_row || b.speedup_vs_best_plain <= 1.0) continue;
    ++pays;
    holds += 0.9 * b.speedup_vs_best_plain > 1.0;
  }
  if (rows == 0) return "";
  std::string out = model_e == rows
                        ? std::string("E: every best row's from the acceptance model (model), none measured")
                        : fmt::format("E: {} of {} best rows from the acceptance model (model), the rest measured (meas)",
                                      model_e, rows);
  if (pays > 0) out += fmt::format("; at E 10 % lower, {} of the {} that pay off still do", holds, pays);
  return out + "\n";
}

std::string sweep_to_table(const SweepResults& res) {
  std::string out;
  const SweepCounts& c = res.counts;
  out += fmt::format("Sweep: {} combinations, {} priced, {} cannot run ({} traces generated, {} step simulations)\n\n",
                     c.combinations, c.ok, c.combinations - c.ok, res.traces_generated, res.steps_priced);

  // Column widths follow the longest model and topology names.
  std::size_t wm = 5, wt = 8;
  for (const SweepBest& b : res.best) wm = std::max(wm, b.model.size()), wt = std::max(wt, b.topology.size());
  out += "Best configuration per model, topology and acceptance (plain = fastest plain decoding there";
  for (const std::string& s : res.axes.strategies)
    if (is_lower_bound(s)) out += fmt::format("; {} is a free-allreduce reference, not a candidate", s);
    else if (!is_exact(s) && !res.axes.allow_lossy) out += fmt::format("; {} is lossy, left out (--allow-lossy)", s);
  out += ")\n";
  const SweepAxes& ax = res.axes;
  out += fmt::format("{:<{}}  {:<{}}  {:<6}  {:<9} {} {:>3} {:<5} {:<10}  {:>9}  {:>9}  {:>7}  {}\n", "model", wm,
                     "topology", wt, "accept", "strategy", layout_header(ax), "N", "dtype", "E", "tok/s", "plain", "speedup",
                     res.axes.drafting());
  for (const SweepBest& b : res.best) {
    const std::string acc = short_acceptance(b.acceptance);
    if (!b.row) {
      out += fmt::format("{:<{}}  {:<{}}  {:<6}  nothing fits (see below)\n", b.model, wm, b.topology, wt, acc);
      continue;
    }
    const SweepRow& r = res.row(*b.row);
    const bool known = b.plain_row.has_value();
    out += fmt::format("{:<{}}  {:<{}}  {:<6}  {:<9} {} {:>3} {:<5} {:<10}  {:>9}  {:>9}  {:>7}  {}\n", b.model, wm,
                       b.topology, wt, acc, r.strategy, layout_cell(ax, r), r.draft_tokens, to_string(r.weight_dtype), e_text(res, r),
                       fmt_rate(r.tokens_per_s), known ? fmt_rate(b.best_plain_tokens_per_s) : "n/a",
                       known ? fmt::format("{:.2f}x", b.speedup_vs_best_plain) : "n/a",
                       !known ? "n/a" : b.speedup_vs_best_plain > 1.0 ? "pays off" : "does not pay off");
    if (b.measured_row) {
      const SweepRow& m = res.row(*b.measured_row);
      out += fmt::format("{:<{}}  {:<{}}  {:<6}  {:<9} {} {:>3} {:<5} {:<10}  {:>9}  {:>9}  {:>7}  {}\n", "",
                         wm, "  best measured:", wt, "", m.strategy, layout_cell(ax, m), m.draft_tokens, to_string(m.weight_dtype),
                         e_text(res, m), fmt_rate(m.tokens_per_s), known ? fmt_rate(b.best_plain_tokens_per_s) : "n/a",
                         known ? fmt::format("{:.2f}x", m.tokens_per_s / b.best_plain_tokens_per_s) : "n/a",
                         !known ? "n/a" : m.tokens_per_s > b.best_plain_tokens_per_s ? "pays off" : "does not pay off");
    }
  }

  out += sensitivity_line(res);
  out += batch_table(res);
  out += layout_table(res);

  // Unfit combinations, grouped by reason (first appearance order), with what they cover.
  if (!c.unfit.empty()) {
    out += fmt::format("\nCannot run ({} combinations; every one is in the CSV/JSON with its reason):\n",
                       c.combinations - c.ok);
    for (const SweepUnfitGroup& g : c.unfit)
      out += fmt::format("  {} [models: {}; topologies: {}; dtype: {}; TP: {}; strategies: {}] ({} combinations)\n",
                         g.reason, fmt::join(g.models, ","), fmt::join(g.topologies, ","), fmt::join(g.dtypes, ","),
                         fmt::join(g.tps, ","), fmt::join(g.strategies, ","), g.count);
  }
  for (const std::string& n : res.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace eaglesim
