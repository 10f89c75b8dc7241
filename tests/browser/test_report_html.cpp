// Renders the HTML reports in headless Chromium and checks what the page's script drew against
// the JSON the same run wrote: the embedded data is the --json document, the page runs without a
// script error or console message, every chart was handed values and painted them, the values
// behind each chart (its "numbers" table) are the rows they claim to show, the sweep explorer
// opens on the fastest configuration that runs, and nothing in the page points outside it.
// A screenshot of each report is kept under the build tree (tests/artifacts/) for people to look
// at. Without Chromium only the checks that need no browser run, and the binary exits 77 (ctest:
// skipped) when they pass.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "dom_scan.hpp"

using namespace eaglesim::test;
using nlohmann::json;

namespace {

std::string g_chromium;

std::string find_chromium() {
  if (const char* env = std::getenv("EAGLESIM_CHROMIUM")) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const std::string cmd = fmt::format("command -v {} >/dev/null 2>&1", name);
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

// Headless, offline, no profile left behind; the browser's log (console messages included) goes
// to `log_file`. Returns the exit status.
int chromium(const std::string& args, const std::string& out_file, const std::string& log_file) {
  const std::string profile = temp_dir();
  const std::string cmd = fmt::format(
      "timeout 180 {} --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage "
      "--hide-scrollbars --enable-logging=stderr --v=0 --user-data-dir={} {} >{} 2>{}",
      g_chromium, profile, args, out_file.empty() ? "/dev/null" : out_file, log_file);
  const int status = std::system(cmd.c_str());
  std::system(fmt::format("rm -rf {}", profile).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// What the page wrote to the console: uncaught errors, rejected promises, warnings, logs. The
// report writes nothing there, so every line is a failure.
std::vector<std::string> console_lines(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(":CONSOLE") != std::string::npos) out.push_back(line);
  return out;
}

struct Rendered {
  Dom dom;
  json data;       // the page's eaglesim-data blob
  json view;       // the page's eaglesim-view blob
  json timelines;  // the page's eaglesim-timelines blob
  std::vector<std::string> console;
};

// The page packs the sweep document's rows (a column list, a value array per row, a text
// column's values as indices into its list); unpacked as report.js does, they are rows of the
// --json output.
json unpack_rows(json doc) {
  if (!doc.is_object() || !doc.contains("rows_packed")) return doc;
  const json& columns = doc["rows_packed"]["columns"];
  const json& strings = doc["rows_packed"]["strings"];
  std::size_t status = 0;
  for (std::size_t c = 0; c < columns.size(); ++c)
    if (columns[c] == "status") status = c;
  auto value = [&](const json& v, std::size_t c) {
    const std::string key = columns[c];
    return strings.contains(key) && !v[c].is_null() ? strings[key].at(v[c].get<std::size_t>()) : v[c];
  };
  json rows = json::array();
  for (const json& v : doc["rows_packed"]["values"]) {
    json row = json::object();
    const bool ok = value(v, status) == "ok";
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (ok || !v[c].is_null()) row[columns[c].get<std::string>()] = value(v, c);
    rows.push_back(std::move(row));
  }
  doc.erase("rows_packed");
  doc["rows"] = std::move(rows);
  return doc;
}

json embedded(const Dom& dom, const std::string& id) {
  const auto found = dom.find("script", "id", id);
  EXPECT_EQ(found.size(), 1u) << id;
  return found.size() == 1 ? unpack_rows(json::parse(dom.raw_text(found[0]))) : json();
}

Rendered render(const std::string& html_path, const std::string& screenshot_name) {
  const std::string dir = temp_dir();
  const std::string dom_file = dir + "/dom.html", log_file = dir + "/chromium.log";
  EXPECT_EQ(chromium("--dump-dom file://" + html_path, dom_file, log_file), 0);
  Rendered r{Dom(slurp(dom_file)), json(), json(), json(), console_lines(slurp(log_file))};
  r.data = embedded(r.dom, "eaglesim-data");
  r.view = embedded(r.dom, "eaglesim-view");
  r.timelines = embedded(r.dom, "eaglesim-timelines");

  // The screenshot is for people; the checks above and below do not depend on it.
  const std::string artifacts = EAGLESIM_ARTIFACTS;
  std::system(fmt::format("mkdir -p {}", artifacts).c_str());
  const std::string png = artifacts + "/" + screenshot_name;
  std::remove(png.c_str());
  EXPECT_EQ(chromium(fmt::format("--screenshot={} --window-size=1400,2400 file://{}", png, html_path), "",
                     dir + "/screenshot.log"),
            0);
  EXPECT_TRUE(file_exists(png)) << "no screenshot at " << png;
  std::printf("screenshot: %s\n", png.c_str());
  return r;
}

double num(const std::string& s) { return std::stod(s); }

std::vector<double> numbers_list(const std::string& comma_separated) {
  std::vector<double> out;
  std::stringstream ss(comma_separated);
  for (std::string v; std::getline(ss, v, ',');) out.push_back(num(v));
  return out;
}

// The single chart element named `name` (a <div data-chart=...>).
int chart(const Dom& dom, const std::string& name) {
  const auto found = dom.find("div", "data-chart", name);
  EXPECT_EQ(found.size(), 1u) << "chart " << name;
  return found.empty() ? -1 : found[0];
}

// The lines of a chart's "numbers" table.
std::vector<const DomElement*> numbers(const Dom& dom, int chart_element) {
  std::vector<const DomElement*> out;
  for (int tr : dom.descendants(chart_element, "tr"))
    if (dom.at(tr).has("data-series")) out.push_back(&dom.at(tr));
  return out;
}

// The script finished, logged nothing, every chart was handed values and painted coloured pixels
// in its plotting area, and no element refers to anything outside the page.
void expect_clean_render(const Rendered& page, std::size_t min_charts) {
  const Dom& dom = page.dom;
  EXPECT_EQ(dom.find("body", "data-rendered", "true").size(), 1u) << "the report's script did not finish";
  for (const std::string& line : page.console) ADD_FAILURE() << "console: " << line;
  const auto charts = dom.with_attr("div", "data-chart");
  EXPECT_GE(charts.size(), min_charts);
  for (int c : charts) {
    const DomElement& e = dom.at(c);
    const std::string name = e.attr("data-chart");
    EXPECT_FALSE(e.has("data-empty")) << name << " is empty";
    EXPECT_GT(num(e.attr("data-points").empty() ? "0" : e.attr("data-points")), 0) << name << ": no values";
    EXPECT_GT(num(e.attr("data-ink").empty() ? "0" : e.attr("data-ink")), 0) << name << ": nothing painted";
  }
  for (const char* attr : {"src", "href", "srcset", "action", "poster"})
    EXPECT_TRUE(dom.with_attr("", attr).empty()) << "an element with " << attr << "=";
}

// The data a page embeds is `expected`, the JSON document of the same run, but for a sweep's rows:
// the page holds some of them, each field it keeps as the document has it.
void expect_embeds(json page, json expected) {
  if (expected.contains("rows") && page.contains("rows")) {
    const json& all = expected["rows"];
    for (const json& r : page["rows"])
      for (const auto& field : r.items()) EXPECT_EQ(field.value(), all.at(r["index"].get<std::size_t>())[field.key()]);
    page.erase("rows");
    expected.erase("rows");
  }
  EXPECT_EQ(page, expected);
}

// The report at `html_path` rendered, its render clean with at least `min_charts` charts, and the
// data it embeds that of `expected`, the JSON document of the same run.
Rendered render_checked(const std::string& html_path, const std::string& screenshot_name, const json& expected,
                        std::size_t min_charts) {
  Rendered page = render(html_path, screenshot_name);
  expect_clean_render(page, min_charts);
  expect_embeds(page.data, expected);
  return page;
}

bool row_matches_selection(const json& row, const DomElement& sel) {
  // A sweep's explorer also selects a batch and an eagle_topk (a run has one of each).
  if (sel.has("data-batch") && std::to_string(row["batch"].get<int>()) != sel.attr("data-batch")) return false;
  if (sel.has("data-eagle-topk") && std::to_string(row["eagle_topk"].get<int>()) != sel.attr("data-eagle-topk"))
    return false;
  return row["model"] == sel.attr("data-model") && row["topology"] == sel.attr("data-topology") &&
         row["weight_dtype"] == sel.attr("data-weight-dtype") &&
         std::to_string(row["tp"].get<int>()) == sel.attr("data-tp") && row["accept_mode"] == sel.attr("data-accept-mode") &&
         row["accept_value"].get<double>() == num(sel.attr("data-accept-value"));
}

bool excluded(const json& doc, const json& row) {
  const json& ex = doc["axes"]["best_excludes"];
  return std::find(ex.begin(), ex.end(), row["strategy"]) != ex.end();
}

// The fastest row that runs and is not a lower bound (lowest index on ties), or null.
json fastest_runnable(const json& doc, const std::string& model = "") {
  json best;
  for (const json& r : doc["rows"])
    if (r["status"] == "ok" && !excluded(doc, r) && (model.empty() || r["model"] == model) &&
        (best.is_null() || r["tokens_per_s"].get<double>() > best["tokens_per_s"].get<double>()))
      best = r;
  return best;
}

// The reports every test reads, made once per process.
struct Reports {
  std::string run_html, run_json, sweep_html, sweep_json;
};
const Reports& reports() {
  static const Reports made = [] {
    Reports r;
    const std::string dir = temp_dir();
    r.run_json = dir + "/run.json", r.run_html = dir + "/run.html";
    r.sweep_json = dir + "/sweep.json", r.sweep_html = dir + "/sweep.html";
    // A generated trace, so the test does not depend on the shipped ones.
    const std::string trace = dir + "/trace.json";
    const CliResult gen = run_cli(fmt::format(
        "gen --model models/llm/llama-3.1-8b.json --draft models/llm/llama-3.1-8b-eagle3.json --tp 4 --tokens 4 -o {}",
        trace));
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    const CliResult run = run_cli(fmt::format("run {} --topology 4x-rtx-pro-6000-pcie5 --strategy all --json {} --report {}",
                                              trace, r.run_json, r.run_html));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const CliResult sweep = run_cli(fmt::format(
        "sweep --model llama-3.1-8b,qwen3-32b --topology all --tp 1,2,3,4 --draft-tokens 1..4 --accept-rate 0.5,0.7 "
        "--batch 1,8 --speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8 "
        "--strategy all -j 2 --json {} --report {}",
        r.sweep_json, r.sweep_html));
    EXPECT_EQ(sweep.exit_code, 0) << sweep.err;
    return r;
  }();
  return made;
}

// The text of the inline element `<tag ... id="id">` of a page, read without a browser.
json embedded_text(const std::string& html, const std::string& id) {
  const std::string open = "id=\"" + id + "\">";
  const std::size_t begin = html.find(open);
  if (begin == std::string::npos) return json();
  const std::size_t from = begin + open.size();
  return unpack_rows(json::parse(html.substr(from, html.find("</script>", from) - from)));
}

}  // namespace

// ---------------------------------------------------------------- without a browser

TEST(StaticReport, PagesAreSelfContained) {
  for (const std::string& path : {reports().run_html, reports().sweep_html}) {
    const std::string html = slurp(path);
    ASSERT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u) << path;
    // No URL at all (the chart library's banner with its home page is replaced by its licence),
    // and nothing that would load a resource.
    for (const char* remote : {"http://", "https://", "<link", "<iframe", "<img", "<object", "<embed", "@import", "url(",
                               " src=", "srcset=", "fetch(", "XMLHttpRequest", "import("})
      EXPECT_EQ(html.find(remote), std::string::npos) << path << " contains " << remote;
    // The chart library is inlined with its licence, and credited in the footer.
    EXPECT_NE(html.find("Permission is hereby granted, free of charge"), std::string::npos) << path;
    EXPECT_NE(html.find("var uPlot="), std::string::npos) << path;
    EXPECT_NE(html.find("charts drawn with uPlot 1."), std::string::npos) << path;
  }
}

TEST(StaticReport, EmbeddedDataIsTheJsonDocumentAndTheViewSaysWhatIsBest) {
  const json sweep = json::parse(slurp(reports().sweep_json));
  const std::string html = slurp(reports().sweep_html);
  const json view = embedded_text(html, "eaglesim-view");
  // The page holds the rows it draws, each as the --json has it, and says how many of all.
  const json page = embedded_text(html, "eaglesim-data");
  expect_embeds(page, sweep);
  EXPECT_EQ(view["page_rows"]["held"], page["rows"].size());
  EXPECT_EQ(view["page_rows"]["total"], sweep["rows"].size());
  ASSERT_EQ(view["format"], "eaglesim-report-view");
  EXPECT_EQ(view["kind"], "sweep");

  // The explorer opens on the fastest configuration that runs and is not a lower bound, and each
  // model on its own fastest one.
  const json best = fastest_runnable(sweep);
  ASSERT_FALSE(best.is_null());
  EXPECT_EQ(view["explorer"]["initial_row"], best["index"]);
  for (const json& s : view["explorer"]["model_start"]) {
    const json mine = fastest_runnable(sweep, s["model"]);
    EXPECT_EQ(s["row"], mine.is_null() ? json() : mine["index"]) << s["model"];
  }
  // The strategies in the order the sweep ran them (`all`: the strategy table's order), the
  // lower bounds marked as the sweep excludes them.
  std::vector<std::string> names;
  for (const json& s : view["strategies"]) {
    names.push_back(s["name"]);
    const json& ex = sweep["axes"]["best_excludes"];
    EXPECT_EQ(s["lower_bound"].get<bool>(), std::find(ex.begin(), ex.end(), s["name"]) != ex.end()) << s["name"];
    EXPECT_FALSE(s["description"].get<std::string>().empty());
  }
  EXPECT_EQ(json(names), sweep["axes"]["strategies"]);
}

// The script draws what the page model says: no strategy name of its own, no tokens-per-cycle
// formula, no rule about lower bounds.
TEST(StaticReport, ScriptCarriesNoStrategyNamesOrAcceptanceArithmetic) {
  const std::string js = slurp(std::string(EAGLESIM_REPO) + "/src/report/assets/report.js");
  ASSERT_FALSE(js.empty());
  const json view = embedded_text(slurp(reports().sweep_html), "eaglesim-view");
  for (const json& s : view["strategies"]) {
    const std::string name = s["name"];
    for (const std::string& quoted : {"'" + name + "'", "\"" + name + "\"", "`" + name + "`"})
      EXPECT_EQ(js.find(quoted), std::string::npos) << "report.js names the strategy " << quoted;
  }
  for (const char* arithmetic : {"Math.pow", "**", "1e6", "1 - a", "tokens_per_cycle"})
    EXPECT_EQ(js.find(arithmetic), std::string::npos) << "report.js computes with " << arithmetic;
}

// ---------------------------------------------------------------- in the browser

// The harness sees a failing script: if Chromium stopped logging console messages this way, the
// report tests would pass without looking.
TEST(BrowserHarness, SeesUncaughtErrors) {
  const std::string dir = temp_dir();
  const std::string html = dir + "/broken.html";
  std::FILE* f = std::fopen(html.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("<!DOCTYPE html><html><body><script>Promise.resolve().then(() => null.x);</script>"
             "<script>noSuchFunction();</script></body></html>",
             f);
  std::fclose(f);
  ASSERT_EQ(chromium("--dump-dom file://" + html, "", dir + "/chromium.log"), 0);
  const auto lines = console_lines(slurp(dir + "/chromium.log"));
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& l : lines) EXPECT_NE(l.find("Uncaught"), std::string::npos) << l;
}

namespace {

// A rendered sweep report, the JSON document of the same run and the fastest configuration that
// runs in it (where the explorer opens).
struct SweepPage {
  const json& expected;
  const json& rows;  // expected["rows"]
  const Rendered& page;
  const json& best;
};

// tok/s against draft tokens: one series per strategy that can run at the selection, each
// point the tok/s of the row it names, and every runnable row of the selection drawn.
// `selection`: the chart's element, which carries the explorer's selection.
void check_tokps_vs_draft_chart(const SweepPage& sp, const DomElement*& selection) {
  const json& expected = sp.expected;
  const json& rows = sp.rows;
  const Dom& dom = sp.page.dom;
  const json& best = sp.best;
  const int lines = chart(dom, "tokps-vs-draft");
  ASSERT_GE(lines, 0);
  const DomElement& sel = dom.at(lines);
  selection = &sel;
  EXPECT_TRUE(row_matches_selection(best, sel)) << "the explorer does not show the fastest configuration";
  std::size_t expected_points = 0;
  std::set<std::string> expected_series;
  double best_plain = 0;
  for (const json& r : rows)
    if (r["status"] == "ok" && row_matches_selection(r, sel)) {
      ++expected_points;
      expected_series.insert(r["strategy"].get<std::string>());
      if (!excluded(expected, r)) best_plain = std::max(best_plain, r["decode_tokens_per_s"].get<double>());
    }
  ASSERT_GT(expected_points, 0u);
  std::set<std::string> drawn_series;
  std::size_t points = 0;
  std::optional<double> plain;
  for (const DomElement* p : numbers(dom, lines)) {
    const std::string series = p->attr("data-series");
    if (series == "plain-decode") {
      plain = num(p->attr("data-value"));
      continue;
    }
    drawn_series.insert(series);
    const json& row = rows.at(static_cast<std::size_t>(num(p->attr("data-row"))));
    EXPECT_TRUE(row_matches_selection(row, sel));
    EXPECT_EQ(row["strategy"], series);
    EXPECT_EQ(row["draft_tokens"].get<int>(), static_cast<int>(num(p->attr("data-x"))));
    EXPECT_EQ(row["tokens_per_s"].get<double>(), num(p->attr("data-y")));
    ++points;
  }
  EXPECT_EQ(drawn_series, expected_series);
  EXPECT_EQ(points, expected_points);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(*plain, best_plain) << "the fastest plain decoding of the selection, lower bounds left out";
}

// Cycle breakdown: four stacked segments per strategy, each the row's value, at the fastest
// configuration's N. `n`: that N; `runnable_at_n`: the strategies that run at it.
void check_cycle_breakdown_chart(const SweepPage& sp, int& n, std::set<std::string>& runnable_at_n) {
  const json& rows = sp.rows;
  const Dom& dom = sp.page.dom;
  const json& best = sp.best;
  const int bars = chart(dom, "cycle-breakdown");
  ASSERT_GE(bars, 0);
  const DomElement& bsel = dom.at(bars);
  n = static_cast<int>(num(bsel.attr("data-draft-tokens")));
  EXPECT_EQ(n, best["draft_tokens"].get<int>());
  const std::map<std::string, std::string> field = {{"compute", "verify_compute_us"}, {"allreduce", "verify_allreduce_us"},
                                                    {"other", "verify_other_us"}, {"draft", "draft_us"}};
  for (const json& r : rows)
    if (r["status"] == "ok" && row_matches_selection(r, bsel) && r["draft_tokens"] == n)
      runnable_at_n.insert(r["strategy"].get<std::string>());
  ASSERT_FALSE(runnable_at_n.empty());
  std::size_t segments = 0;
  for (const DomElement* s : numbers(dom, bars)) {
    const json& r = rows.at(static_cast<std::size_t>(num(s->attr("data-row"))));
    EXPECT_TRUE(r["status"] == "ok" && row_matches_selection(r, bsel) && r["draft_tokens"] == n);
    EXPECT_EQ(r["strategy"], s->attr("data-strategy"));
    EXPECT_EQ(r[field.at(s->attr("data-series"))].get<double>(), num(s->attr("data-value"))) << s->attr("data-series");
    ++segments;
  }
  EXPECT_EQ(segments, 4 * runnable_at_n.size());
}

// Acceptance curves: one per strategy that runs at N, each tok/s = E(a, N) / cycle with
// E = 1 + a + ... + a^N, and its break-even the row's.
void check_acceptance_curves_chart(const SweepPage& sp, int n, const std::set<std::string>& runnable_at_n) {
  const json& rows = sp.rows;
  const Dom& dom = sp.page.dom;
  const int curves = chart(dom, "tokps-vs-accept");
  ASSERT_GE(curves, 0);
  const std::vector<double> rates = numbers_list(dom.at(curves).attr("data-rates"));
  ASSERT_GE(rates.size(), 11u);
  EXPECT_EQ(rates.front(), 0.0);
  EXPECT_EQ(rates.back(), 1.0);
  std::size_t curve_series = 0;
  for (const DomElement* c : numbers(dom, curves)) {
    if (c->attr("data-series") == "plain-decode") continue;
    const json& r = rows.at(static_cast<std::size_t>(num(c->attr("data-row"))));
    EXPECT_EQ(r["strategy"], c->attr("data-series"));
    EXPECT_EQ(r["draft_tokens"].get<int>(), n);
    const std::vector<double> curve = numbers_list(c->attr("data-curve"));
    ASSERT_EQ(curve.size(), rates.size());
    const double per_token = 1e6 / r["cycle_us"].get<double>();
    if (r["eagle_topk"].get<int>() > 1) {
      // A tree: the tree model, from E = 1 at a = 0 to 1 + min(S, D - 1) at a = 1, never falling
      // (its values against the domain's model are tested in tests/unit/test_sweep_batch.cpp).
      const int most = 1 + std::min(r["num_steps"].get<int>(), r["num_draft_tokens"].get<int>() - 1);
      EXPECT_NEAR(curve.front(), per_token, 0.051 + 1e-6 * per_token);
      EXPECT_NEAR(curve.back(), most * per_token, 0.051 + 1e-6 * most * per_token);
      for (std::size_t i = 1; i < curve.size(); ++i) EXPECT_GE(curve[i], curve[i - 1]);
    } else {
      for (std::size_t i = 0; i < rates.size(); ++i) {
        double e = 0, ai = 1;
        for (int k = 0; k <= n; ++k, ai *= rates[i]) e += ai;
        const double tps = e * per_token;
        EXPECT_NEAR(curve[i], tps, 0.051 + 1e-6 * tps) << r["strategy"] << " at a=" << rates[i];
      }
    }
    if (r["breakeven_accept_rate"].is_null()) EXPECT_EQ(c->attr("data-breakeven"), "none");
    else EXPECT_EQ(num(c->attr("data-breakeven")), r["breakeven_accept_rate"].get<double>());
    ++curve_series;
  }
  EXPECT_EQ(curve_series, runnable_at_n.size());
}

// Break-even per topology: the lowest break-even over the runnable, deployable rows of each.
// `model`: the chart's model.
void check_breakeven_chart(const SweepPage& sp, std::string& model) {
  const json& expected = sp.expected;
  const json& rows = sp.rows;
  const Dom& dom = sp.page.dom;
  const json& best = sp.best;
  const int be = chart(dom, "breakeven");
  ASSERT_GE(be, 0);
  model = dom.at(be).attr("data-model");
  EXPECT_EQ(model, best["model"]);
  std::size_t categories = 0;
  for (const DomElement* c : numbers(dom, be)) {
    std::optional<double> lowest;
    bool any_ok = false;
    for (const json& r : rows)
      if (r["model"] == model && r["topology"] == c->attr("data-category") && r["status"] == "ok") {
        any_ok = true;
        if (!r["breakeven_accept_rate"].is_null() && !excluded(expected, r))
          lowest = std::min(lowest.value_or(2.0), r["breakeven_accept_rate"].get<double>());
      }
    if (lowest) EXPECT_EQ(num(c->attr("data-value")), *lowest) << c->attr("data-category");
    else EXPECT_EQ(c->attr("data-value"), "none") << c->attr("data-category");
    EXPECT_EQ(c->attr("data-state"), lowest ? "ok" : any_ok ? "never" : "unfit");
    ++categories;
  }
  EXPECT_EQ(categories, expected["axes"]["topologies"].size());
}

// Waterfall: the model's fastest configuration, every span of its timeline drawn.
void check_waterfall_charts(const SweepPage& sp, const std::string& model) {
  const Rendered& page = sp.page;
  const Dom& dom = page.dom;
  const json& best = sp.best;
  const int wf = chart(dom, "waterfall");
  ASSERT_GE(wf, 0);
  ASSERT_FALSE(page.timelines.empty());
  const json* tl = nullptr;
  for (const json& t : page.timelines)
    if (t["model"] == model) tl = &t;
  ASSERT_NE(tl, nullptr);
  EXPECT_EQ((*tl)["row"], best["index"]);
  EXPECT_EQ((*tl)["model"], dom.at(wf).attr("data-model"));
  EXPECT_EQ(num(dom.at(wf).attr("data-spans")), static_cast<double>((*tl)["spans"].size()));
  const int zoom = chart(dom, "waterfall-zoom");
  ASSERT_GE(zoom, 0);
  EXPECT_GT(num(dom.at(zoom).attr("data-spans")), 0);
  EXPECT_LT(num(dom.at(zoom).attr("data-spans")), static_cast<double>((*tl)["spans"].size()));
}

// Results table: the runnable rows of the selected model and topology, the best one marked.
void check_results_table(const SweepPage& sp, const DomElement& sel) {
  const json& rows = sp.rows;
  const Dom& dom = sp.page.dom;
  const json& best = sp.best;
  const auto table = dom.find("table", "id", "results-table");
  ASSERT_EQ(table.size(), 1u);
  std::size_t ok_rows = 0;
  for (const json& r : rows)
    if (r["status"] == "ok" && r["model"] == sel.attr("data-model") && r["topology"] == sel.attr("data-topology")) ++ok_rows;
  EXPECT_EQ(num(dom.at(table[0]).attr("data-rows")), static_cast<double>(ok_rows));
  const auto marked = dom.find("tr", "class", "best");
  ASSERT_EQ(marked.size(), 1u);
  EXPECT_EQ(dom.at(marked[0]).attr("data-index"), std::to_string(best["index"].get<int>()));
  // Unfit combinations are listed (TP 3 cannot shard these models' heads).
  EXPECT_FALSE(dom.find("tr", "data-status", "tp_sharding").empty());
}

// The strategy facts, in the sweep's order.
void check_strategies_table(const SweepPage& sp) {
  const json& expected = sp.expected;
  const Dom& dom = sp.page.dom;
  const auto facts_table = dom.find("table", "id", "strategies-table");
  ASSERT_EQ(facts_table.size(), 1u);
  std::vector<int> facts;
  for (int tr : dom.descendants(facts_table[0], "tr"))
    if (dom.at(tr).has("data-strategy")) facts.push_back(tr);
  ASSERT_EQ(facts.size(), expected["axes"]["strategies"].size());
  for (std::size_t i = 0; i < facts.size(); ++i) {
    const DomElement& f = dom.at(facts[i]);
    EXPECT_EQ(f.attr("data-strategy"), expected["axes"]["strategies"][i]);
    EXPECT_EQ(f.attr("data-lower-bound") == "true", excluded(expected, {{"strategy", f.attr("data-strategy")}}));
  }
}

}  // namespace

// Each stage's fatal failure ends the test, as the checks that follow read what it checked.
TEST(BrowserReport, SweepReportDrawsEveryChartFromTheJsonOfTheSameRun) {
  const json expected = json::parse(slurp(reports().sweep_json));
  const Rendered page = render_checked(reports().sweep_html, "sweep-report.png", expected, 6);
  const Dom& dom = page.dom;
  const json& rows = expected["rows"];

  // Headline: one verdict per model, naming EAGLE-3's outcome.
  EXPECT_EQ(dom.with_attr("div", "data-verdict").size(), expected["axes"]["models"].size());
  EXPECT_EQ(dom.find("p", "id", "summary").size(), 1u);

  // The explorer opens on the fastest configuration that runs (not a lower bound).
  const json best = fastest_runnable(expected);
  ASSERT_FALSE(best.is_null());
  const auto explorer = dom.find("section", "id", "explorer");
  ASSERT_EQ(explorer.size(), 1u);
  EXPECT_EQ(dom.at(explorer[0]).attr("data-start-row"), std::to_string(best["index"].get<int>()));

  const SweepPage sweep{expected, rows, page, best};
  const DomElement* sel = nullptr;
  ASSERT_NO_FATAL_FAILURE(check_tokps_vs_draft_chart(sweep, sel));
  int n = 0;
  std::set<std::string> runnable_at_n;
  ASSERT_NO_FATAL_FAILURE(check_cycle_breakdown_chart(sweep, n, runnable_at_n));
  ASSERT_NO_FATAL_FAILURE(check_acceptance_curves_chart(sweep, n, runnable_at_n));
  std::string model;
  ASSERT_NO_FATAL_FAILURE(check_breakeven_chart(sweep, model));
  ASSERT_NO_FATAL_FAILURE(check_waterfall_charts(sweep, model));
  ASSERT_NO_FATAL_FAILURE(check_results_table(sweep, *sel));
  check_strategies_table(sweep);
}

// Every control of the explorer redraws without an error (a TP that cannot run included), and
// choosing a model opens that model's fastest configuration that runs.
TEST(BrowserReport, SweepExplorerFollowsItsControls) {
  const json expected = json::parse(slurp(reports().sweep_json));
  const json& models = expected["axes"]["models"];
  ASSERT_GE(models.size(), 2u);
  const auto& tps = expected["axes"]["tp"];
  const std::size_t tp3 = static_cast<std::size_t>(std::find(tps.begin(), tps.end(), 3) - tps.begin());
  ASSERT_LT(tp3, tps.size());
  // The controls are worked by a script appended to a copy of the page, as a user would.
  const std::string clicks = fmt::format(
      "<script>(function () {{ function pick(c, i) {{ const s = document.querySelector('[data-control=' + c + ']'); "
      "s.value = i; s.onchange(); }} pick('tp', {}); pick('draft_tokens', 0); pick('acceptance', 0); "
      "pick('topology', 0); pick('weight_dtype', 0); window.dispatchEvent(new Event('resize')); pick('model', 1); "
      "}})();</script></body>",
      tp3);
  std::string html = slurp(reports().sweep_html);
  html.replace(html.rfind("</body>"), 7, clicks);
  const std::string path = temp_dir() + "/sweep-clicked.html";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fwrite(html.data(), 1, html.size(), f);
  std::fclose(f);

  const Rendered page = render(path, "sweep-report-second-model.png");
  expect_clean_render(page, 6);
  const json start = fastest_runnable(expected, models[1]);
  ASSERT_FALSE(start.is_null());
  const auto explorer = page.dom.find("section", "id", "explorer");
  ASSERT_EQ(explorer.size(), 1u);
  EXPECT_EQ(page.dom.at(explorer[0]).attr("data-start-row"), std::to_string(start["index"].get<int>()));
  const int lines = chart(page.dom, "tokps-vs-draft");
  ASSERT_GE(lines, 0);
  EXPECT_TRUE(row_matches_selection(start, page.dom.at(lines)));
  EXPECT_EQ(page.dom.at(chart(page.dom, "waterfall")).attr("data-model"), models[1]);
}

// Throughput against batch: per topology and acceptance of the selected model, each point of the
// best series the total tok/s of the best_per_batch entry it names, each plain point the JSON's
// plain decoding at that batch.
TEST(BrowserReport, SweepBatchChartIsTheBestPerBatchOfTheJson) {
  const json doc = json::parse(slurp(reports().sweep_json));
  const Rendered page = render(reports().sweep_html, "sweep-report-batch.png");
  const Dom& dom = page.dom;
  const auto charts = dom.find("div", "data-chart", "tokps-vs-batch");
  ASSERT_FALSE(charts.empty());
  std::size_t points = 0;
  for (int c : charts) {
    const DomElement& box = dom.at(c);
    for (const DomElement* p : numbers(dom, c)) {
      const std::string series = p->attr("data-series");
      const int batch = static_cast<int>(num(p->attr("data-x")));
      const json* entry = nullptr;
      for (const json& b : doc["best_per_batch"])
        if (b["model"] == box.attr("data-model") && b["topology"] == box.attr("data-topology") && b["batch"] == batch &&
            !b["row"].is_null() && box.attr("data-acceptance") == fmt::format("a={:.2f}", b["accept_value"].get<double>()))
          entry = &b;
      ASSERT_NE(entry, nullptr) << box.attr("data-topology") << " batch " << batch;
      if (series == "best") {
        EXPECT_EQ(static_cast<std::size_t>(num(p->attr("data-row"))), (*entry)["row"].get<std::size_t>());
        EXPECT_EQ(num(p->attr("data-y")), (*entry)["total_tokens_per_s"].get<double>());
      } else {
        EXPECT_EQ(series, "plain-decode");
        EXPECT_EQ(num(p->attr("data-y")), (*entry)["plain_total_tokens_per_s"].get<double>());
      }
      ++points;
    }
  }
  EXPECT_GT(points, 0u);
}

TEST(BrowserReport, RunReportDrawsTheStrategiesOfOneScenario) {
  const json expected = json::parse(slurp(reports().run_json));
  const Rendered page = render_checked(reports().run_html, "run-report.png", expected, 3);
  const Dom& dom = page.dom;
  EXPECT_EQ(dom.with_attr("div", "data-verdict").size(), 1u);
  const json& results = expected["results"];

  // The notes: the scenario's and each distinct per-strategy note once ("None." only without any).
  std::set<std::string> distinct;
  for (const json& r : results)
    if (r["supported"].get<bool>())
      for (const json& n : r["notes"]) distinct.insert(n.get<std::string>());
  const auto notes_list = dom.find("ul", "id", "notes");
  ASSERT_EQ(notes_list.size(), 1u);
  const std::size_t expected_notes = expected["scenario"]["notes"].size() + distinct.size();
  ASSERT_GT(expected_notes, 0u);
  EXPECT_EQ(dom.descendants(notes_list[0], "li").size(), expected_notes);
  auto result_of = [&](const std::string& strategy) -> const json& {
    for (const json& r : results)
      if (r["strategy"] == strategy) return r;
    throw std::runtime_error("no result for " + strategy);
  };

  // One stacked bar per supported strategy; the allreduce segment is the strategy's comm_us and
  // the draft segment its draft_us (to the ns the page rounds to).
  const int bars = chart(dom, "cycle-breakdown");
  ASSERT_GE(bars, 0);
  std::size_t supported = 0;
  for (const json& r : results) supported += r["supported"].get<bool>();
  std::size_t seen = 0;
  for (const DomElement* s : numbers(dom, bars)) {
    const json& r = result_of(s->attr("data-strategy"));
    EXPECT_TRUE(r["supported"].get<bool>());
    if (s->attr("data-series") == "allreduce") EXPECT_NEAR(r["comm_us"].get<double>(), num(s->attr("data-value")), 5e-4);
    if (s->attr("data-series") == "draft") EXPECT_NEAR(r["draft_us"].get<double>(), num(s->attr("data-value")), 5e-4);
    ++seen;
  }
  EXPECT_EQ(seen, 4 * supported);

  // Break-even: one bar per strategy, the value the JSON has.
  const int be = chart(dom, "breakeven");
  ASSERT_GE(be, 0);
  std::size_t categories = 0;
  for (const DomElement* c : numbers(dom, be)) {
    const json& r = result_of(c->attr("data-category"));
    if (r["supported"].get<bool>() && !r["breakeven_accept_rate"].is_null())
      EXPECT_NEAR(r["breakeven_accept_rate"].get<double>(), num(c->attr("data-value")), 1e-6);
    else EXPECT_EQ(c->attr("data-value"), "none");
    ++categories;
  }
  EXPECT_EQ(categories, results.size());

  const int curves = chart(dom, "tokps-vs-accept");
  ASSERT_GE(curves, 0);
  std::size_t curve_series = 0;
  for (const DomElement* c : numbers(dom, curves)) curve_series += c->attr("data-series") != "plain-decode";
  EXPECT_EQ(curve_series, supported);

  // The waterfall and the table open on the best strategy the JSON names.
  ASSERT_FALSE(page.timelines.empty());
  const int wf = chart(dom, "waterfall");
  ASSERT_GE(wf, 0);
  EXPECT_EQ(dom.at(wf).attr("data-label"), expected["best"]);
  EXPECT_GT(num(dom.at(wf).attr("data-spans")), 0);
  const auto marked = dom.find("tr", "class", "best");
  ASSERT_EQ(marked.size(), 1u);
  const std::size_t best_index = static_cast<std::size_t>(num(dom.at(marked[0]).attr("data-index")));
  EXPECT_EQ(results.at(best_index)["strategy"], expected["best"]);
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_chromium = find_chromium();
  if (g_chromium.empty()) {
    std::printf("SKIP: no chromium found (install it with tools/setup.sh, or set EAGLESIM_CHROMIUM); "
                "running only the checks that need no browser\n");
    GTEST_FLAG_SET(filter, "StaticReport.*");
    const int rc = RUN_ALL_TESTS();
    return rc == 0 ? 77 : rc;
  }
  return RUN_ALL_TESTS();
}

// The serve page: the summary table is the JSON's metrics, every latency chart and the in-flight
// chart drew, the capacity table holds the JSON's capacity, and the run selector covers every run.
TEST(BrowserReport, ServeReportDrawsTheBenchmarkSummaryAndDistributions) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(
      "serve --model llama-3.1-8b --topology 8x-h100-nvswitch --num-prompts 120 --max-concurrency 4,32 "
      "--random-input-len 512 --random-output-len 128 --speculative-num-steps 3 --speculative-eagle-topk 1 "
      "--speculative-num-draft-tokens 4 --accept-len 2.6 --slo mean_tpot_ms=12,p99_ttft_ms=2000 --json " + dir +
      "/s.json --report " + dir + "/s.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json expected = json::parse(slurp(dir + "/s.json"));
  const Rendered page = render(dir + "/s.html", "serve-report.png");
  expect_clean_render(page, 5);
  EXPECT_EQ(page.data, expected);
  const Dom& dom = page.dom;
  ASSERT_EQ(page.view["kind"], "serve");
  EXPECT_EQ(dom.descendants(dom.find("select", "data-control", "run").at(0), "option").size(), expected["runs"].size());
  // The first run is shown: its summary cells are the JSON's metrics.
  const json& run = expected["runs"][0];
  for (const char* key : {"output_throughput", "mean_tpot_ms", "p99_ttft_ms", "completed"}) {
    const auto row = dom.find("tr", "data-key", key);
    ASSERT_EQ(row.size(), 1u) << key;
    std::size_t c = 0;
    for (int td : dom.descendants(row[0], "td")) {
      if (!dom.at(td).has("data-config")) continue;
      EXPECT_NEAR(num(dom.at(td).attr("data-value")), run["cases"][c]["metrics"][key].get<double>(),
                  1e-3 + 1e-6 * std::abs(run["cases"][c]["metrics"][key].get<double>()))
          << key << " " << c;
      ++c;
    }
    EXPECT_EQ(c, run["cases"].size()) << key;
  }
  // Each latency chart's median is the JSON's median to within the nearest-rank step.
  for (const char* what : {"ttft", "tpot", "e2e_latency"}) {
    const int chart_el = chart(dom, std::string("latency-") + what);
    ASSERT_GE(chart_el, 0) << what;
    for (const DomElement* line : numbers(dom, chart_el)) {
      if (line->attr("data-quantile") != "0.5") continue;
      std::size_t c = 0;
      while (run["cases"][c]["label"] != line->attr("data-series")) ++c;
      const double median = run["cases"][c]["metrics"][std::string("median_") + what + "_ms"].get<double>();
      EXPECT_NEAR(num(line->attr("data-value")), median, 0.1 * median + 0.05) << what;
    }
  }
  ASSERT_GE(chart(dom, "in-flight"), 0);
  ASSERT_GE(chart(dom, "latency-itl"), 0);
  // Capacity: one row per configuration, the JSON's load.
  const auto cap_rows = dom.with_attr("tr", "data-load");
  ASSERT_EQ(cap_rows.size(), run["cases"].size());
  for (std::size_t c = 0; c < cap_rows.size(); ++c)
    EXPECT_NEAR(num(dom.at(cap_rows[c]).attr("data-load")), run["cases"][c]["capacity"]["load"].get<double>(), 1e-3);
}
