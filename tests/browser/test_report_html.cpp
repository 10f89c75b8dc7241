// Renders the HTML reports in headless Chromium and checks what the page's script drew against
// the JSON the same run wrote: the embedded data is the --json document, every chart exists as
// SVG with data-series marks, and the marks carry the values of the rows they claim to show.
// A screenshot of each report is kept under the build tree (tests/artifacts/) for people to look
// at. Exits 77 (ctest: skipped) when no Chromium is installed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

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

// Headless, offline, no profile left behind. Returns the exit status.
int chromium(const std::string& args, const std::string& out_file) {
  const std::string profile = temp_dir();
  const std::string cmd = fmt::format(
      "timeout 180 {} --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage "
      "--hide-scrollbars --user-data-dir={} {} >{} 2>{}/stderr.txt",
      g_chromium, profile, args, out_file.empty() ? "/dev/null" : out_file, profile);
  const int status = std::system(cmd.c_str());
  std::system(fmt::format("rm -rf {}", profile).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

struct Rendered {
  Dom dom;
  json data;       // the page's eaglesim-data blob
  json timelines;  // the page's eaglesim-timelines blob
};

Rendered render(const std::string& html_path, const std::string& screenshot_name) {
  const std::string dir = temp_dir();
  const std::string dom_file = dir + "/dom.html";
  EXPECT_EQ(chromium("--dump-dom file://" + html_path, dom_file), 0);
  Rendered r{Dom(slurp(dom_file)), json(), json()};
  const auto data = r.dom.find("script", "id", "eaglesim-data");
  const auto tls = r.dom.find("script", "id", "eaglesim-timelines");
  if (data.size() == 1) r.data = json::parse(r.dom.raw_text(data[0]));
  if (tls.size() == 1) r.timelines = json::parse(r.dom.raw_text(tls[0]));

  // The screenshot is for people; the checks above and below do not depend on it.
  const std::string artifacts = EAGLESIM_ARTIFACTS;
  std::system(fmt::format("mkdir -p {}", artifacts).c_str());
  const std::string png = artifacts + "/" + screenshot_name;
  std::remove(png.c_str());
  EXPECT_EQ(chromium(fmt::format("--screenshot={} --window-size=1400,2400 file://{}", png, html_path), ""), 0);
  EXPECT_TRUE(file_exists(png)) << "no screenshot at " << png;
  std::printf("screenshot: %s\n", png.c_str());
  return r;
}

double num(const std::string& s) { return std::stod(s); }

// The single chart element named `name` (an <svg data-chart=...>).
int chart(const Dom& dom, const std::string& name) {
  const auto found = dom.find("svg", "data-chart", name);
  EXPECT_EQ(found.size(), 1u) << "chart " << name;
  return found.empty() ? -1 : found[0];
}

bool row_matches_selection(const json& row, const DomElement& svg) {
  return row["model"] == svg.attr("data-model") && row["topology"] == svg.attr("data-topology") &&
         row["weight_dtype"] == svg.attr("data-weight-dtype") && std::to_string(row["tp"].get<int>()) == svg.attr("data-tp") &&
         row["accept_mode"] == svg.attr("data-accept-mode") &&
         row["accept_value"].get<double>() == num(svg.attr("data-accept-value"));
}

}  // namespace

TEST(BrowserReport, SweepReportDrawsEveryChartFromTheJsonOfTheSameRun) {
  const std::string dir = temp_dir();
  const std::string json_path = dir + "/sweep.json", html = dir + "/sweep.html";
  const CliResult run = run_cli(fmt::format(
      "sweep --model llama-3.1-8b,qwen3-32b --topology all --tp 1,2,3,4 --draft-tokens 1..4 --accept-rate 0.5,0.7 "
      "--strategy all -j 2 --json {} --report {}",
      json_path, html));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json expected = json::parse(slurp(json_path));
  const Rendered page = render(html, "sweep-report.png");
  const Dom& dom = page.dom;

  // The script ran to the end, and the data it drew from is the --json document.
  const auto body = dom.find("body", "data-rendered", "true");
  ASSERT_EQ(body.size(), 1u) << "the report's script did not finish";
  EXPECT_EQ(page.data, expected);
  const json& rows = expected["rows"];

  // Headline: one verdict per model, naming EAGLE-3's outcome.
  EXPECT_EQ(dom.with_attr("div", "data-verdict").size(), expected["axes"]["models"].size());
  EXPECT_EQ(dom.find("p", "id", "summary").size(), 1u);

  // tok/s against draft tokens: one series per strategy that can run at the selection, each
  // point the tok/s of the row it names, and every runnable row of the selection drawn.
  const int lines = chart(dom, "tokps-vs-draft");
  ASSERT_GE(lines, 0);
  const DomElement& sel = dom.at(lines);
  std::size_t expected_points = 0;
  std::set<std::string> expected_series;
  for (const json& r : rows)
    if (r["status"] == "ok" && row_matches_selection(r, sel)) {
      ++expected_points;
      expected_series.insert(r["strategy"].get<std::string>());
    }
  ASSERT_GT(expected_points, 0u) << "the default selection should be the model's fastest configuration";
  std::set<std::string> drawn_series;
  std::size_t points = 0;
  for (int g : dom.descendants(lines, "g")) {
    const std::string series = dom.at(g).attr("data-series");
    if (series.empty() || series == "plain-decode") continue;
    drawn_series.insert(series);
    for (int c : dom.descendants(g, "circle")) {
      const DomElement& p = dom.at(c);
      const json& row = rows.at(static_cast<std::size_t>(num(p.attr("data-row"))));
      EXPECT_TRUE(row_matches_selection(row, sel));
      EXPECT_EQ(row["strategy"], series);
      EXPECT_EQ(row["draft_tokens"].get<int>(), static_cast<int>(num(p.attr("data-x"))));
      EXPECT_EQ(row["tokens_per_s"].get<double>(), num(p.attr("data-y")));
      ++points;
    }
  }
  EXPECT_EQ(drawn_series, expected_series);
  EXPECT_EQ(points, expected_points);
  const auto plain = dom.find("g", "data-series", "plain-decode");
  ASSERT_FALSE(plain.empty());
  double best_plain = 0;
  for (const json& r : rows)
    if (r["status"] == "ok" && row_matches_selection(r, sel)) best_plain = std::max(best_plain, r["decode_tokens_per_s"].get<double>());
  EXPECT_EQ(num(dom.at(plain[0]).attr("data-value")), best_plain);

  // Cycle breakdown: four stacked segments per strategy, each the row's value.
  const int bars = chart(dom, "cycle-breakdown");
  ASSERT_GE(bars, 0);
  const DomElement& bsel = dom.at(bars);
  const int n = static_cast<int>(num(bsel.attr("data-draft-tokens")));
  const std::map<std::string, std::string> field = {{"compute", "verify_compute_us"}, {"allreduce", "verify_allreduce_us"},
                                                    {"other", "verify_other_us"}, {"draft", "draft_us"}};
  std::set<std::string> runnable_at_n;
  for (const json& r : rows)
    if (r["status"] == "ok" && row_matches_selection(r, bsel) && r["draft_tokens"] == n)
      runnable_at_n.insert(r["strategy"].get<std::string>());
  ASSERT_FALSE(runnable_at_n.empty());
  std::size_t segments = 0;
  for (int rect : dom.descendants(bars, "rect")) {
    const DomElement& s = dom.at(rect);
    if (!s.has("data-series")) continue;
    bool found = false;
    for (const json& r : rows)
      if (r["status"] == "ok" && row_matches_selection(r, bsel) && r["draft_tokens"] == n && r["strategy"] == s.attr("data-strategy")) {
        EXPECT_EQ(r[field.at(s.attr("data-series"))].get<double>(), num(s.attr("data-value"))) << s.attr("data-series");
        found = true;
      }
    EXPECT_TRUE(found) << s.attr("data-strategy");
    ++segments;
  }
  EXPECT_EQ(segments, 4 * runnable_at_n.size());

  // Acceptance curves: one per strategy.
  const int curves = chart(dom, "tokps-vs-accept");
  ASSERT_GE(curves, 0);
  std::size_t curve_series = 0;
  for (int g : dom.descendants(curves, "g"))
    if (dom.at(g).has("data-series") && dom.at(g).attr("data-series") != "plain-decode") ++curve_series;
  EXPECT_EQ(curve_series, runnable_at_n.size());

  // Break-even per topology: the lowest break-even over the runnable rows of each topology.
  const int be = chart(dom, "breakeven");
  ASSERT_GE(be, 0);
  const std::string model = dom.at(be).attr("data-model");
  std::size_t categories = 0;
  for (int g : dom.find("g", "data-series", "breakeven")) {
    const DomElement& c = dom.at(g);
    std::optional<double> lowest;
    bool any_ok = false;
    for (const json& r : rows)
      if (r["model"] == model && r["topology"] == c.attr("data-category") && r["status"] == "ok") {
        any_ok = true;
        if (!r["breakeven_accept_rate"].is_null())
          lowest = std::min(lowest.value_or(2.0), r["breakeven_accept_rate"].get<double>());
      }
    if (lowest) EXPECT_EQ(num(c.attr("data-value")), *lowest) << c.attr("data-category");
    else EXPECT_EQ(c.attr("data-value"), "none") << c.attr("data-category");
    EXPECT_EQ(c.attr("data-state"), lowest ? "ok" : any_ok ? "never" : "unfit");
    ++categories;
  }
  EXPECT_EQ(categories, expected["axes"]["topologies"].size());

  // Waterfall: every span of the timeline drawn on its rank's row.
  const int wf = chart(dom, "waterfall");
  ASSERT_GE(wf, 0);
  ASSERT_FALSE(page.timelines.empty());
  const json& tl = page.timelines[0];
  EXPECT_EQ(tl["model"], dom.at(wf).attr("data-model"));
  std::size_t spans = 0;
  for (int rect : dom.descendants(wf, "rect"))
    if (dom.at(rect).attr("class") == "span") {
      EXPECT_LT(num(dom.at(rect).attr("data-rank")), tl["ranks"].get<double>());
      ++spans;
    }
  EXPECT_EQ(spans, tl["spans"].size());
  EXPECT_EQ(num(dom.at(wf).attr("data-spans")), static_cast<double>(tl["spans"].size()));
  EXPECT_GE(dom.find("g", "data-series", "allreduce").size(), 1u);  // TP > 1: allreduce spans
  chart(dom, "waterfall-zoom");

  // Results table: the runnable rows of the selected model and topology.
  const auto table = dom.find("table", "id", "results-table");
  ASSERT_EQ(table.size(), 1u);
  std::size_t ok_rows = 0;
  for (const json& r : rows)
    if (r["status"] == "ok" && r["model"] == sel.attr("data-model") && r["topology"] == sel.attr("data-topology")) ++ok_rows;
  EXPECT_EQ(num(dom.at(table[0]).attr("data-rows")), static_cast<double>(ok_rows));
  // Unfit combinations are listed (TP 3 cannot shard these models' heads).
  EXPECT_FALSE(dom.find("tr", "data-status", "tp_sharding").empty());
}

TEST(BrowserReport, RunReportDrawsTheStrategiesOfOneScenario) {
  const CliResult help = run_cli("run --help");
  if (help.out.find("--report") == std::string::npos) GTEST_SKIP() << "eaglesim run has no --report option in this build";
  const std::string dir = temp_dir();
  const std::string json_path = dir + "/run.json", html = dir + "/run.html";
  // A generated trace, so the test does not depend on the shipped ones.
  const std::string trace = dir + "/trace.json";
  const CliResult gen = run_cli(fmt::format(
      "gen --model models/llm/llama-3.1-8b.json --draft models/llm/llama-3.1-8b-eagle3.json --tp 4 --tokens 4 -o {}", trace));
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const CliResult run = run_cli(fmt::format("run {} --topology 4x-rtx-pro-6000-pcie5 --strategy all --json {} --report {}",
                                            trace, json_path, html));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json expected = json::parse(slurp(json_path));
  const Rendered page = render(html, "run-report.png");
  const Dom& dom = page.dom;
  ASSERT_EQ(dom.find("body", "data-rendered", "true").size(), 1u);
  EXPECT_EQ(page.data, expected);
  EXPECT_EQ(dom.with_attr("div", "data-verdict").size(), 1u);

  // One stacked bar per supported strategy; the allreduce segment is the strategy's comm_us
  // and the draft segment its draft_us.
  const int bars = chart(dom, "cycle-breakdown");
  ASSERT_GE(bars, 0);
  std::size_t supported = 0;
  for (const json& r : expected["results"]) supported += r["supported"].get<bool>();
  std::size_t seen = 0;
  for (int rect : dom.descendants(bars, "rect")) {
    const DomElement& s = dom.at(rect);
    if (!s.has("data-series")) continue;
    for (const json& r : expected["results"])
      if (r["strategy"] == s.attr("data-strategy")) {
        if (s.attr("data-series") == "allreduce") EXPECT_EQ(r["comm_us"].get<double>(), num(s.attr("data-value")));
        if (s.attr("data-series") == "draft") EXPECT_EQ(r["draft_us"].get<double>(), num(s.attr("data-value")));
      }
    ++seen;
  }
  EXPECT_EQ(seen, 4 * supported);
  const int be = chart(dom, "breakeven");
  ASSERT_GE(be, 0);
  for (int g : dom.find("g", "data-series", "breakeven"))
    for (const json& r : expected["results"])
      if (r["strategy"] == dom.at(g).attr("data-category") && r["supported"].get<bool>() && !r["breakeven_accept_rate"].is_null())
        EXPECT_EQ(r["breakeven_accept_rate"].get<double>(), num(dom.at(g).attr("data-value")));
  chart(dom, "tokps-vs-accept");
  if (!page.timelines.empty()) {
    const int wf = chart(dom, "waterfall");
    ASSERT_GE(wf, 0);
    EXPECT_GT(num(dom.at(wf).attr("data-spans")), 0);
  }
}

int main(int argc, char** argv) {
  g_chromium = find_chromium();
  if (g_chromium.empty()) {
    std::printf("SKIP: no chromium found (install it with tools/setup.sh, or set EAGLESIM_CHROMIUM)\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
