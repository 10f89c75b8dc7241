// eaglesim bench-comm: allreduce latency and bandwidth of each strategy over message sizes,
// in the style of nccl-tests (bytes, count, dtype, time, algBW, busBW, #wrong), measured by the
// CUDA part (registered through engine/gpu_tools.hpp) and printed here.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/replay_flags.hpp"
#include "comm/strategy_facts.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "calibration/gpu_tools.hpp"
#include "io/atomic_file.hpp"

namespace eaglesim::cli {

namespace {

const std::vector<std::string>& bench_strategies() {
  static const std::vector<std::string> names = bench_comm_names();
  return names;
}

std::vector<std::string> parse_strategies(const std::string& list) {
  std::vector<std::string> out;
  for (const std::string& name : split_comma_list("--strategy", list)) {
    if (name == "all") {
      for (const auto& s : bench_strategies())
        if (strategy_facts(s).kernel != StrategyKernel::reference) out.push_back(s);  // a baseline, asked for by name
    } else if (std::find(bench_strategies().begin(), bench_strategies().end(), name) != bench_strategies().end()) {
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    } else {
      std::string known;
      for (const auto& s : bench_strategies()) known += (known.empty() ? "" : ", ") + s;
      throw InputError("--strategy: unknown strategy '" + name + "' (known: " + known + ", all)");
    }
  }
  return out;
}

// The largest message bench-comm measures: 8 GiB, 128 times the top of the default range (64 MiB,
// beyond any decode-step allreduce), while every rank's input and output buffers still fit the
// smallest GPU we describe (L40S, 48 GB). A bigger figure is a typo; 13 digits times G would
// also overflow int64.
constexpr std::int64_t kMaxBenchBytes = std::int64_t{8} << 30;

// "43008", "64K", "1M" (K/M/G = 1024^n bytes).
std::int64_t parse_size(const std::string& text) {
  if (text.empty()) throw InputError("--sizes: empty size (expected e.g. 1K, 43008, 64M)");
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string suffix = text.substr(digits);
  std::int64_t mult = 1;
  if (suffix == "K" || suffix == "k") mult = 1 << 10;
  else if (suffix == "M" || suffix == "m") mult = 1 << 20;
  else if (suffix == "G" || suffix == "g") mult = 1 << 30;
  else if (!suffix.empty()) digits = 0;
  if (digits == 0 || digits > 12)
    throw InputError("--sizes: '" + text + "' is not a size (expected bytes with optional K, M or G suffix)");
  const std::int64_t count = std::stoll(text.substr(0, digits));
  if (count <= 0) throw InputError("--sizes: '" + text + "' must be positive");
  if (count > kMaxBenchBytes / mult)
    throw InputError(fmt::format("--sizes: '{}' is larger than the {}G ({} GiB) per message bench-comm measures", text,
                                 kMaxBenchBytes >> 30, kMaxBenchBytes >> 30));
  return count * mult;
}

// Comma-separated items; A:B doubles from A up to B inclusive.
std::vector<std::int64_t> parse_sizes(const std::string& spec, DType dtype) {
  std::vector<std::int64_t> out;
  for (const std::string& item : split_comma_list("--sizes", spec)) {
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      out.push_back(parse_size(item));
    } else {
      const std::int64_t lo = parse_size(item.substr(0, colon)), hi = parse_size(item.substr(colon + 1));
      if (hi < lo) throw InputError("--sizes: range '" + item + "' ends below its start");
      for (std::int64_t s = lo; s <= hi; s *= 2) out.push_back(s);
    }
  }
  const auto elem = static_cast<std::int64_t>(bytes_per_element(dtype));
  for (std::int64_t s : out)
    if (s % elem != 0)
      throw InputError(fmt::format("--sizes: {} bytes is not a whole number of {} elements ({} bytes each)", s,
                                   to_string(dtype), elem));
  return out;
}

std::vector<int> parse_gemm(const std::string& text) {
  std::vector<int> v;
  for (const std::string& item : split_comma_list("--gemm", text)) {
    if (item.size() > 7 || !std::all_of(item.begin(), item.end(), ::isdigit) || std::stoi(item) <= 0)
      throw InputError("--gemm: expected three positive integers M,N,K, got '" + text + "'");
    v.push_back(std::stoi(item));
  }
  if (v.size() != 3) throw InputError("--gemm: expected three positive integers M,N,K, got '" + text + "'");
  return v;
}

std::string human_bytes(std::int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= (1 << 10) && b % (1 << 10) == 0) return fmt::format("{}K", b >> 10);
  return std::to_string(b);
}

struct Crossover {
  std::string strategy;
  std::int64_t from = 0, to = 0;
};

// Consecutive sizes with the same fastest strategy, merged into ranges.
std::vector<Crossover> crossovers(const CommBenchResult& r) {
  std::vector<Crossover> out;
  for (const auto& row : r.rows) {
    if (row.fastest.empty()) continue;
    if (!out.empty() && out.back().strategy == row.fastest) out.back().to = row.bytes;
    else out.push_back({row.fastest, row.bytes, row.bytes});
  }
  return out;
}

std::string format_table(const CommBenchResult& r, const CommBenchRequest& q) {
  std::string s;
  s += fmt::format("# eaglesim bench-comm: {}, {} ranks, {}; {} allreduces per graph, median of {} replays\n", r.device,
                   r.ranks, to_string(r.dtype), r.calls_per_graph, q.iters);
  s += fmt::format("# graph_us: back-to-back in one CUDA graph; ctx_us: after a {}x{}x{} bf16 GEMM ({:.2f} us alone), "
                   "(GEMM+AR) - GEMM\n",
                   q.gemm_m, q.gemm_n, q.gemm_k, r.gemm_us);
  s += fmt::format("# busBW = algBW * 2(n-1)/n (GB/s); #wrong: elements off the float64 reference or differing "
                   "across ranks\n");
  std::string head1 = fmt::format("{:>10} {:>10} {:>5}", "", "", "");
  std::string head2 = fmt::format("{:>10} {:>10} {:>5}", "bytes", "count", "type");
  for (const auto& name : q.strategies) {
    head1 += fmt::format(" | {:^42}", name);
    head2 += fmt::format(" | {:>8} {:>8} {:>7} {:>7} {:>6}", "graph_us", "ctx_us", "algBW", "busBW", "#wrong");
  }
  s += head1 + " | \n" + head2 + " | fastest\n";
  for (const auto& row : r.rows) {
    s += fmt::format("{:>10} {:>10} {:>5}", row.bytes, row.count, to_string(r.dtype));
    for (const auto& c : row.cells)
      s += fmt::format(" | {:>8.2f} {:>8.2f} {:>7.2f} {:>7.2f} {:>6}", c.graph_us, c.context_us, c.algbw_gbs,
                       c.busbw_gbs, c.wrong);
    s += " | " + (row.fastest.empty() ? std::string("-") : row.fastest) + "\n";
  }
  std::string notes;
  for (const auto& row : r.rows)
    for (const auto& c : row.cells)
      if (!c.note.empty()) notes += fmt::format("#   {} B {}: {}\n", row.bytes, c.strategy, c.note);
  if (!notes.empty()) s += "# notes:\n" + notes;
  const auto xs = crossovers(r);
  if (!xs.empty()) {
    s += "# auto (fastest exact plain allreduce per size):";
    for (const auto& x : xs) s += fmt::format(" {} for {}..{};", x.strategy, human_bytes(x.from), human_bytes(x.to));
    s += "\n";
  }
  return s;
}

nlohmann::json to_json(const CommBenchResult& r, const CommBenchRequest& q) {
  nlohmann::json j;
  j["device"] = r.device;
  j["ranks"] = r.ranks;
  j["dtype"] = to_string(r.dtype);
  j["calls_per_graph"] = r.calls_per_graph;
  j["replays"] = q.iters;
  j["gemm"] = {{"m", q.gemm_m}, {"n", q.gemm_n}, {"k", q.gemm_k}, {"us", r.gemm_us}};
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json jr{{"bytes", row.bytes}, {"count", row.count}, {"fastest", row.fastest}};
    for (const auto& c : row.cells)
      jr["strategies"][c.strategy] = {{"graph_us", c.graph_us}, {"context_us", c.context_us},
                                      {"algbw_gbs", c.algbw_gbs}, {"busbw_gbs", c.busbw_gbs},
                                      {"wrong", c.wrong},         {"note", c.note}};
    j["rows"].push_back(jr);
  }
  j["auto"] = nlohmann::json::array();
  for (const auto& x : crossovers(r))
    j["auto"].push_back({{"strategy", x.strategy}, {"from_bytes", x.from}, {"to_bytes", x.to}});
  return j;
}

std::string to_csv(const CommBenchResult& r) {
  std::string s = "bytes,count,dtype,strategy,graph_us,context_us,algbw_gbs,busbw_gbs,wrong,fastest,note\n";
  for (const auto& row : r.rows)
    for (const auto& c : row.cells)
      s += fmt::format("{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},\"{}\"\n", row.bytes, row.count,
                       to_string(r.dtype), c.strategy, c.graph_us, c.context_us, c.algbw_gbs, c.busbw_gbs, c.wrong,
                       row.fastest, c.note);
  return s;
}

}  // namespace

void add_bench_comm(CLI::App& app) {
  struct Options {
    std::string strategies = "nccl,oneshot,twoshot,fused,quant";
    std::string sizes = "1K:64M";
    std::string dtype = "bf16";
    std::string gemm = "4,4096,7168";
    int ranks = 0;
    int iters = 20;
    double timeout_s = 30;
    std::string json, csv;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench-comm",
                                 "Measure allreduce strategies on this machine's GPUs (like nccl-tests, with #wrong)");
  cmd->add_option("--strategy", opt->strategies,
                  "Comma-separated: nccl, oneshot, oneshot_push, twoshot, fused, quant, reference, or all")
      ->capture_default_str();
  cmd->add_option("--sizes", opt->sizes, "Message sizes in bytes: list and/or ranges A:B (doubling), K/M/G suffixes")
      ->capture_default_str();
  cmd->add_option("--dtype", opt->dtype, "bf16, fp16 or fp32")->capture_default_str();
  cmd->add_option("--ranks", opt->ranks, "GPUs to use (0: all visible)")->capture_default_str();
  cmd->add_option("--iters", opt->iters, "Timed graph replays per measurement (median reported)")->capture_default_str();
  cmd->add_option("--gemm", opt->gemm, "In-context GEMM shape M,N,K (bf16)")->capture_default_str();
  cmd->add_option("--timeout", opt->timeout_s, "Seconds an allreduce may wait for a peer before failing")
      ->capture_default_str();
  cmd->add_option("--json", opt->json, "Also write the results as JSON to this file");
  cmd->add_option("--csv", opt->csv, "Also write the results as CSV to this file");
  cmd->callback([opt] {
    CommBenchRequest q;
    q.strategies = parse_strategies(opt->strategies);
    if (!parse_dtype(opt->dtype, q.dtype) ||
        (q.dtype != DType::bf16 && q.dtype != DType::fp16 && q.dtype != DType::fp32))
      throw InputError("--dtype: expected bf16, fp16 or fp32, got '" + opt->dtype + "'");
    q.sizes = parse_sizes(opt->sizes, q.dtype);
    if (opt->ranks < 0 || opt->ranks == 1) throw InputError("--ranks: expected 0 (all GPUs) or at least 2");
    q.ranks = opt->ranks;
    if (opt->iters < 1 || opt->iters > 100000) throw InputError("--iters: expected 1..100000");
    q.iters = opt->iters;
    check_timeout_flag(opt->timeout_s);
    q.timeout_s = opt->timeout_s;
    const auto g = parse_gemm(opt->gemm);
    q.gemm_m = g[0], q.gemm_n = g[1], q.gemm_k = g[2];
    if (!opt->json.empty()) check_writable(opt->json);
    if (!opt->csv.empty()) check_writable(opt->csv);

    const CommBenchResult r = run_comm_bench(q);
    fmt::print("{}", format_table(r, q));
    std::fflush(stdout);
    write_files_atomic({{opt->json, opt->json.empty() ? "" : to_json(r, q).dump(2) + "\n"},
                        {opt->csv, opt->csv.empty() ? "" : to_csv(r)}});
  });
}

}  // namespace eaglesim::cli
