#include "cli/bench_comm_a2a.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/a2a_bench_prediction.hpp"
#include "comm/all_to_all.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "io/atomic_file.hpp"
#include "report/a2a_bench_printer.hpp"
#include "topology/topology.hpp"

namespace eaglesim::cli {

namespace {

// A rank's tokens in one call: a million is far past any prefill chunk an engine sends through
// DeepEP (SGLang's --chunked-prefill-size is 8192 or 16384 by default); a bigger figure is a typo.
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 20;
// Limits that only catch typos: the widest hidden size of the models we describe is 16384
// (Llama-3.1-405B), the most routed experts 384 (Kimi-K2).
constexpr std::int64_t kMaxHidden = 65536, kMaxExperts = 65536, kMaxTopK = 64;

const char* const kA2aFlags[] = {"--tokens", "--hidden", "--topk", "--experts", "--topk-groups", "--dispatch-dtype"};
// The allreduce bench's own flags, which mean nothing to the all-to-all bench.
const char* const kAllreduceFlags[] = {"--strategy",      "--sizes",      "--dtype",      "--wide",
                                       "--nccl-channels", "--nccl-algo", "--nccl-proto", "--engine-option",
                                       "--iters",         "--gemm",      "--timeout"};

std::int64_t parse_count(const std::string& item) {
  const bool digits = !item.empty() && item.size() <= 9 &&
                      std::all_of(item.begin(), item.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; });
  const std::int64_t n = digits ? std::stoll(item) : -1;
  if (n < 1 || n > kMaxTokens)
    throw InputError(fmt::format("--tokens: expected a rank's token counts in [1, {}], got '{}'", kMaxTokens, item));
  return n;
}

// Comma-separated counts; A:B doubles from A up to B inclusive.
std::vector<std::int64_t> parse_tokens(const std::string& spec) {
  std::vector<std::int64_t> out;
  for (const std::string& item : split_comma_list("--tokens", spec)) {
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) {
      out.push_back(parse_count(item));
      continue;
    }
    const std::int64_t lo = parse_count(item.substr(0, colon)), hi = parse_count(item.substr(colon + 1));
    if (hi < lo) throw InputError("--tokens: range '" + item + "' ends below its start");
    for (std::int64_t n = lo; n <= hi; n *= 2) out.push_back(n);
  }
  return out;
}

std::vector<std::string> parse_a2a_strategies(const std::string& list) {
  const std::vector<std::string> known = all_to_all_bench_names();
  std::vector<std::string> out;
  auto add = [&out](const std::string& s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (const std::string& name : split_comma_list("--a2a", list)) {
    if (name == "all") {
      for (const auto& s : known) add(s);
    } else if (std::find(known.begin(), known.end(), name) != known.end()) {
      add(name);
    } else {
      throw InputError(fmt::format("--a2a: unknown all-to-all strategy '{}' (known for bench-comm: {}, all{})", name,
                                   fmt::join(known, ", "),
                                   is_all_to_all_strategy(name) ? "; ideal is free, so it has no time to print" : ""));
    }
  }
  return out;
}

void check_range(const char* flag, std::int64_t v, std::int64_t lo, std::int64_t hi, const char* what) {
  if (v < lo || v > hi) throw InputError(fmt::format("{}: expected {} in [{}, {}], got {}", flag, what, lo, hi, v));
}

}  // namespace

void add_a2a_bench_flags(CLI::App* cmd, A2aBenchFlags& f) {
  cmd->add_option("--a2a", f.strategies,
                  fmt::format("sim: price expert parallelism's MoE dispatch and combine instead of allreduces, by these "
                              "all-to-all strategies (comma list, or all: {})",
                              fmt::join(all_to_all_bench_names(), ", ")));
  cmd->add_option("--tokens", f.tokens, "--a2a: a rank's tokens per call, list and/or ranges A:B (doubling)")
      ->capture_default_str();
  cmd->add_option("--hidden", f.hidden, "--a2a: hidden size (DeepSeek-V3's by default)")->capture_default_str();
  cmd->add_option("--topk", f.top_k, "--a2a: routed experts per token")->capture_default_str();
  cmd->add_option("--experts", f.experts, "--a2a: routed experts in all, spread evenly over the ranks")
      ->capture_default_str();
  cmd->add_option("--topk-groups", f.topk_groups,
                  "--a2a: group-limited routing with one group a node: a token's experts lie in at most this many "
                  "nodes (DeepEP's tests: min(nodes, 4)); 0: any node")
      ->capture_default_str();
  cmd->add_option("--dispatch-dtype", f.dispatch_dtype, "--a2a: the dispatch's payload, fp8 (with its scales) or bf16")
      ->capture_default_str();
}

namespace {

void refuse_a2a_flags_without_a2a(const CLI::App& cmd) {
  for (const char* flag : kA2aFlags)
    if (cmd.count(flag) > 0) throw InputError(fmt::format("{}: for the all-to-all bench (--a2a)", flag));
}

void refuse_allreduce_flags_with_a2a(const CLI::App& cmd, const std::string& backend) {
  if (cmd.count("--backend") > 0 && backend != "sim")
    throw InputError("--a2a: the all-to-alls are priced on a topology (--backend sim); the GPU bench measures allreduces");
  for (const char* flag : kAllreduceFlags)
    if (cmd.count(flag) > 0)
      throw InputError(fmt::format("{}: for the allreduce bench; with --a2a the calls are sized by --tokens, --hidden, "
                                   "--topk and --experts",
                                   flag));
}

void run_a2a_bench(const A2aBenchFlags& f, const std::string& topology, int ranks, const std::string& json,
                   const std::string& csv) {
  if (ranks < 0 || ranks == 1) throw InputError("--ranks: expected 0 (all GPUs) or at least 2");
  require_single_process("bench-comm --backend sim --a2a", kNoGpuWork);
  const std::vector<std::string> strategies = parse_a2a_strategies(f.strategies);
  if (topology.empty())
    throw InputError("--topology: --a2a prices the all-to-alls on a topology: give a preset name or file");
  const std::vector<std::int64_t> tokens = parse_tokens(f.tokens);
  check_range("--hidden", f.hidden, 1, kMaxHidden, "a hidden size");
  check_range("--experts", f.experts, 1, kMaxExperts, "a routed expert count");
  if (f.top_k < 1 || f.top_k > std::min(kMaxTopK, f.experts))
    throw InputError(fmt::format("--topk: expected experts per token in [1, {}] (at most --experts {}), got {}",
                                 std::min(kMaxTopK, f.experts), f.experts, f.top_k));
  check_range("--topk-groups", f.topk_groups, 0, 1024, "a node count (0: any node)");
  DType dispatch{};
  if (!parse_dtype(f.dispatch_dtype, dispatch) || (dispatch != DType::fp8 && dispatch != DType::bf16))
    throw InputError("--dispatch-dtype: expected fp8 or bf16, got '" + f.dispatch_dtype + "'");
  const Topology topo = read_topology(resolve_topology_path(topology));
  if (!json.empty()) check_writable(json);
  if (!csv.empty()) check_writable(csv);

  AllToAllBenchPrediction p;
  p.topo = &topo;
  p.ranks = ranks;
  p.strategies = strategies;
  p.tokens = tokens;
  p.hidden = f.hidden;
  p.top_k = static_cast<int>(f.top_k);
  p.experts = f.experts;
  p.max_nodes_per_token = static_cast<int>(f.topk_groups);
  p.dispatch_dtype = dispatch;
  const AllToAllBenchResult r = predict_all_to_all_bench(p);  // refuses --ranks the topology cannot place
  // Every rank holds as many experts (DeepEP asserts it); checked once the rank count is known.
  if (f.experts % r.ranks != 0)
    throw InputError(fmt::format("--experts: expected a multiple of the {} ranks (each holds as many experts), got {}",
                                 r.ranks, f.experts));
  fmt::print("{}", a2a_bench_table(r));
  std::fflush(stdout);
  write_files_atomic({{json, json.empty() ? "" : a2a_bench_json(r).dump(2) + "\n"},
                      {csv, csv.empty() ? "" : a2a_bench_csv(r)}});
}

}  // namespace

bool run_a2a_bench_if_asked(const CLI::App& cmd, const A2aBenchFlags& f, const BenchCommShared& shared) {
  if (cmd.count("--a2a") == 0) {
    refuse_a2a_flags_without_a2a(cmd);
    return false;
  }
  refuse_allreduce_flags_with_a2a(cmd, shared.backend);
  run_a2a_bench(f, shared.topology, shared.ranks, shared.json, shared.csv);
  return true;
}

}  // namespace eaglesim::cli
