// eaglesim bench-comm: allreduce latency and bandwidth of each strategy over message sizes,
// in the style of nccl-tests (bytes, count, dtype, time, algBW, busBW, #wrong), measured by the
// CUDA part (registered through calibration/gpu_tools.hpp) or, with --backend sim, predicted by
// the cost models on a topology (backend/comm_bench_prediction.hpp); report/comm_bench_printer.hpp
// prints both. With --a2a it prices expert parallelism's dispatch and combine over token counts
// instead (cli/bench_comm_a2a.hpp).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "calibration/gpu_tools.hpp"
#include "cli/bench_comm_a2a.hpp"
#include "cli/commands.hpp"
#include "cli/engine_flags.hpp"
#include "cli/replay_flags.hpp"
#include "comm/strategy_facts.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "backend/comm_bench_prediction.hpp"
#include "io/atomic_file.hpp"
#include "report/comm_bench_printer.hpp"
#include "topology/topology.hpp"

namespace eaglesim::cli {

namespace {

const std::vector<std::string>& bench_strategies() {
  static const std::vector<std::string> names = bench_comm_names();
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, ", "));
}

// `known`: the names the backend runs; `all`: what `all` expands to.
std::vector<std::string> parse_strategies(const std::string& list, const std::vector<std::string>& known,
                                          const std::vector<std::string>& all, const std::string& backend) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (const std::string& name : split_comma_list("--strategy", list)) {
    if (name == "all") {
      for (const auto& s : all) add(s);
    } else if (std::find(known.begin(), known.end(), name) != known.end()) {
      add(name);
    } else if (backend == "sim" && find_strategy_facts(name) && !strategy_facts(name).priced) {
      throw InputError("--strategy: '" + name + "' is the GPU bench's correctness baseline and has no cost model "
                       "(known for --backend sim: " + joined(known) + ", all)");
    } else {
      throw InputError("--strategy: unknown strategy '" + name + "' (known" +
                       (backend == "sim" ? " for --backend sim" : "") + ": " + joined(known) + ", all)");
    }
  }
  return out;
}

// The GPU command's: every bench-comm entry; `all` leaves out the correctness baseline.
std::vector<std::string> measured_all() {
  std::vector<std::string> out;
  for (const auto& s : bench_strategies())
    if (!strategy_facts(s).correctness_baseline) out.push_back(s);  // a baseline, asked for by name
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

constexpr const char* kBenchCommDescription =
    "Measure allreduce strategies on this machine's GPUs (like nccl-tests, with #wrong), or predict the same table "
    "on a topology (--backend sim); --a2a: MoE dispatch and combine over token counts on a topology (like DeepEP's "
    "tests)";

}  // namespace

void add_bench_comm(CLI::App& app) {
  struct Options {
    std::string backend = "cuda";
    std::string topology;
    std::string strategies;  // empty: the backend's default
    std::string sizes = "1K:64M";
    std::string dtype = "bf16";
    std::string gemm = "4,4096,7168";
    std::string engine_options;
    int ranks = 0;
    int nccl_channels = 0;
    std::string nccl_algo, nccl_proto;
    int iters = 20;
    double timeout_s = 30;
    bool wide = false;
    std::string json, csv;
  };
  constexpr const char* kMeasuredDefault = "nccl,oneshot,twoshot,fused,quant";
  auto opt = std::make_shared<Options>();
  auto a2a = std::make_shared<A2aBenchFlags>();
  auto* cmd = app.add_subcommand("bench-comm", kBenchCommDescription);
  cmd->add_option("--backend,-b", opt->backend, "cuda (measure on this machine's GPUs) or sim (the cost models on --topology)")
      ->check(CLI::IsMember({"cuda", "sim"}))
      ->capture_default_str();
  cmd->add_option("--topology,-t", opt->topology, "sim: topology preset name or file (required)");
  cmd->add_option("--strategy", opt->strategies,
                  fmt::format("Comma-separated, or all. cuda: {} (default {}); sim: {} (default all of them)",
                              joined(bench_strategies()), kMeasuredDefault, joined(predicted_bench_strategies())));
  cmd->add_option("--sizes", opt->sizes, "Message sizes in bytes: list and/or ranges A:B (doubling), K/M/G suffixes")
      ->capture_default_str();
  cmd->add_option("--dtype", opt->dtype, "bf16, fp16 or fp32")->capture_default_str();
  cmd->add_flag("--wide", opt->wide,
                "Every figure per strategy in the table (graph_us, ctx_us, algBW, busBW); by default one time per "
                "strategy, 120 columns");
  cmd->add_option("--ranks", opt->ranks, "GPUs to use (0: all visible; sim: all of the topology's)")->capture_default_str();
  cmd->add_option("--iters", opt->iters, "cuda: timed graph replays per measurement (median reported)")
      ->capture_default_str();
  cmd->add_option("--gemm", opt->gemm, "cuda: in-context GEMM shape M,N,K (bf16)")->capture_default_str();
  cmd->add_option("--timeout", opt->timeout_s, "cuda: seconds an allreduce may wait for a peer before failing")
      ->capture_default_str();
  cmd->add_option("--nccl-channels", opt->nccl_channels,
                  "sim: price NCCL on this many channels, as NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS would run it "
                  "(default: the channels NCCL's search picks)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--nccl-algo", opt->nccl_algo,
                  "sim: force the NCCL model's algorithm, as NCCL_ALGO would (ring or tree; default: NCCL's choice)")
      ->check(CLI::IsMember({"ring", "tree"}));
  cmd->add_option("--nccl-proto", opt->nccl_proto,
                  "sim: force the NCCL model's protocol, as NCCL_PROTO would (LL, LL128 or Simple)")
      ->check(CLI::IsMember({"LL", "LL128", "Simple"}));
  add_engine_option_flag(cmd, opt->engine_options);
  cmd->add_option("--json", opt->json, "Also write the results as JSON to this file");
  cmd->add_option("--csv", opt->csv, "Also write the results as CSV to this file");
  add_a2a_bench_flags(cmd, *a2a);
  cmd->callback([opt, a2a, cmd] {
    if (run_a2a_bench_if_asked(*cmd, *a2a, {opt->backend, opt->topology, opt->ranks, opt->json, opt->csv})) return;
    const bool sim = opt->backend == "sim";
    DType dtype{};
    if (!parse_dtype(opt->dtype, dtype) || (dtype != DType::bf16 && dtype != DType::fp16 && dtype != DType::fp32))
      throw InputError("--dtype: expected bf16, fp16 or fp32, got '" + opt->dtype + "'");
    const std::vector<std::int64_t> sizes = parse_sizes(opt->sizes, dtype);
    if (opt->ranks < 0 || opt->ranks == 1) throw InputError("--ranks: expected 0 (all GPUs) or at least 2");
    if (!opt->json.empty()) check_writable(opt->json);
    if (!opt->csv.empty()) check_writable(opt->csv);

    CommBenchResult r;
    if (sim) {
      require_single_process("bench-comm --backend sim", kNoGpuWork);
      if (opt->topology.empty())
        throw InputError("--topology: --backend sim predicts the table on a topology: give a preset name or file");
      const std::vector<std::string> known = predicted_bench_strategies();
      const std::vector<std::string> strategies =
          parse_strategies(opt->strategies.empty() ? "all" : opt->strategies, known, known, "sim");
      const Topology topo = read_topology(resolve_topology_path(opt->topology));
      const ServingEngineOptions engine = resolve_engine_options(opt->engine_options, strategies, "");
      CommBenchPrediction p;
      p.topo = &topo;
      p.ranks = opt->ranks;
      p.strategies = strategies;
      p.sizes = sizes;
      p.dtype = dtype;
      p.nccl.channels = opt->nccl_channels;
      p.nccl.algo = opt->nccl_algo;
      p.nccl.proto = opt->nccl_proto;
      p.engine = &engine;
      r = predict_comm_bench(p);
    } else {
      if (!opt->topology.empty())
        throw InputError("--topology: bench-comm measures this machine's GPUs; a topology is for --backend sim");
      CommBenchRequest q;
      q.strategies = parse_strategies(opt->strategies.empty() ? kMeasuredDefault : opt->strategies, bench_strategies(),
                                      measured_all(), "cuda");
      if (!opt->engine_options.empty())
        throw InputError("--engine-option: the engine strategies run in bench-comm --backend sim (and in run)");
      if (opt->nccl_channels != 0)
        throw InputError("--nccl-channels: for --backend sim; measuring, set NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS "
                         "in the environment");
      if (!opt->nccl_algo.empty() || !opt->nccl_proto.empty())
        throw InputError(fmt::format("{}: for --backend sim; measuring, set NCCL_ALGO / NCCL_PROTO in the environment",
                                     opt->nccl_algo.empty() ? "--nccl-proto" : "--nccl-algo"));
      q.dtype = dtype;
      q.sizes = sizes;
      q.ranks = opt->ranks;
      if (opt->iters < 1 || opt->iters > 100000) throw InputError("--iters: expected 1..100000");
      q.iters = opt->iters;
      check_timeout_flag(opt->timeout_s);
      q.timeout_s = opt->timeout_s;
      const auto g = parse_gemm(opt->gemm);
      q.gemm_m = g[0], q.gemm_n = g[1], q.gemm_k = g[2];
      r = run_comm_bench(q);
      r.strategies = q.strategies;
      r.replays = q.iters;
      r.gemm_m = q.gemm_m, r.gemm_n = q.gemm_n, r.gemm_k = q.gemm_k;
    }
    fmt::print("{}", comm_bench_table(r, opt->wide));
    std::fflush(stdout);
    write_files_atomic({{opt->json, opt->json.empty() ? "" : comm_bench_json(r).dump(2) + "\n"},
                        {opt->csv, opt->csv.empty() ? "" : comm_bench_csv(r)}});
  });
}

}  // namespace eaglesim::cli
