#include "report/comm_bench_printer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace eaglesim {

namespace {

std::string human_bytes(std::int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= (1 << 10) && b % (1 << 10) == 0) return fmt::format("{}K", b >> 10);
  return std::to_string(b);
}

// Consecutive sizes with the same label, merged into ranges.
struct Range {
  std::string label;
  std::string detail;  // the first size's
  std::int64_t from = 0, to = 0;
};

template <typename LabelOf>
std::vector<Range> ranges(const CommBenchResult& r, LabelOf label_of) {
  std::vector<Range> out;
  for (const auto& row : r.rows) {
    std::string detail;
    const std::string label = label_of(row, detail);
    if (label.empty()) continue;
    if (!out.empty() && out.back().label == label) out.back().to = row.bytes;
    else out.push_back({label, detail, row.bytes, row.bytes});
  }
  return out;
}

std::vector<Range> crossovers(const CommBenchResult& r) {
  return ranges(r, [](const CommBenchRow& row, std::string&) { return row.fastest; });
}

const CommBenchCell* cell_of(const CommBenchRow& row, const std::string& strategy) {
  for (const auto& c : row.cells)
    if (c.strategy == strategy) return &c;
  return nullptr;
}

// Per engine strategy: its path per range of sizes, with the first size's reason.
std::vector<Range> engine_paths(const CommBenchResult& r, const std::string& strategy) {
  return ranges(r, [&](const CommBenchRow& row, std::string& detail) {
    const CommBenchCell* c = cell_of(row, strategy);
    if (!c || c->path.empty()) return std::string();
    detail = c->reason;
    return c->path + " [" + c->runs_as + "]";
  });
}

std::vector<Range> unsupported(const CommBenchResult& r, const std::string& strategy) {
  return ranges(r, [&](const CommBenchRow& row, std::string& detail) {
    const CommBenchCell* c = cell_of(row, strategy);
    if (!c || c->supported) return std::string();
    detail = c->note;
    return std::string("cannot run");
  });
}

std::string range_text(const Range& x) {
  return x.from == x.to ? human_bytes(x.from) : human_bytes(x.from) + ".." + human_bytes(x.to);
}

std::string measured_header(const CommBenchResult& r) {
  std::string s;
  s += fmt::format("# eaglesim bench-comm: {}, {} ranks, {}; {} allreduces per graph, median of {} replays\n", r.device,
                   r.ranks, to_string(r.dtype), r.calls_per_graph, r.replays);
  s += fmt::format("# graph_us: back-to-back in one CUDA graph; ctx_us: after a {}x{}x{} bf16 GEMM ({:.2f} us alone), "
                   "(GEMM+AR) - GEMM\n",
                   r.gemm_m, r.gemm_n, r.gemm_k, r.gemm_us);
  s += fmt::format("# busBW = algBW * 2(n-1)/n (GB/s); #wrong: elements off the float64 reference or differing "
                   "across ranks\n");
  return s;
}

std::string predicted_header(const CommBenchResult& r) {
  std::string s;
  s += fmt::format("# eaglesim bench-comm --backend sim: {} on topology {}, {} ranks, {}; predicted by the cost "
                   "models, not measured\n",
                   r.device, r.topology, r.ranks, to_string(r.dtype));
  s += "# graph_us: one allreduce back to back (the model without the topology's calibration tables); ctx_us: in a "
       "step (with them where they cover the size, else the same)\n";
  s += "# busBW = algBW * 2(n-1)/n (GB/s); engine strategies: the path that engine takes for a plain allreduce of "
       "the size (no RMSNorm after it: no fusion)\n";
  if (r.nccl_channels > 0)
    s += fmt::format("# NCCL on {} channels (--nccl-channels: NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = {})\n",
                     r.nccl_channels, r.nccl_channels);
  return s;
}

std::string comm_bench_footer(const CommBenchResult& r);

}  // namespace

namespace {
// The default table: one time per strategy and size (graph_us, back to back as nccl-tests times
// it), so that a row fits 120 columns; the strategies are split into blocks when they do not.
std::string compact_rows(const CommBenchResult& r) {
  const bool measured = !r.predicted;
  constexpr std::size_t kWidth = 120, kLead = 8, kTail = 15;  // "   bytes", " | oneshot_push"
  auto cell = [](const std::string& name) { return std::max<std::size_t>(8, name.size()); };
  std::string s;
  for (std::size_t first = 0; first < r.strategies.size();) {
    // As many strategies as fit beside the bytes, the #wrong column and the fastest.
    std::size_t last = first, used = kLead + kTail + (measured ? 7 : 0);
    while (last < r.strategies.size() && (last == first || used + 1 + cell(r.strategies[last]) <= kWidth))
      used += 1 + cell(r.strategies[last++]);
    const bool final_block = last == r.strategies.size();
    s += fmt::format("{:>8}", "bytes");
    for (std::size_t i = first; i < last; ++i) s += fmt::format(" {:>{}}", r.strategies[i], cell(r.strategies[i]));
    if (final_block && measured) s += fmt::format(" {:>6}", "#wrong");
    s += final_block ? " | fastest\n" : "\n";
    for (const auto& row : r.rows) {
      s += fmt::format("{:>8}", human_bytes(row.bytes));
      long wrong = 0;
      for (const auto& c : row.cells) wrong += measured ? static_cast<long>(c.wrong) : 0;
      for (std::size_t i = first; i < last; ++i) {
        const CommBenchCell* c = cell_of(row, r.strategies[i]);
        const std::size_t w = cell(r.strategies[i]);
        s += c && c->supported ? fmt::format(" {:>{}.2f}", c->graph_us, w) : fmt::format(" {:>{}}", "-", w);
      }
      if (final_block && measured) s += fmt::format(" {:>6}", wrong);
      if (final_block) s += " | " + (row.fastest.empty() ? std::string("-") : row.fastest);
      s += "\n";
    }
    if (!final_block) s += "\n";
    first = last;
  }
  return s;
}
}  // namespace

std::string comm_bench_table(const CommBenchResult& r, bool wide) {
  const bool measured = !r.predicted;
  std::string s = measured ? measured_header(r) : predicted_header(r);
  if (!wide) {
    s += "# us per allreduce (graph_us); ctx_us, algBW and busBW per strategy: --wide, --json or --csv\n";
    s += compact_rows(r);
    return s + comm_bench_footer(r);
  }
  const int width = measured ? 42 : 34;
  std::string head1 = fmt::format("{:>10} {:>10} {:>5}", "", "", "");
  std::string head2 = fmt::format("{:>10} {:>10} {:>5}", "bytes", "count", "type");
  for (const auto& name : r.strategies) {
    head1 += fmt::format(" | {:^{}}", name, width);
    head2 += fmt::format(" | {:>8} {:>8} {:>7} {:>7}", "graph_us", "ctx_us", "algBW", "busBW");
    if (measured) head2 += fmt::format(" {:>6}", "#wrong");
  }
  s += head1 + " | \n" + head2 + " | fastest\n";
  for (const auto& row : r.rows) {
    s += fmt::format("{:>10} {:>10} {:>5}", row.bytes, row.count, to_string(r.dtype));
    for (const auto& c : row.cells) {
      if (!c.supported) {
        s += fmt::format(" | {:>8} {:>8} {:>7} {:>7}", "-", "-", "-", "-");
        continue;
      }
      s += fmt::format(" | {:>8.2f} {:>8.2f} {:>7.2f} {:>7.2f}", c.graph_us, c.context_us, c.algbw_gbs, c.busbw_gbs);
      if (measured) s += fmt::format(" {:>6}", c.wrong);
    }
    s += " | " + (row.fastest.empty() ? std::string("-") : row.fastest) + "\n";
  }
  return s + comm_bench_footer(r);
}

namespace {
std::string comm_bench_footer(const CommBenchResult& r) {
  const bool measured = !r.predicted;
  std::string s;
  std::string notes;
  if (measured) {
    for (const auto& row : r.rows)
      for (const auto& c : row.cells)
        if (!c.note.empty()) notes += fmt::format("#   {} B {}: {}\n", row.bytes, c.strategy, c.note);
  } else {
    for (const auto& name : r.strategies)
      for (const Range& x : unsupported(r, name))
        notes += fmt::format("#   {} {}: {}: {} (the first size's reason)\n", name, range_text(x), x.label, x.detail);
  }
  if (!notes.empty()) s += "# notes:\n" + notes;
  std::string paths;
  for (const auto& name : r.strategies)
    for (const Range& x : engine_paths(r, name))
      paths += fmt::format("#   {} {}: {}: {}\n", name, range_text(x), x.label, x.detail);
  if (!paths.empty()) s += "# engine paths (per range of sizes, the first size's reason):\n" + paths;
  const auto xs = crossovers(r);
  if (!xs.empty()) {
    s += "# auto (fastest exact plain allreduce per size):";
    for (const auto& x : xs) s += fmt::format(" {} for {}..{};", x.label, human_bytes(x.from), human_bytes(x.to));
    s += "\n";
  }
  return s;
}
}  // namespace

nlohmann::json comm_bench_json(const CommBenchResult& r) {
  nlohmann::json j;
  j["device"] = r.device;
  if (r.predicted) {
    j["backend"] = "sim";
    j["topology"] = r.topology;
    if (r.nccl_channels > 0) j["nccl_channels"] = r.nccl_channels;
  }
  j["ranks"] = r.ranks;
  j["dtype"] = to_string(r.dtype);
  if (!r.predicted) {
    j["calls_per_graph"] = r.calls_per_graph;
    j["replays"] = r.replays;
    j["gemm"] = {{"m", r.gemm_m}, {"n", r.gemm_n}, {"k", r.gemm_k}, {"us", r.gemm_us}};
  }
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json jr{{"bytes", row.bytes}, {"count", row.count}, {"fastest", row.fastest}};
    for (const auto& c : row.cells) {
      if (!r.predicted) {
        jr["strategies"][c.strategy] = {{"graph_us", c.graph_us}, {"context_us", c.context_us},
                                        {"algbw_gbs", c.algbw_gbs}, {"busbw_gbs", c.busbw_gbs},
                                        {"wrong", c.wrong},         {"note", c.note}};
        continue;
      }
      auto num = [&c](double v) { return c.supported ? nlohmann::json(v) : nlohmann::json(nullptr); };
      nlohmann::json jc{{"supported", c.supported},     {"graph_us", num(c.graph_us)},
                        {"context_us", num(c.context_us)}, {"algbw_gbs", num(c.algbw_gbs)},
                        {"busbw_gbs", num(c.busbw_gbs)}, {"detail", c.note}};
      if (!c.path.empty()) {
        jc["path"] = c.path;
        jc["runs_as"] = c.runs_as;
        jc["reason"] = c.reason;
      }
      jr["strategies"][c.strategy] = std::move(jc);
    }
    j["rows"].push_back(jr);
  }
  j["auto"] = nlohmann::json::array();
  for (const auto& x : crossovers(r))
    j["auto"].push_back({{"strategy", x.label}, {"from_bytes", x.from}, {"to_bytes", x.to}});
  return j;
}

std::string comm_bench_csv(const CommBenchResult& r) {
  std::string s = "bytes,count,dtype,strategy,graph_us,context_us,algbw_gbs,busbw_gbs,wrong,fastest,note";
  s += r.predicted ? ",supported,path,runs_as,reason\n" : "\n";
  auto quoted = [](std::string v) {
    for (std::size_t i = v.find('"'); i != std::string::npos; i = v.find('"', i + 2)) v.insert(i, "\"");
    return "\"" + v + "\"";
  };
  for (const auto& row : r.rows)
    for (const auto& c : row.cells) {
      if (!r.predicted) {
        s += fmt::format("{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},\"{}\"\n", row.bytes, row.count,
                         to_string(r.dtype), c.strategy, c.graph_us, c.context_us, c.algbw_gbs, c.busbw_gbs, c.wrong,
                         row.fastest, c.note);
        continue;
      }
      const std::string numbers = c.supported ? fmt::format("{:.3f},{:.3f},{:.3f},{:.3f}", c.graph_us, c.context_us,
                                                            c.algbw_gbs, c.busbw_gbs)
                                              : std::string(",,,");
      s += fmt::format("{},{},{},{},{},,{},{},{},{},{},{}\n", row.bytes, row.count, to_string(r.dtype), c.strategy,
                       numbers, row.fastest, quoted(c.note), c.supported ? "true" : "false", quoted(c.path),
                       c.runs_as, quoted(c.reason));
    }
  return s;
}

}  // namespace eaglesim
