#include "report/html_view_rows.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "comm/strategy_spec.hpp"
#include "core/rounding.hpp"
#include "domain/spec_decode_metrics.hpp"
#include "sweep/sweep_output.hpp"
#include "sweep/tree_breakeven.hpp"

namespace eaglesim::html {

namespace {

// Points of the acceptance curves: fine enough that straight segments look like the curve.
constexpr int kCurvePoints = 41;


json strategy_json(const std::string& name, const StrategyFacts& f, const StrategySpec* spec) {
  json j;
  j["name"] = name;
  j["lower_bound"] = f.lower_bound;
  j["exact"] = f.exact;
  j["fuses_residual_norm"] = f.fuses_residual_norm;
  j["selector"] = f.selector;
  j["description"] = spec ? describe_strategy(*spec) : "not in the strategy table";
  return j;
}

// First-appearance order, each value once.
template <typename T>
void add_unique(json& list, const T& v) {
  if (std::find(list.begin(), list.end(), json(v)) == list.end()) list.push_back(v);
}

}  // namespace

bool deployable(const std::string& strategy) { return !is_lower_bound(std::string_view(strategy)); }

json strategies_json(const std::vector<std::string>& names) {
  json out = json::array();
  for (const StrategySpec& s : strategy_specs())
    if (std::find(names.begin(), names.end(), s.facts.name) != names.end())
      out.push_back(strategy_json(std::string(s.facts.name), s.facts, &s));
  for (const std::string& n : names)
    if (!find_strategy_spec(n)) out.push_back(strategy_json(n, StrategyFacts{}, nullptr));
  return out;
}

json acceptances_json(const std::vector<Acceptance>& acceptances) {
  json out = json::array();
  for (const Acceptance& a : acceptances)
    out.push_back({{"mode", a.mode == Acceptance::Mode::rate ? "rate" : "length"},
                   {"value", a.value},
                   {"label", short_acceptance(a)},
                   {"rate", a.mode == Acceptance::Mode::rate}});
  return out;
}

json segments_json() {
  return json::array({
      {{"key", "verify_compute_us"}, {"name", "compute"}, {"label", "verify: GEMMs + attention"}},
      {{"key", "verify_allreduce_us"}, {"name", "allreduce"}, {"label", "verify: allreduce (incl. waiting)"}},
      {{"key", "verify_other_us"}, {"name", "other"}, {"label", "verify: other (norms, elementwise, gaps)"}},
      {{"key", "draft_us"}, {"name", "draft"}, {"label", "draft head (N forwards)"}},
  });
}

json columns_json(bool sweep) {
  auto col = [](const char* key, const char* label, int digits = -1, const char* suffix = "") {
    json c = {{"key", key}, {"label", label}};
    if (digits >= 0) c["digits"] = digits;
    if (*suffix) c["suffix"] = suffix;
    return c;
  };
  json out = json::array({col("topology", "topology")});
  if (sweep) out.push_back(col("weight_dtype", "dtype"));
  if (sweep) out.push_back(col("batch", "batch", 0));
  for (json c : {col("tp", "TP", 0), col("draft_tokens", "N", 0), col("acceptance", "accept"), col("strategy", "strategy"),
                 col("tokens_per_s", "tok/s", 1), col("decode_tokens_per_s", "plain tok/s", 1),
                 col("speedup_vs_decode", "speedup", 2, "×"), col("verify_us", "verify µs", 1),
                 col("verify_allreduce_us", "allreduce µs", 1), col("allreduce_count", "#AR", 0),
                 col("draft_us", "draft µs", 1), col("cycle_us", "cycle µs", 1),
                 col("tokens_per_cycle", "E tok/cycle", 2), col("breakeven_accept_rate", "break-even a", 3)})
    out.push_back(std::move(c));
  if (sweep) {
    // Which tree the row drafts (the explorer picks topk and N; the page holds the fastest steps).
    out.insert(out.begin() + 4, col("num_steps", "steps", 0));
    out.insert(out.begin() + 5, col("eagle_topk", "topk", 0));
    out.push_back(col("mem_need_gb", "GB/GPU", 1));
  }
  return out;
}

std::vector<std::string> sweep_page_fields() {
  std::vector<std::string> fields = {"index",       "model",         "topology",   "weight_dtype", "tp",
                                     "batch",       "num_steps",     "eagle_topk", "draft_tokens", "accept_mode",
                                     "accept_value", "strategy",     "status",     "reason",       "cycle_us",
                                     "tokens_per_s", "total_tokens_per_s", "decode_tokens_per_s",
                                     "breakeven_accept_rate"};
  auto add = [&](const std::string& key) {
    if (std::find(fields.begin(), fields.end(), key) == fields.end()) fields.push_back(key);
  };
  for (const json& c : columns_json(true))
    if (c["key"] != "acceptance") add(c["key"].get<std::string>());
  for (const json& seg : segments_json()) add(seg["key"].get<std::string>());
  return fields;
}

json row_or_null(const std::optional<std::size_t>& row) { return row ? json(*row) : json(nullptr); }

json order_json(const std::vector<SweepRow>& rows, const std::vector<bool>* drawn) {
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].ok() && (!drawn || (*drawn)[i])) ok.push_back(i);
  std::stable_sort(ok.begin(), ok.end(),
                   [&](std::size_t a, std::size_t b) { return rows[a].tokens_per_s > rows[b].tokens_per_s; });
  return ok;
}

json curves_json(const std::vector<SweepRow>& rows, const std::vector<bool>* drawn) {
  json rates = json::array();
  for (int i = 0; i < kCurvePoints; ++i) rates.push_back(static_cast<double>(i) / (kCurvePoints - 1));
  // E(a) depends on the draft shape only; the cycle time scales it into each row's tok/s.
  using Key = std::tuple<int, int, int, int>;
  std::map<Key, std::size_t> shape_of;
  json shapes = json::array();
  json by_row = json::object();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& r = rows[i];
    if (!r.ok() || r.cycle_us <= 0 || (drawn && !(*drawn)[i])) continue;
    const bool tree = r.spec.eagle_topk > 1;
    auto [it, inserted] = shape_of.try_emplace(
        Key{r.draft_tokens, tree ? r.spec.num_steps : 0, tree ? r.spec.eagle_topk : 1, tree ? r.spec.num_draft_tokens : 0},
        shapes.size());
    if (inserted) {
      // A tree's E(a) is the tree model's at the same per-position rate (the default decay).
      const std::optional<TreeBreakevenCurve> curve = tree ? std::optional<TreeBreakevenCurve>(r.spec) : std::nullopt;
      json e = json::array();
      for (const json& a : rates)
        e.push_back(round_to(curve ? curve->tokens_at(a.get<double>()) : chain_tokens_per_cycle(a.get<double>(), r.draft_tokens), 6));
      shapes.push_back(std::move(e));
    }
    // tok/s per token per cycle: the factor that turns the shape's E(a) into this row's tok/s.
    const double scale = tokens_per_second(1.0, r.cycle_us);
    by_row[std::to_string(i)] = json::array({it->second, round_to(scale, 9 - static_cast<int>(std::ceil(std::log10(scale))))});
  }
  return {{"rates", std::move(rates)}, {"shapes", std::move(shapes)}, {"rows", std::move(by_row)}};
}

json plain_json(const std::vector<SweepRow>& rows) {
  using Key = std::tuple<std::string, std::string, DType, int, int>;
  std::vector<Key> order;
  std::map<Key, std::size_t> fastest;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& r = rows[i];
    if (!r.ok() || !deployable(r.strategy) || r.decode_tokens_per_s <= 0) continue;
    const Key key{r.model, r.topology, r.weight_dtype, r.tp, r.batch};
    auto [it, inserted] = fastest.try_emplace(key, i);
    if (inserted) order.push_back(key);
    else if (r.decode_tokens_per_s > rows[it->second].decode_tokens_per_s) it->second = i;
  }
  json out = json::array();
  for (const Key& k : order) {
    const SweepRow& r = rows[fastest[k]];
    out.push_back({{"model", r.model}, {"topology", r.topology}, {"weight_dtype", to_string(r.weight_dtype)},
                   {"tp", r.tp}, {"batch", r.batch}, {"tokens_per_s", round_to(r.decode_tokens_per_s, 3)},
                   {"row", fastest[k]}});
  }
  return out;
}

json unfit_json(const std::vector<SweepRow>& rows) {
  json out = json::array();
  std::map<std::pair<std::string, std::string>, std::size_t> group_of;
  for (const SweepRow& r : rows) {
    if (r.ok()) continue;
    auto [it, inserted] = group_of.try_emplace({r.model, r.reason}, out.size());
    if (inserted)
      out.push_back({{"model", r.model}, {"status", to_string(r.unfit)}, {"reason", r.reason},
                     {"topologies", json::array()}, {"tps", json::array()}, {"strategies", json::array()}, {"count", 0}});
    json& g = out[it->second];
    add_unique(g["topologies"], r.topology);
    add_unique(g["tps"], r.tp);
    add_unique(g["strategies"], r.strategy);
    g["count"] = g["count"].get<std::size_t>() + 1;
  }
  return out;
}

json breakeven_bar(const std::string& label, std::optional<double> value, const std::string& state,
                   const std::string& detail, const std::vector<Acceptance>& swept) {
  bool pays_at_swept = false;
  if (value)
    for (const Acceptance& a : swept) pays_at_swept |= a.mode == Acceptance::Mode::rate && a.value > *value;
  return {{"label", label},
          {"value", value ? json(round_to(*value, 6)) : json(nullptr)},
          {"state", state},
          {"detail", detail},
          {"text", value ? fmt::format("a={:.3f} · {}", *value, detail) : detail},
          {"pays_at_swept", pays_at_swept}};
}

json verdict_json(const std::string& state, const std::string& model, const std::string& big, json detail_parts,
                  const std::vector<std::string>& bullets) {
  return {{"state", state}, {"model", model}, {"big", big}, {"detail", std::move(detail_parts)}, {"bullets", bullets}};
}

std::string format_us(double us) {
  return us >= 10000 ? fmt::format("{:.2f} ms", us / 1000) : fmt::format("{:.1f} µs", us);
}

}  // namespace eaglesim::html
