#include "cuda/measure/calibrate_comm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "core/median.hpp"
#include "cuda/comm/allreduce_self_check.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/cuda_graph.hpp"
#include "cuda/runtime/graph_timer.hpp"
#include "cuda/runtime/host_barrier.hpp"
#include "cuda/measure/l2_rotation.hpp"
#include "cuda/comm/rank_comm.hpp"
#include "cuda/replay/rank_program.hpp"
#include "calibration/calibration_cases.hpp"
#include "calibration/layer_chain.hpp"
#include "cuda/runtime/stream.hpp"

namespace eaglesim::cuda {

namespace {

// At most this many rotating copies of a context op (l2_rotation.hpp).
constexpr int kMaxCopies = 64;

int calls_for(std::int64_t bytes) { return bytes <= (1 << 20) ? 32 : bytes <= (16 << 20) ? 16 : 8; }
int round_up(int v, int multiple) { return (v + multiple - 1) / multiple * multiple; }

int copies_for(const Op& op, double l2_bytes) { return rotation_copies(op, l2_bytes, 1, kMaxCopies); }

// One measurement: the chain `with` (op indices into the layout's step, enqueued in order)
// against the chain `without`, per `divisor` (calls or layer copies). Cases with the same
// `baseline` share one `without` chain. `must_absorb`: ops the program has to have fused into an
// allreduce (fused strategy), else the case is not measured.
struct ChainCase {
  std::vector<std::size_t> with, without;
  int divisor = 1;
  int baseline = 0;
  std::vector<std::size_t> must_absorb;
  // false: per rank (with - without), the slowest rank's (both chains wait at the allreduces
  // alike); true: slowest rank's `with` minus slowest rank's `without`, for a baseline whose
  // ranks run unsynchronised (a step's time is its slowest rank's).
  bool step_difference = false;
};

// Per call k: before[k % |before|], the allreduce (and what it absorbs), after[k % |after|].
ChainCase triple_chain(const std::vector<std::size_t>& before, std::size_t ar, const std::vector<std::size_t>& after,
                       int calls, int baseline, bool fused) {
  ChainCase cs;
  for (int k = 0; k < calls; ++k) {
    const auto ku = static_cast<std::size_t>(k);
    if (!before.empty()) {
      cs.with.push_back(before[ku % before.size()]);
      cs.without.push_back(before[ku % before.size()]);
    }
    cs.with.push_back(ar);
    if (!after.empty()) {
      cs.with.push_back(after[ku % after.size()]);
      cs.without.push_back(after[ku % after.size()]);
    }
  }
  cs.divisor = calls;
  cs.baseline = baseline;
  if (fused) cs.must_absorb = {ar + 1, ar + 2};
  return cs;
}

struct Layout {
  Step step;
  std::vector<ChainCase> cases;
};

// Appends `copies` copies of `op` to the step; returns their indices.
std::vector<std::size_t> add_copies(Step& step, const Op& op, int copies) {
  std::vector<std::size_t> idx;
  for (int c = 0; c < copies; ++c) {
    Op o = op;
    o.layer = static_cast<int>(step.ops.size());
    idx.push_back(step.ops.size());
    step.ops.push_back(o);
  }
  return idx;
}

// Appends the allreduce of `a` (and, for fused, the residual add + RMSNorm it absorbs).
std::size_t add_allreduce(Step& step, const AllreduceCase& a) {
  Op ar;
  ar.kind = OpKind::allreduce;
  ar.name = "calibrate_allreduce";
  ar.bytes = a.bytes;
  ar.dtype = a.dtype;
  ar.layer = static_cast<int>(step.ops.size());
  const std::size_t at = step.ops.size();
  step.ops.push_back(ar);
  if (fuses_residual_norm(a.strategy)) append_residual_norm(step, a.tokens, a.hidden, ar.layer);
  return at;
}

struct LayoutResult {
  std::vector<double> us;           // per case; NaN: a fused case the program could not fuse, or not run
  std::vector<double> baseline_us;  // per case: its baseline chain, the slowest rank's (NaN: not run)
  bool ran = false;                 // false: the strategy cannot run on this machine (noted)
};

// The communicators of `strategy` on q.ranks GPUs; null (with a note) when this machine cannot
// run it.
std::unique_ptr<CommGroup> open_comm_group(const CalibrationRequest& q, const std::string& strategy,
                                           std::int64_t max_bytes, std::vector<std::string>& notes) {
  CommGroupConfig cc;
  cc.strategy = strategy;
  cc.ranks = q.ranks;
  cc.devices.resize(static_cast<std::size_t>(q.ranks));
  std::iota(cc.devices.begin(), cc.devices.end(), 0);
  cc.timeout_s = q.timeout_s;
  if (!is_nccl(strategy)) cc.max_bytes = static_cast<std::size_t>(max_bytes) + 256;
  try {
    return create_comm_group(cc);
  } catch (const std::exception& e) {
    // A strategy this machine cannot run (world size, no P2P, not built): no table for it.
    notes.push_back(fmt::format("{}: not measured ({})", strategy, e.what()));
    if (q.progress) q.progress(fmt::format("allreduce {}: skipped: {}", strategy, e.what()));
    return nullptr;
  }
}

// The graphs of a layout: per case its `with` chain (graph c), then per baseline id its
// `without` chain.
struct LayoutGraphs {
  std::size_t n_cases = 0;
  std::map<int, std::size_t> baseline_graph;  // baseline id -> its graph
  std::size_t n_graphs = 0;
};

LayoutGraphs layout_graphs(const Layout& layout) {
  LayoutGraphs lg;
  lg.n_cases = layout.cases.size();
  for (const ChainCase& cs : layout.cases) lg.baseline_graph.emplace(cs.baseline, 0);
  {
    std::size_t g = lg.n_cases;
    for (auto& [id, graph] : lg.baseline_graph) graph = g++;
  }
  lg.n_graphs = lg.n_cases + lg.baseline_graph.size();
  return lg;
}

// What the rank threads of one layout's measurement share.
struct LayoutRun {
  LayoutRun(const CalibrationRequest& q_, const Layout& layout_, const LayoutGraphs& lg_, CommGroup& group_,
            bool fuse_add_norm_, int warmup_, int iters_)
      : q(q_),
        layout(layout_),
        lg(lg_),
        group(group_),
        fuse_add_norm(fuse_add_norm_),
        warmup(warmup_),
        iters(iters_),
        barrier(q_.ranks),
        samples(q_.ranks, std::vector<std::vector<double>>(lg_.n_graphs)),
        fused_ok(q_.ranks, std::vector<bool>(lg_.n_cases, true)) {}

  const CalibrationRequest& q;
  const Layout& layout;
  const LayoutGraphs& lg;
  CommGroup& group;
  const bool fuse_add_norm;
  const int warmup, iters;
  HostBarrier barrier;
  std::mutex mu;
  std::exception_ptr first_error;
  // [rank][graph][round]: µs of each timed replay.
  std::vector<std::vector<std::vector<double>>> samples;
  std::vector<std::vector<bool>> fused_ok;
  std::size_t checked_shapes = 0;  // rank 0's self-check

  void sync() {
    if (!barrier.wait()) throw DeviceError("calibrate: another rank failed");
  }
  const char* what(std::size_t g) const { return g < lg.n_cases ? "an allreduce chain" : "a baseline chain"; }
};

// Runs rank r's self-check of the collectives about to be timed (all ranks together).
void self_check_rank(LayoutRun& run, int r, AllreduceSelfCheck& check, GraphTimer& timer, cudaStream_t stream) {
  if (!check.empty()) {
    run.sync();
    timer.launch_eager([&check](cudaStream_t s) { check.enqueue(s); }, stream);
    timer.finish("the allreduce self-check");
    (void)check.verify();
    if (r == 0) run.checked_shapes = check.checked_shapes();
  }
}

// Rank r's graph of every chain (and whether the program fused what each case must absorb).
std::vector<CudaGraph> capture_rank_graphs(LayoutRun& run, int r, RankProgram& program, GraphTimer& timer,
                                           cudaStream_t stream) {
  std::vector<const std::vector<std::size_t>*> chain_of(run.lg.n_graphs);
  for (std::size_t c = 0; c < run.lg.n_cases; ++c) {
    const ChainCase& cs = run.layout.cases[c];
    for (std::size_t a : cs.must_absorb)
      if (a >= program.size() || !program.absorbed(a)) run.fused_ok[r][c] = false;
    chain_of[c] = &cs.with;
    chain_of[run.lg.baseline_graph.at(cs.baseline)] = &cs.without;
  }
  std::vector<CudaGraph> graphs;
  for (std::size_t g = 0; g < run.lg.n_graphs; ++g) {
    const auto body = [&program, ops = chain_of[g]](cudaStream_t s) {
      for (std::size_t i : *ops) program.enqueue(i, s);
    };
    // One eager run first (all ranks together): NCCL connects lazily, per algorithm and
    // protocol, and cannot do that inside a capture.
    run.sync();
    timer.launch_eager(body, stream);
    timer.finish(run.what(g));
    // Capture is per rank; NCCL captures need every rank to capture the same calls.
    graphs.push_back(CudaGraph::capture(stream, body));
  }
  return graphs;
}

// Rounds of every graph once, all ranks together: a slow drift of the GPUs' speed over
// the seconds a layout takes (clocks, temperature) reaches every graph alike, instead of
// the graphs measured last, and each round's with - without difference cancels it.
void time_rank_rounds(LayoutRun& run, int r, const std::vector<CudaGraph>& graphs, GraphTimer& timer,
                      cudaStream_t stream) {
  for (int round = 0; round < run.warmup + run.iters; ++round)
    for (std::size_t g = 0; g < run.lg.n_graphs; ++g) {
      run.sync();
      timer.launch(graphs[g], stream);
      const double us = timer.finish(run.what(g));
      if (round >= run.warmup) run.samples[r][g].push_back(us);
    }
}

// Rank r's thread: its program of the layout's step, checked, captured and timed.
void measure_rank(LayoutRun& run, int r) {
  try {
    EAGLESIM_CUDA_CHECK(cudaSetDevice(r));
    const Stream stream_owner;
    const cudaStream_t stream = stream_owner.get();
    ProgramOptions popts;
    popts.seed = 101 + static_cast<std::uint64_t>(r);
    popts.verify_trees = run.q.verify_trees;
    popts.fuse_add_norm = run.fuse_add_norm;
    RankProgram program(run.layout.step, r, run.group.rank(r), nullptr, popts);
    GraphTimer timer("calibrate", kChainPreRollUs, run.q.timeout_s, [&run] { run.group.abort(); });
    // The allreduces about to be timed first give the right sums (allreduce_self_check.hpp):
    // a strategy that is fast but wrong on this machine stops the calibration, no table.
    AllreduceSelfCheck check(program.collectives(), r);
    self_check_rank(run, r, check, timer, stream);
    const std::vector<CudaGraph> graphs = capture_rank_graphs(run, r, program, timer, stream);
    time_rank_rounds(run, r, graphs, timer, stream);
    run.sync();
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(run.mu);
      if (!run.first_error) run.first_error = std::current_exception();
    }
    run.barrier.abort();
    run.group.abort();
  }
}

// Case c's results from the rounds' samples: the slowest rank's median difference (or the median
// difference of the slowest ranks) per divisor, and the baseline's median of the slowest rank.
void summarise_case(const LayoutRun& run, std::size_t c, LayoutResult& result) {
  const int ranks = run.q.ranks;
  const auto& samples = run.samples;
  // Per round: the slowest rank's time of graph g.
  auto slowest = [&](std::size_t g, std::size_t round) {
    double worst = -std::numeric_limits<double>::infinity();
    for (int r = 0; r < ranks; ++r) worst = std::max(worst, samples[r][g][round]);
    return worst;
  };
  const ChainCase& cs = run.layout.cases[c];
  const std::size_t base = run.lg.baseline_graph.at(cs.baseline);
  bool ok = true;
  for (int r = 0; r < ranks; ++r) ok = ok && run.fused_ok[r][c];
  std::vector<double> step_diff, base_us;
  for (std::size_t k = 0; k < static_cast<std::size_t>(run.iters); ++k) {
    step_diff.push_back(slowest(c, k) - slowest(base, k));
    base_us.push_back(slowest(base, k));
  }
  double worst = -std::numeric_limits<double>::infinity();
  for (int r = 0; r < ranks; ++r) {
    std::vector<double> diff;
    for (std::size_t k = 0; k < static_cast<std::size_t>(run.iters); ++k)
      diff.push_back(samples[r][c][k] - samples[r][base][k]);
    worst = std::max(worst, median(diff));
  }
  if (ok) result.us[c] = (cs.step_difference ? median(step_diff) : worst) / cs.divisor;
  result.baseline_us[c] = median(base_us);
}

// Measures every case of `layout` with `strategy` on q.ranks GPUs: per case the slowest rank's
// (chain with the allreduce - baseline chain) / divisor (ChainCase::step_difference: the
// difference of the slowest ranks), as the median over rounds of that round's difference.
// Every graph is replayed once per round, replay_factor x (q.warmup + q.iters) rounds.
// fuse_add_norm: a residual add and the RMSNorm right after it in the layout's step run as one
// kernel (whole decoder layers, as the replay runs them); the chains of single ops in context
// keep every op its own kernel.
LayoutResult measure_layout(const CalibrationRequest& q, const std::string& strategy, std::int64_t max_bytes,
                            const Layout& layout, std::vector<std::string>& notes, bool fuse_add_norm,
                            int replay_factor = 1) {
  const int warmup = q.warmup * replay_factor, iters = q.iters * replay_factor;
  const std::size_t n_cases = layout.cases.size();
  LayoutResult result;
  result.us.assign(n_cases, std::numeric_limits<double>::quiet_NaN());
  result.baseline_us.assign(n_cases, std::numeric_limits<double>::quiet_NaN());
  const std::unique_ptr<CommGroup> group = open_comm_group(q, strategy, max_bytes, notes);
  if (!group) return result;

  const LayoutGraphs lg = layout_graphs(layout);
  LayoutRun run(q, layout, lg, *group, fuse_add_norm, warmup, iters);
  std::vector<std::thread> threads;
  for (int r = 0; r < q.ranks; ++r) threads.emplace_back([&run, r] { measure_rank(run, r); });
  for (auto& t : threads) t.join();
  if (run.first_error) std::rethrow_exception(run.first_error);
  if (run.checked_shapes > 0)
    notes.push_back(fmt::format("{} ({}): self-check of {} collective shape(s) on {} ranks matched the host reference "
                                "before timing",
                                strategy, layout.step.name, run.checked_shapes, q.ranks));

  for (std::size_t c = 0; c < n_cases; ++c) summarise_case(run, c, result);
  result.ran = true;
  return result;
}

// Layer chains are few and short: three times the replays of the other chains.
constexpr int kLayerReplayFactor = 3;

double l2_bytes_of_gpu0() {
  cudaDeviceProp prop{};
  EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return static_cast<double>(prop.l2CacheSize);
}

// Case indices of `n` items grouped by strategy, strategies in first-seen order.
template <typename StrategyOf>
std::vector<std::pair<std::string, std::vector<std::size_t>>> by_strategy(std::size_t n, StrategyOf strategy_of) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> out;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& s = strategy_of(i);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == s; });
    if (it == out.end()) it = out.insert(out.end(), {s, {}});
    it->second.push_back(i);
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::vector<double> calibrate_allreduce(const CalibrationRequest& q, std::vector<std::string>& notes) {
  std::vector<double> result(q.allreduce.size(), std::numeric_limits<double>::quiet_NaN());
  const double l2 = l2_bytes_of_gpu0();
  for (const auto& [strategy, cases] :
       by_strategy(q.allreduce.size(), [&](std::size_t i) -> const std::string& { return q.allreduce[i].strategy; })) {
    const auto t_start = std::chrono::steady_clock::now();
    Layout layout;
    layout.step.name = "calibrate_allreduce";
    Op ctx = q.context_gemm;
    const std::vector<std::size_t> before = add_copies(layout.step, ctx, copies_for(ctx, l2));
    std::int64_t max_bytes = 0;
    for (std::size_t ci : cases) {
      const AllreduceCase& a = q.allreduce[ci];
      max_bytes = std::max(max_bytes, a.bytes);
      const std::size_t ar = add_allreduce(layout.step, a);
      const int calls = round_up(calls_for(a.bytes), static_cast<int>(before.size()));
      // One context-GEMM chain per chain length.
      layout.cases.push_back(triple_chain(before, ar, {}, calls, calls, fuses_residual_norm(a.strategy)));
    }
    const LayoutResult measured = measure_layout(q, strategy, max_bytes, layout, notes, false);
    if (!measured.ran) continue;
    int unfused = 0;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      result[cases[c]] = measured.us[c];
      if (std::isnan(measured.us[c])) ++unfused;
    }
    if (unfused > 0)
      notes.push_back(fmt::format("{}: {} sizes could not run fused (left out of the table)", strategy, unfused));
    if (q.progress)
      q.progress(fmt::format("allreduce {}: {} sizes in context on {} GPUs ({:.1f} s)", strategy, cases.size(),
                             q.ranks, seconds_since(t_start)));
  }
  return result;
}

std::vector<double> calibrate_allreduce_contexts(const CalibrationRequest& q, std::vector<std::string>& notes) {
  std::vector<double> result(q.allreduce_contexts.size(), std::numeric_limits<double>::quiet_NaN());
  const double l2 = l2_bytes_of_gpu0();
  for (const auto& [strategy, cases] :
       by_strategy(q.allreduce_contexts.size(),
                   [&](std::size_t i) -> const std::string& { return q.allreduce_contexts[i].allreduce.strategy; })) {
    const auto t_start = std::chrono::steady_clock::now();
    Layout layout;
    layout.step.name = "calibrate_allreduce_context";
    std::int64_t max_bytes = 0;
    for (std::size_t ci : cases) {
      const AllreduceContextCase& cc = q.allreduce_contexts[ci];
      max_bytes = std::max(max_bytes, cc.allreduce.bytes);
      const std::vector<std::size_t> before = add_copies(layout.step, cc.before, copies_for(cc.before, l2));
      const std::size_t ar = add_allreduce(layout.step, cc.allreduce);
      const std::vector<std::size_t> after = add_copies(layout.step, cc.after, copies_for(cc.after, l2));
      const int copies = static_cast<int>(std::max(before.size(), after.size()));
      const int calls = round_up(calls_for(cc.allreduce.bytes), copies);
      // Its own (before, after) chain.
      layout.cases.push_back(triple_chain(before, ar, after, calls, static_cast<int>(layout.cases.size()),
                                          fuses_residual_norm(cc.allreduce.strategy)));
    }
    const LayoutResult measured = measure_layout(q, strategy, max_bytes, layout, notes, false);
    if (!measured.ran) continue;
    for (std::size_t c = 0; c < cases.size(); ++c) result[cases[c]] = measured.us[c];
    if (q.progress)
      q.progress(fmt::format("allreduce {}: {} trace contexts on {} GPUs ({:.1f} s)", strategy, cases.size(), q.ranks,
                             seconds_since(t_start)));
  }
  return result;
}

AllreduceLayerTimes calibrate_allreduce_layers(const CalibrationRequest& q, std::vector<std::string>& notes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  AllreduceLayerTimes out{std::vector<double>(q.allreduce_layers.size(), nan),
                          std::vector<double>(q.allreduce_layers.size(), nan)};
  const double l2 = l2_bytes_of_gpu0();
  for (const auto& [strategy, cases] :
       by_strategy(q.allreduce_layers.size(),
                   [&](std::size_t i) -> const std::string& { return q.allreduce_layers[i].strategy; })) {
    const auto t_start = std::chrono::steady_clock::now();
    Layout layout;
    layout.step.name = "calibrate_allreduce_layer";
    std::int64_t max_bytes = 0;
    std::vector<int> copies_of;
    for (std::size_t li : cases) {
      const AllreduceLayerCase& lc = q.allreduce_layers[li];
      const int copies = layer_chain_copies(lc, l2);
      copies_of.push_back(copies);
      const LayerChain chain = layer_chain(lc, copies);
      const std::size_t at = layout.step.ops.size();
      layout.step.ops.insert(layout.step.ops.end(), chain.ops.begin(), chain.ops.end());
      // Two cases per layer: the chain once over its copies and twice over them.
      const LayerChain twice = repeated(chain, static_cast<std::size_t>(copies) * lc.layer_size);
      for (const LayerChain* ch : {&chain, &twice}) {
        ChainCase cs;
        for (std::size_t j : ch->with) cs.with.push_back(at + j);
        for (std::size_t j : ch->without) cs.without.push_back(at + j);
        for (std::size_t j : ch->absorbed) cs.must_absorb.push_back(at + j);  // fused only
        cs.divisor = 1;
        cs.baseline = static_cast<int>(layout.cases.size());
        cs.step_difference = true;
        layout.cases.push_back(cs);
      }
      for (const Op& op : lc.ops)
        if (op.is_comm()) max_bytes = std::max(max_bytes, op.bytes);
    }
    const LayoutResult measured =
        measure_layout(q, strategy, max_bytes, layout, notes, q.fuse_add_norm, kLayerReplayFactor);
    if (!measured.ran) continue;
    std::string detail;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      // What the allreduces add per copy between the two lengths: the once-per-chain part cancels.
      const double once = measured.us[2 * c], twice = measured.us[2 * c + 1];
      out.added_us[cases[c]] = (twice - once) / copies_of[c];
      out.baseline_us[cases[c]] = (measured.baseline_us[2 * c + 1] - measured.baseline_us[2 * c]) / copies_of[c];
      detail += fmt::format("{}{} {:.2f} (one length: {:.2f}; the layer without them {:.2f})", c ? "; " : "",
                            q.allreduce_layers[cases[c]].where, out.added_us[cases[c]], once / copies_of[c],
                            out.baseline_us[cases[c]]);
    }
    if (q.progress)
      q.progress(fmt::format("allreduce {}: {} decoder layers on {} GPUs ({:.1f} s): us per layer {}", strategy,
                             cases.size(), q.ranks, seconds_since(t_start), detail));
  }
  return out;
}

}  // namespace eaglesim::cuda
