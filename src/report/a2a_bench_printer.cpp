#include "report/a2a_bench_printer.hpp"

#include <cstdint>

#include <fmt/format.h>

namespace eaglesim {

namespace {

const AllToAllBenchCell* cell_of(const AllToAllBenchRow& row, const std::string& strategy) {
  for (const auto& c : row.cells)
    if (c.strategy == strategy) return &c;
  return nullptr;
}

// Consecutive token counts with the same label, merged: "1..128".
struct Range {
  std::string label, detail;
  std::int64_t from = 0, to = 0;
};

template <typename LabelOf>
std::vector<Range> ranges(const AllToAllBenchResult& r, LabelOf label_of) {
  std::vector<Range> out;
  for (const auto& row : r.rows) {
    std::string detail;
    const std::string label = label_of(row, detail);
    if (label.empty()) continue;
    if (!out.empty() && out.back().label == label) out.back().to = row.tokens;
    else out.push_back({label, detail, row.tokens, row.tokens});
  }
  return out;
}

std::string range_text(const Range& x) {
  return x.from == x.to ? std::to_string(x.from) : fmt::format("{}..{}", x.from, x.to);
}

std::string header(const AllToAllBenchResult& r) {
  std::string s;
  s += fmt::format("# eaglesim bench-comm --backend sim --a2a: {} on topology {}, EP{} over {} node{}; predicted by "
                   "the all-to-all models, not measured\n",
                   r.device, r.topology, r.ranks, r.nodes, r.nodes == 1 ? "" : "s");
  s += fmt::format("# tokens: a rank's; hidden {}, top-{} of {} experts ({} a rank), routing {}; dispatch {}, combine "
                   "bf16\n",
                   r.hidden, r.top_k, r.experts, r.experts / r.ranks,
                   r.max_nodes_per_token > 0 ? fmt::format("over at most {} nodes a token", r.max_nodes_per_token)
                                             : std::string("balanced"),
                   r.dispatch_dtype == DType::fp8 ? "fp8 (one fp32 scale per 128 values)" : "bf16");
  s += "# us per call (launch, notify and host wait included); GB/s as each kernel's own test counts bytes: "
       "deepep_ll the routed copies (tokens x top-k, DeepEP tests/test_low_latency.py), deepep_normal its "
       "bottleneck link (NVLink: the copies a rank receives; RDMA: one copy per node a token reaches, its own "
       "included; tests/test_intranode.py, test_internode.py), nccl the bytes a rank sends\n";
  return s;
}

std::string footer(const AllToAllBenchResult& r) {
  std::string s, notes;
  for (const auto& name : r.strategies)
    for (const Range& x : ranges(r, [&](const AllToAllBenchRow& row, std::string& detail) {
           const AllToAllBenchCell* c = cell_of(row, name);
           if (!c || c->supported) return std::string();
           detail = c->reason;
           return std::string("cannot run");
         }))
      notes += fmt::format("#   {} at {} tokens: {}: {}{}\n", name, range_text(x), x.label, x.detail,
                           x.from == x.to ? "" : " (at the first)");
  if (!notes.empty()) s += "# notes:\n" + notes;
  const auto fastest = ranges(r, [](const AllToAllBenchRow& row, std::string&) { return row.fastest; });
  if (!fastest.empty()) {
    s += "# fastest (dispatch + combine):";
    for (const auto& x : fastest)
      s += fmt::format(" {} for {} token{};", x.label, range_text(x), x.from == 1 && x.to == 1 ? "" : "s");
    s += "\n";
  }
  return s;
}

}  // namespace

std::string a2a_bench_table(const AllToAllBenchResult& r) {
  std::string s = header(r);
  s += fmt::format("{:>8}  {:<14} {:<14} {:>12} {:>9} {:>12} {:>9}  {}\n", "tokens", "strategy", "runs_as",
                   "dispatch_us", "GB/s", "combine_us", "GB/s", "GB/s counts");
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    if (i > 0 && r.strategies.size() > 1) s += "\n";
    for (const auto& c : row.cells) {
      if (!c.supported) {
        s += fmt::format("{:>8}  {:<14} {:<14} {:>12} {:>9} {:>12} {:>9}  {}\n", row.tokens, c.strategy, c.runs_as, "-",
                         "-", "-", "-", "cannot run (notes)");
        continue;
      }
      s += fmt::format("{:>8}  {:<14} {:<14} {:>12.2f} {:>9.2f} {:>12.2f} {:>9.2f}  {}\n", row.tokens, c.strategy,
                       c.runs_as, c.dispatch.us, c.dispatch.gbs, c.combine.us, c.combine.gbs, c.counted_as);
    }
  }
  return s + footer(r);
}

nlohmann::json a2a_bench_json(const AllToAllBenchResult& r) {
  nlohmann::json j;
  j["backend"] = "sim";
  j["collective"] = "all_to_all";
  j["device"] = r.device;
  j["topology"] = r.topology;
  j["ranks"] = r.ranks;
  j["nodes"] = r.nodes;
  j["hidden"] = r.hidden;
  j["top_k"] = r.top_k;
  j["experts"] = r.experts;
  j["max_nodes_per_token"] = r.max_nodes_per_token;
  j["dispatch_dtype"] = to_string(r.dispatch_dtype);
  j["combine_dtype"] = "bf16";
  j["strategies"] = r.strategies;
  j["rows"] = nlohmann::json::array();
  auto phase = [](const AllToAllBenchPhase& p) {
    return nlohmann::json{{"us", p.us}, {"gbs", p.gbs}, {"detail", p.detail}};
  };
  for (const auto& row : r.rows) {
    nlohmann::json jr{{"tokens", row.tokens}, {"fastest", row.fastest}};
    jr["strategies"] = nlohmann::json::object();
    for (const auto& c : row.cells) {
      nlohmann::json jc{{"supported", c.supported}, {"runs_as", c.runs_as}};
      if (c.supported) {
        jc["counted_as"] = c.counted_as;
        jc["dispatch"] = phase(c.dispatch);
        jc["combine"] = phase(c.combine);
      } else {
        jc["reason"] = c.reason;
      }
      jr["strategies"][c.strategy] = std::move(jc);
    }
    j["rows"].push_back(std::move(jr));
  }
  return j;
}

std::string a2a_bench_csv(const AllToAllBenchResult& r) {
  std::string s = "tokens,strategy,runs_as,supported,dispatch_us,dispatch_gbs,combine_us,combine_gbs,counted_as,fastest,"
                  "reason\n";
  auto quoted = [](std::string v) {
    for (std::size_t i = v.find('"'); i != std::string::npos; i = v.find('"', i + 2)) v.insert(i, "\"");
    return "\"" + v + "\"";
  };
  for (const auto& row : r.rows)
    for (const auto& c : row.cells) {
      const std::string numbers = c.supported ? fmt::format("{:.3f},{:.3f},{:.3f},{:.3f}", c.dispatch.us, c.dispatch.gbs,
                                                            c.combine.us, c.combine.gbs)
                                              : std::string(",,,");
      s += fmt::format("{},{},{},{},{},{},{},{}\n", row.tokens, c.strategy, c.runs_as, c.supported ? "true" : "false",
                       numbers, quoted(c.counted_as), row.fastest, quoted(c.reason));
    }
  return s;
}

}  // namespace eaglesim
