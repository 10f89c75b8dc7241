#include "report/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/rounding.hpp"
#include "report/html_assets.hpp"
#include "report/html_view.hpp"
#include "report/html_serve_view.hpp"
#include "report/html_view_rows.hpp"
#include "report/printers.hpp"
#include "report/serve_output.hpp"
#include "sweep/sweep_output.hpp"

namespace eaglesim {

namespace {

using json = nlohmann::ordered_json;

double round_us(double v) { return round_to(v, 3); }

// A timeline as compact arrays (a whole Kimi-K2 step at TP8 is ~8,000 spans):
// spans are [rank, kind index, start µs, end µs, wait µs, layer, name index]. `row` is the row of
// the page model it belongs to; the caption, the step's end and the zoom on the first two decoder
// layers (where single ops are wide enough to see) are worked out here for the page to draw.
json timeline_json(const Timeline& tl, const std::string& label, const std::string& model, std::size_t row,
                   const std::string& caption) {
  json j;
  j["label"] = label;
  j["model"] = model;
  j["row"] = row;
  j["caption"] = caption;
  j["step"] = tl.step;
  j["ranks"] = tl.ranks;
  double end_us = 0;
  std::optional<int> first_layer;
  for (const Span& s : tl.spans) {
    end_us = std::max(end_us, s.end_us);
    if (s.layer >= 0) first_layer = std::min(first_layer.value_or(s.layer), s.layer);
  }
  double zoom_end_us = 0;
  for (const Span& s : tl.spans)
    if (first_layer && s.layer >= 0 && s.layer <= *first_layer + 1) zoom_end_us = std::max(zoom_end_us, s.end_us);
  j["end_us"] = round_us(end_us);
  j["zoom_end_us"] = first_layer ? json(round_us(zoom_end_us)) : json(nullptr);
  j["zoom_title"] = first_layer ? fmt::format("Zoom: up to the end of decoder layer {}", *first_layer + 1) : "";
  json kinds = json::array();
  for (int k = 0; k < kOpKindCount; ++k) kinds.push_back(to_string(static_cast<OpKind>(k)));
  j["kinds"] = kinds;
  std::map<std::string, int> name_ids;
  json names = json::array();
  json spans = json::array();
  for (const Span& s : tl.spans) {
    auto [it, inserted] = name_ids.try_emplace(s.name, static_cast<int>(names.size()));
    if (inserted) names.push_back(s.name);
    spans.push_back(json::array({s.rank, static_cast<int>(s.kind), round_us(s.start_us), round_us(s.end_us),
                                 round_us(s.wait_us), s.layer, it->second}));
  }
  j["names"] = names;
  j["spans"] = spans;
  return j;
}

// JSON inside <script>: '<', '>' and '&' only occur inside JSON strings, where \u escapes are
// equivalent, so escaping them keeps "</script>" or "<!--" in a name from ending the block.
std::string script_safe(const json& j) {
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// uPlot's script opens with a one-line banner naming its home page. A report carries no URL (so
// that nothing in it even looks like a fetch), so the banner gives way to a comment with the
// version and the licence the MIT terms ask to keep with every copy.
std::string uplot_version() {
  const std::string_view js = html::kUplotScript.text();
  const std::size_t v = js.find("(v"), end = js.find(')', v);
  const std::size_t banner_end = js.find("*/");
  if (v == std::string_view::npos || end == std::string_view::npos || v > banner_end) return "";
  return std::string(js.substr(v + 2, end - v - 2));
}

std::string uplot_script() {
  std::string_view js = html::kUplotScript.text();
  if (js.rfind("/*!", 0) == 0) js.remove_prefix(std::min(js.size(), js.find("*/") + 2));
  std::string licence(html::kUplotLicense.text());
  for (std::size_t p; (p = licence.find("*/")) != std::string::npos;) licence.replace(p, 2, "* /");
  return "/*! uPlot " + uplot_version() + ", the chart library of this page (github.com/leeoniya/uPlot).\n\n" + licence +
         "*/" + std::string(js);
}

// The page's fixed text; the script fills the elements with ids from the page model. A run
// compares strategies of one scenario; a sweep adds the best-configuration table and the
// explorer's controls.
// A serve report: the benchmark summary per run, the latency distributions, the requests in the
// engine over time, the capacity under the SLO.
std::string serve_body(std::string html) {
  html += R"(<section class="card" id="serve-section"><h2>Benchmark summary</h2>
<p class="explain">What the benchmark would print (bench_serving's figures), one column per configuration; pick the run
(deployment and load).</p>
<div class="controls" id="controls"></div><div id="summary-host"></div></section>
<section class="card"><h2>Latency distributions</h2>
<p class="explain">The share of requests (of streamed chunks' tokens for ITL) at or below each latency, per configuration:
the benchmark's mean, median and P99 summarise these curves.</p><div id="dist-host"></div></section>
<section class="card"><h2>Requests in the engine</h2>
<p class="explain">Requests sent and not yet finished over the run: the concurrency the engine served.</p>
<div id="flight-host"></div></section>
<section class="card" id="capacity-section"><h2>Capacity under the SLO</h2><div id="capacity-host"></div></section>
<section class="card"><h2>Notes</h2><ul id="notes"></ul></section>
</main>
)";
  return html;
}

std::string body(const std::string& kind) {
  const bool sweep = kind == "sweep";
  std::string html = R"(<main>
<noscript><section class="card"><h2>This report draws its charts with JavaScript</h2>
<p class="explain">Enable scripts to see it; the data is embedded in this file as JSON (script ids "eaglesim-data" and
"eaglesim-view").</p></section></noscript>
<section class="card" id="headline-section"><h2>At a glance</h2><div id="headline"></div></section>
)";
  if (kind == "serve") return serve_body(std::move(html));
  if (sweep)
    html += R"(<section class="card" id="best-section"><h2>Best configuration per model, topology and acceptance</h2>
<p class="explain">The fastest configuration (topology fixed; TP, draft tokens, strategy and weight dtype chosen) against the
fastest plain decoding on the same topology. “Pays off” means speculation (EAGLE-3, or the model’s own MTP layer) beats it. Lower bounds are never chosen.</p>
<div id="best-host"></div></section>
<section class="card" id="explorer"><h2>Explore a configuration</h2>
<p class="explain">Pick a model, topology, weights, TP and acceptance; the explorer opens on the fastest configuration that
runs, and on each model’s fastest one when you change the model.</p>
<div class="controls" id="controls"></div><div id="charts"></div></section>
<section class="card"><h2>Throughput against batch</h2>
<p class="explain">Total tok/s of the best speculative configuration at each batch swept (each point labelled with
num_steps/eagle_topk/num_draft_tokens, strategy and TP) and of the fastest plain decoding at that batch, for the model
selected above, per topology and acceptance.</p><div id="batch-host"></div></section>
)";
  else
    html += R"(<section class="card" id="explorer"><h2>Strategies compared</h2>
<p class="explain">The same trace under every strategy: where each cycle goes, and how throughput depends on the acceptance
rate.</p><div id="charts"></div></section>
)";
  html += R"(<section class="card"><div id="breakeven"></div></section>
<section class="card"><h2>Verify step per rank</h2>
<p class="explain">Drag across a chart to zoom into a time range, double-click to zoom out; the line under a chart names the
op under the pointer.</p>
)";
  if (!sweep)
    html += R"(<div class="controls" id="waterfall-controls"><label>strategy<select id="waterfall-select"></select></label></div>
)";
  html += R"(<div id="waterfall-host"></div></section>
<section class="card"><h2 id="table-title">All results</h2><div id="table-host"></div></section>
<section class="card"><h2 id="unfit-title">Cannot run</h2>
<p class="explain">Combinations left out of the charts, with the reason: more TP than GPUs, a TP the model cannot be sharded
by, weights + KV cache above the usable GPU memory, or a strategy that cannot run on the topology.</p>
<div id="unfit-host"></div></section>
<section class="card"><h2>Strategies</h2><div id="strategies-host"></div></section>
<section class="card"><h2>Notes</h2><ul id="notes"></ul></section>
</main>
)";
  return html;
}

// The sweep's rows as a table, the key names once and a value array per row (null where a row
// that cannot run leaves a metric out), a text column whose values repeat as indices into its own
// list of values; the fields the page reads only (sweep_page_fields), with `drawn` of the rows it
// marks only. report.js unpacks them into the
// document's own rows.
json pack_rows(json doc, const std::vector<bool>* drawn) {
  if (!doc.contains("rows")) return doc;
  const std::vector<std::string> fields = html::sweep_page_fields();
  auto read = [&](const std::string& key) { return std::find(fields.begin(), fields.end(), key) != fields.end(); };
  json columns = json::array();
  std::map<std::string, std::size_t> column_of;
  std::vector<const json*> kept;
  for (const json& row : doc["rows"]) {
    const std::size_t index = row.value("index", std::size_t{0});
    if (drawn && (index >= drawn->size() || !(*drawn)[index])) continue;
    kept.push_back(&row);
    for (const auto& item : row.items())
      if (read(item.key()) && column_of.emplace(item.key(), columns.size()).second) columns.push_back(item.key());
  }
  // Text columns are listed by value: model, topology, strategy and reason repeat on every row.
  std::vector<bool> text(columns.size(), true);
  for (const json* row : kept)
    for (const auto& item : row->items())
      if (read(item.key()) && !item.value().is_string() && !item.value().is_null()) text[column_of[item.key()]] = false;
  std::vector<std::map<std::string, std::size_t>> code_of(columns.size());
  json strings = json::object();
  for (std::size_t c = 0; c < columns.size(); ++c)
    if (text[c]) strings[columns[c].get<std::string>()] = json::array();
  json values = json::array();
  for (const json* row : kept) {
    json v = json::array();
    for (std::size_t c = 0; c < columns.size(); ++c) v.push_back(nullptr);
    for (const auto& item : row->items()) {
      if (!read(item.key())) continue;
      const std::size_t c = column_of[item.key()];
      if (text[c] && item.value().is_string()) {
        json& list = strings[item.key()];
        auto [it, inserted] = code_of[c].try_emplace(item.value().get<std::string>(), list.size());
        if (inserted) list.push_back(item.value());
        v[c] = it->second;
      } else {
        v[c] = item.value();
      }
    }
    values.push_back(std::move(v));
  }
  doc.erase("rows");
  doc["rows_packed"] = {{"columns", std::move(columns)}, {"strings", std::move(strings)}, {"values", std::move(values)}};
  return doc;
}

std::string page(const json& view, const json& data, const json& timelines, const std::vector<bool>* drawn = nullptr) {
  const std::string title = view["title"].get<std::string>();
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<meta name=\"generator\" content=\"eaglesim " EAGLESIM_VERSION "\">\n";
  html += "<title>" + escape_html(title) + "</title>\n";
  html += "<style>" + std::string(html::kUplotStyle.text()) + "</style>\n";
  html += "<style>" + std::string(html::kReportStyle.text()) + "</style>\n</head>\n<body>\n";
  html += "<header class=\"top\"><h1 id=\"title\">" + escape_html(title) + "</h1><div class=\"sub\" id=\"subtitle\">" +
          escape_html(view["subtitle"].get<std::string>()) + "</div></header>\n";
  html += body(view["kind"].get<std::string>());
  html += "<footer>Generated by eaglesim " EAGLESIM_VERSION " · self-contained: nothing is fetched · charts drawn with uPlot " +
          escape_html(uplot_version()) + " (MIT licence, © 2022 Leon Sorokin; the licence text is in this file)</footer>\n";
  html += "<script type=\"application/json\" id=\"eaglesim-data\">" + script_safe(pack_rows(data, drawn)) + "</script>\n";
  html += "<script type=\"application/json\" id=\"eaglesim-view\">" + script_safe(view) + "</script>\n";
  html += "<script type=\"application/json\" id=\"eaglesim-timelines\">" + script_safe(timelines) + "</script>\n";
  html += "<script>" + uplot_script() + "</script>\n";
  html += "<script>" + std::string(html::kReportScript.text()) + "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace

std::string render_html_report(const Report& report) {
  json timelines = json::array();
  for (std::size_t i = 0; i < report.results.size(); ++i) {
    const StrategyResult& r = report.results[i];
    if (r.supported && !r.verify.timeline.spans.empty())
      timelines.push_back(timeline_json(r.verify.timeline, r.strategy, report.scenario.model, i,
                                        "Strategy " + r.strategy + ": one verify step (" + html::format_us(r.verify_us) +
                                            "), every op on every rank."));
  }
  return page(html::run_view(report), report_to_json(report), timelines);
}

std::string render_sweep_html_report(const SweepResults& results) {
  json timelines = json::array();
  for (const SweepWaterfall& w : results.waterfalls) {
    const SweepRow& r = results.row(w.row);
    timelines.push_back(timeline_json(
        w.timeline, fmt::format("{} · {} · TP {} · N={}", r.topology, r.strategy, r.tp, r.draft_tokens), w.model, w.row,
        fmt::format("Fastest configuration of {}: {}, {}, TP {}, N={}, {} — one verify step ({}), every op on every rank.",
                    w.model, r.topology, r.strategy, r.tp, r.draft_tokens, to_string(r.weight_dtype),
                    html::format_us(r.verify_us))));
  }
  std::vector<bool> drawn;
  const json view = html::sweep_view(results, &drawn);
  return page(view, sweep_to_json(results), timelines, &drawn);
}

std::string render_serve_html_report(const std::vector<ServeReport>& reports, const std::vector<std::string>& skipped) {
  return page(html::serve_view(reports, skipped), json::parse(serve_to_json(reports, skipped)), json::array());
}

}  // namespace eaglesim
