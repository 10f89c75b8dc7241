#include "cuda/replay/step_replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "core/median.hpp"
#include "domain/kind_attribution.hpp"
#include "domain/kind_marginals.hpp"
#include "cuda/comm/allreduce_self_check.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/cuda_graph.hpp"
#include "cuda/runtime/graph_timer.hpp"
#include "cuda/runtime/host_barrier.hpp"
#include "cuda/runtime/mpi_world.hpp"
#include "cuda/comm/nccl_comm_group.hpp"
#include "cuda/comm/rank_comm.hpp"
#include "cuda/replay/rank_program.hpp"
#include "cuda/replay/step_graph.hpp"
#include "cuda/runtime/stream.hpp"
#include "cuda/runtime/watchdog.hpp"

namespace eaglesim::cuda {

namespace {

// What one rank measured.
struct RankOutcome {
  std::vector<double> step_us;                // one per timed replay
  std::vector<double> op_us;                  // per op: median over attribution replays
  std::vector<double> span_start, span_end;   // per op, last attribution replay, us from step start
  std::vector<std::string> notes, details;
  std::vector<bool> absorbed;
  std::vector<OpKind> kinds;                  // per op: the kind its time is reported under
  bool attribution_in_graph = true;
  // Kind marginals (RunOptions::kind_marginals), one entry per round: the step graph's time, and
  // per kind (index kind * rounds + round) the time of the graph without that kind's ops; NaN
  // for kinds without a graph. Empty when not asked for.
  std::vector<double> marginal_full, marginal_without;
};

// The events between ops: ev[0] before the first op, ev[i + 1] after op i.
class OpEvents {
 public:
  explicit OpEvents(std::size_t ops) : events_(ops + 1) {}
  cudaEvent_t operator[](std::size_t i) const { return events_[i].get(); }
  std::vector<cudaEvent_t> all() const {
    std::vector<cudaEvent_t> v;
    for (const Event& e : events_) v.push_back(e.get());
    return v;
  }

 private:
  std::vector<Event> events_;
};

float elapsed_us(cudaEvent_t a, cudaEvent_t b) { return elapsed_ms(a, b) * 1000.f; }

// The communicator groups of a replay: the strategy's, or under an engine strategy one per
// strategy its paths run as (ReplayConfig::op_strategy), and NCCL for what is too large for them.
struct CommGroups {
  std::map<std::string, std::unique_ptr<CommGroup>> by_strategy;
  CommGroup* fallback = nullptr;  // an NCCL group (one of by_strategy, or `extra_nccl`), or null
  std::unique_ptr<CommGroup> extra_nccl;

  // The rank's communicators for every op of `step`.
  AllreduceComms for_rank(const Step& step, const ReplayConfig& config, int local) const {
    AllreduceComms c;
    c.fallback = fallback ? &fallback->rank(local) : nullptr;
    c.per_op.assign(step.ops.size(), nullptr);
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      if (!step.ops[i].is_comm()) continue;
      const std::string& s = config.op_strategy.empty() ? config.strategy : config.op_strategy[i];
      c.per_op[i] = &by_strategy.at(s)->rank(local);
    }
    return c;
  }
  void abort_all() {
    for (auto& [name, g] : by_strategy) g->abort();
    if (extra_nccl) extra_nccl->abort();
  }
};

// Everything the rank threads share.
struct Shared {
  const Step& step;
  const ReplayConfig& config;
  const CommGroups& groups;
  HostBarrier barrier;
  Watchdog& watchdog;
  int world_rank0;  // global rank of local rank 0
  std::mutex error_mutex;
  std::exception_ptr first_error;
  Shared(const Step& s, const ReplayConfig& c, const CommGroups& g, Watchdog& w, int r0)
      : step(s), config(c), groups(g), barrier(static_cast<int>(c.devices.size())), watchdog(w), world_rank0(r0) {}
};

class RankRunner {
 public:
  RankRunner(Shared& sh, int local) : sh_(sh), local_(local), rank_(sh.world_rank0 + local) {}

  RankOutcome run() {
    const int device = sh_.config.devices[local_];
    EAGLESIM_CUDA_CHECK(cudaSetDevice(device));
    const RunOptions& opts = sh_.config.opts;
    const Stream stream_owner;
    const cudaStream_t stream = stream_owner.get();
    ProgramOptions popts;
    popts.seed = 1 + static_cast<std::uint64_t>(rank_);
    popts.skip_allreduces = rank_ == sh_.config.skip_allreduces_rank;
    popts.recorded_compute = sh_.config.recorded_compute;
    popts.fuse_add_norm = opts.fuse_add_norm;
    popts.batch = sh_.config.batch;
    popts.speculative = sh_.config.speculative;
    popts.host_sync_timeout_s = opts.timeout_s;
    RankProgram program(sh_.step, device, sh_.groups.for_rank(sh_.step, sh_.config, local_), popts);
    const std::size_t n = program.size();
    const OpEvents ev(n);
    GraphTimer timer("replay", kStepPreRollUs, opts.timeout_s);  // the step graph's replays
    const Event attribution_done;
    RankOutcome out;
    out.notes = program.notes();
    for (std::size_t i = 0; i < n; ++i) {
      out.details.push_back(program.detail(i));
      out.absorbed.push_back(program.absorbed(i));
      out.kinds.push_back(program.reported_kind(i));
    }
    std::vector<WatchedOp> per_op;
    for (std::size_t i = 0; i < n; ++i) per_op.push_back({ev[i + 1], program.label(i)});
    const std::vector<WatchedOp> whole_step{{timer.stop_event(), fmt::format("the step graph replay ({} ops)", n)}};

    sync("setup");
    // 0. Every collective shape of the step once against its reference, before anything is
    // timed (not the `ideal` ones, which move nothing, nor under fault injection, where a rank
    // deliberately never joins).
    if (sh_.config.skip_allreduces_rank < 0) {
      AllreduceSelfCheck check(program.collectives(), rank_);
      if (!check.empty()) {
        sh_.watchdog.arm(rank_, device, {{ev[0], "the allreduce self-check"}}, "the allreduce self-check", 1);
        check.enqueue(stream);
        EAGLESIM_CUDA_CHECK(cudaEventRecord(ev[0], stream));
        sh_.watchdog.wait(rank_, ev[0]);
        out.notes.push_back(check.verify());
        sync("the allreduce self-check");
      }
    }

    // 1. Eager pass: the step runs at all, and a stuck allreduce is named.
    sh_.watchdog.arm(rank_, device, per_op, "the first (eager) pass", 0);
    enqueue_with_events(program, ev, stream);
    sh_.watchdog.wait(rank_, ev[n]);

    // 2. Capture: the step graph, then the attribution graph (external event nodes between ops).
    // A host_sync op splits the step into graphs, the host's wait between them (step_graph.hpp).
    const StepGraph step_graph = *StepGraph::capture(program, stream);
    if (step_graph.graphs() > 1)
      out.notes.push_back(fmt::format("host synchronisation: the step ran as {} parts (CUDA graphs and the host's "
                                      "waits between them), timed from the first graph's start to the last one's "
                                      "end: a host wait costs the copy, the host's poll and the next launch",
                                      step_graph.graphs()));
    const std::optional<StepGraph> attr_graph = capture_attribution(program, ev, stream);
    out.attribution_in_graph = attr_graph.has_value();

    // 3. Warm-up and timed replays of the step graph, all ranks released together.
    for (int w = 0; w < opts.warmup; ++w) replay(step_graph, timer, stream, whole_step, "warm-up replays");
    for (int it = 0; it < opts.iters; ++it) {
      replay(step_graph, timer, stream, whole_step, "timed replays");
      out.step_us.push_back(timer.elapsed_ms() * 1000.f);
    }

    // 4. Attribution: a span per op from the events between ops.
    const int attr_iters = std::max(3, std::min(opts.iters, 10));
    std::vector<std::vector<double>> op_samples(n);
    for (int a = 0; a < attr_iters; ++a) {
      sync("attribution");
      sh_.watchdog.arm(rank_, device, per_op, "attribution replays", out.attribution_in_graph ? n : 0);
      if (attr_graph) attr_graph->launch(stream);
      else enqueue_with_events(program, ev, stream);
      EAGLESIM_CUDA_CHECK(cudaEventRecord(attribution_done.get(), stream));
      sh_.watchdog.wait(rank_, attribution_done.get());
      out.span_start.assign(n, 0);
      out.span_end.assign(n, 0);
      for (std::size_t i = 0; i < n; ++i) {
        out.span_start[i] = elapsed_us(ev[0], ev[i]);
        out.span_end[i] = elapsed_us(ev[0], ev[i + 1]);
        op_samples[i].push_back(out.span_end[i] - out.span_start[i]);
      }
    }
    for (std::size_t i = 0; i < n; ++i) out.op_us.push_back(median(op_samples[i]));

    // 5. Kind marginals: one graph per compute kind without that kind's ops, replayed in rounds
    // with the step graph (each graph once per round, all ranks released together), so that a
    // drift of the GPU cancels in each round's difference.
    if (opts.kind_marginals) measure_kind_marginals(program, step_graph, timer, stream, whole_step, attr_iters, out);
    sync("the end of the run");
    return out;
  }

 private:
  void sync(const char* phase) {
    if (!sh_.barrier.wait()) throw DeviceError(failure_message());
    if (sh_.config.mpi) {
      auto& world = MpiWorld::get();
      if (!world.barrier(sh_.config.opts.timeout_s, [&] { return sh_.watchdog.fired(); })) {
        sh_.watchdog.fire(fmt::format("rank {}: not every process reached {} within {} s", rank_, phase,
                                      sh_.config.opts.timeout_s));
        throw DeviceError(failure_message());
      }
    }
  }

  std::string failure_message() const {
    return sh_.watchdog.fired() ? sh_.watchdog.message() : fmt::format("rank {}: another rank failed", rank_);
  }

  // Every op eagerly with an event after it (the eager pass, and attribution without its
  // graph), telling the watchdog how far the host got: a host thread blocked inside an op's
  // enqueue is named as such.
  void enqueue_with_events(const RankProgram& program, const OpEvents& ev, cudaStream_t s) {
    EAGLESIM_CUDA_CHECK(cudaEventRecord(ev[0], s));
    for (std::size_t i = 0; i < program.size(); ++i) {
      program.enqueue(i, s);
      EAGLESIM_CUDA_CHECK(cudaEventRecord(ev[i + 1], s));
      sh_.watchdog.progress(rank_, i + 1);
    }
  }

  void measure_kind_marginals(const RankProgram& program, const StepGraph& step_graph, GraphTimer& timer,
                              cudaStream_t s, const std::vector<WatchedOp>& watch, int rounds, RankOutcome& out) {
    const std::size_t n = program.size(), R = static_cast<std::size_t>(rounds);
    std::vector<bool> absorbed(n);
    for (std::size_t i = 0; i < n; ++i) absorbed[i] = program.absorbed(i);
    std::vector<std::pair<OpKind, StepGraph>> graphs;
    for (OpKind kind : marginal_kinds(out.kinds, absorbed))
      graphs.emplace_back(kind, *StepGraph::capture(program, s, {}, ops_left_out(out.kinds, absorbed, kind)));
    for (const auto& [kind, g] : graphs) replay(g, timer, s, watch, "kind marginal warm-up");  // first launch uploads
    out.marginal_full.assign(R, 0.0);
    out.marginal_without.assign(static_cast<std::size_t>(kOpKindCount) * R, std::numeric_limits<double>::quiet_NaN());
    for (std::size_t r = 0; r < R; ++r) {
      replay(step_graph, timer, s, watch, "kind marginal replays");
      out.marginal_full[r] = timer.elapsed_ms() * 1000.0;
      for (const auto& [kind, g] : graphs) {
        replay(g, timer, s, watch, "kind marginal replays");
        out.marginal_without[static_cast<std::size_t>(kind) * R + r] = timer.elapsed_ms() * 1000.0;
      }
    }
  }

  // One replay of the step graph, every rank released together, timed by `timer` (a GPU
  // pre-roll hides the host's submission of the graph) and watched by the watchdog.
  void replay(const StepGraph& g, GraphTimer& timer, cudaStream_t s, const std::vector<WatchedOp>& watch,
              const char* phase) {
    sync(phase);
    timer.launch_body([&g](cudaStream_t st) { g.launch(st); }, s);
    sh_.watchdog.arm(rank_, sh_.config.devices[local_], watch, phase, watch.size());
    sh_.watchdog.wait(rank_, timer.stop_event());
  }

  // The attribution graph (external event nodes between ops); nothing when it cannot be
  // captured: attribution then falls back to eager launches with events (the spans then include
  // launch gaps).
  std::optional<StepGraph> capture_attribution(const RankProgram& program, const OpEvents& ev, cudaStream_t s) {
    std::optional<StepGraph> graph = StepGraph::capture(program, s, ev.all());
    if (!graph) {
      (void)cudaGetLastError();  // clear the sticky-free error of the failed capture
      spdlog::info("rank {}: attribution graph capture failed, using eager attribution", rank_);
    }
    return graph;
  }

  Shared& sh_;
  int local_;
  int rank_;
};

std::vector<double> pack(const RankOutcome& o) {
  std::vector<double> v = o.step_us;
  v.insert(v.end(), o.op_us.begin(), o.op_us.end());
  v.insert(v.end(), o.span_start.begin(), o.span_start.end());
  v.insert(v.end(), o.span_end.begin(), o.span_end.end());
  v.insert(v.end(), o.marginal_full.begin(), o.marginal_full.end());
  v.insert(v.end(), o.marginal_without.begin(), o.marginal_without.end());
  return v;
}

// `rounds`: the kind-marginal rounds (0 when not measured), the same on every rank.
RankOutcome unpack(const double* p, std::size_t iters, std::size_t n, std::size_t rounds, const RankOutcome& local) {
  RankOutcome o = local;  // notes/details/absorbed/kinds are the same on every rank
  o.step_us.assign(p, p + iters);
  o.op_us.assign(p + iters, p + iters + n);
  o.span_start.assign(p + iters + n, p + iters + 2 * n);
  o.span_end.assign(p + iters + 2 * n, p + iters + 3 * n);
  const double* m = p + iters + 3 * n;
  o.marginal_full.assign(m, m + rounds);
  o.marginal_without.assign(m + rounds, m + rounds + rounds * kOpKindCount);
  return o;
}

std::size_t packed_length(std::size_t iters, std::size_t n, std::size_t rounds) {
  return iters + 3 * n + rounds * (1 + static_cast<std::size_t>(kOpKindCount));
}

// Per kind, the median over rounds of (step graph − graph without the kind), each graph's time in
// a round the slowest rank's, as the step's is.
void add_kind_marginals(const std::vector<RankOutcome>& ranks, StepResult& r) {
  const std::size_t R = ranks[0].marginal_full.size();
  if (R == 0) return;
  int measured = 0;
  for (std::size_t k = 0; k < static_cast<std::size_t>(kOpKindCount); ++k) {
    std::vector<double> diffs;
    for (std::size_t round = 0; round < R; ++round) {
      double full = 0, without = 0;
      for (const RankOutcome& o : ranks) {
        full = std::max(full, o.marginal_full[round]);
        without = std::max(without, o.marginal_without[k * R + round]);
      }
      if (std::isnan(ranks[0].marginal_without[k * R + round])) break;
      diffs.push_back(full - without);
    }
    if (diffs.empty()) continue;
    r.kind_marginal_us[k] = median(diffs);
    ++measured;
  }
  r.notes.push_back(fmt::format("kind marginals: the step graph and {} graphs each without one compute kind's ops, replayed "
                                "in {} rounds; per kind the median over rounds of the step minus the step without it",
                                measured, R));
}

StepResult assemble(const Step& step, const ReplayConfig& config, const std::vector<RankOutcome>& ranks) {
  StepResult r;
  r.step = step.name;
  const std::size_t iters = ranks[0].step_us.size(), n = step.ops.size();
  // A replay ends when its slowest rank ends: the step time of iteration i is the max over ranks.
  std::vector<double> samples(iters, 0.0);
  for (const auto& o : ranks)
    for (std::size_t i = 0; i < iters; ++i) samples[i] = std::max(samples[i], o.step_us[i]);
  r.step_us = median(samples);
  r.step_us_min = *std::min_element(samples.begin(), samples.end());
  r.step_us_max = *std::max_element(samples.begin(), samples.end());
  r.samples = static_cast<int>(iters);

  // Per-kind split on the critical rank: the one whose attributed ops take longest.
  std::size_t critical = 0;
  double critical_sum = -1;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    double sum = 0;
    for (double v : ranks[k].op_us) sum += v;
    if (sum > critical_sum) { critical_sum = sum; critical = k; }
  }
  const std::vector<double> op_us = fit_spans_to_step(ranks[critical].op_us, ranks[critical].absorbed, r.step_us);
  double fitted_sum = 0;
  const std::vector<OpKind>& kinds = ranks[critical].kinds;
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = step.ops[i];
    r.kind_us[static_cast<int>(kinds[i])] += op_us[i];
    fitted_sum += op_us[i];
    if (op.kind == OpKind::allreduce) ++r.allreduce_count;
  }
  r.critical_rank = static_cast<int>(critical);
  r.comm_us = r.kind_us[static_cast<int>(OpKind::allreduce)];
  r.compute_us = fitted_sum - r.comm_us;
  r.allreduce_mean_us = r.allreduce_count ? r.comm_us / r.allreduce_count : 0.0;

  r.timeline.step = step.name;
  r.timeline.ranks = static_cast<int>(ranks.size());
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      if (ranks[k].absorbed[i]) continue;
      const Op& op = step.ops[i];
      Span s;
      s.rank = static_cast<int>(k);
      s.op_index = static_cast<int>(i);
      s.kind = kinds[i];
      s.name = op.name;
      // A compute kernel that runs the op after it too (a fused add + RMSNorm): named after both,
      // as the simulator's span is.
      if (kinds[i] != op.kind && i + 1 < n && ranks[k].absorbed[i + 1]) s.name += "+" + step.ops[i + 1].name;
      s.layer = op.layer;
      s.start_us = ranks[k].span_start[i];
      s.end_us = ranks[k].span_end[i];
      if (op.kind == OpKind::allreduce) {
        // The fastest rank's duration approximates the transfer; the excess is waiting.
        double fastest = s.end_us - s.start_us;
        for (const auto& o : ranks) fastest = std::min(fastest, o.span_end[i] - o.span_start[i]);
        s.wait_us = (s.end_us - s.start_us) - fastest;
      }
      s.detail = op.shape_string() + "; " + ranks[k].details[i];
      r.timeline.spans.push_back(std::move(s));
    }
  }

  r.notes = ranks[0].notes;
  add_kind_marginals(ranks, r);
  if (ranks.size() > 1) {
    // Each rank's own median: a rank that is consistently slower (clocks, a slower GPU) shows here.
    std::string per_rank;
    for (std::size_t k = 0; k < ranks.size(); ++k)
      per_rank += fmt::format("{}rank {} {:.1f}", k ? ", " : "", k, median(ranks[k].step_us));
    r.notes.push_back("per-rank median step (us): " + per_rank);
  }
  r.notes.push_back(fmt::format(
      "step time: median of {} CUDA-graph replays (all {} ranks started together, launch latency hidden by a GPU pre-roll); per-kind split from a separate "
      "replay with an event between ops ({}), which sums to {:.1f} us on rank {} vs {:.1f} us for the graph step; "
      "the event nodes' overhead is taken off every op equally, so the split adds up to the step",
      iters, ranks.size(), ranks[critical].attribution_in_graph ? "in-graph event nodes" : "eager launches",
      critical_sum, critical, r.step_us));
  (void)config;
  return r;
}

}  // namespace

StepResult replay_step(const Step& step, const ReplayConfig& config) {
  const RunOptions& opts = config.opts;
  if (opts.iters < 1) throw SettingError(Setting::iters, "expected at least 1");
  if (opts.warmup < 0) throw SettingError(Setting::warmup, "expected 0 or more");
  if (!(opts.timeout_s > 0)) throw SettingError(Setting::timeout_s, "expected a positive number of seconds");
  if (config.devices.empty()) throw InputError("cuda backend: no device to run on");
  if (config.mpi && config.devices.size() != 1) throw InputError("cuda backend (MPI): one GPU per process");

  int world_rank0 = 0, world_size = static_cast<int>(config.devices.size());
  if (!config.op_strategy.empty() && config.mpi)
    throw InputError("cuda backend: per-allreduce strategies replay in one process, not under mpirun");
  if (!config.op_strategy.empty() && config.op_strategy.size() != step.ops.size())
    throw std::logic_error("replay: op_strategy does not match the step's ops");
  CommGroups groups;
  CommGroupConfig cc;
  cc.ranks = world_size;
  cc.devices = config.devices;
  cc.timeout_s = opts.timeout_s;
  cc.nccl = opts.nccl;
  std::int64_t max_ar_bytes = 0;
  for (const auto& op : step.ops)
    if (op.kind == OpKind::allreduce) max_ar_bytes = std::max(max_ar_bytes, op.bytes);
  cc.max_bytes = std::max<std::size_t>(cc.max_bytes, static_cast<std::size_t>(max_ar_bytes));
  // The strategies the step's allreduces run as, in order of first use.
  std::vector<std::string> strategies;
  if (config.op_strategy.empty()) strategies.push_back(config.strategy);
  for (const std::string& s : config.op_strategy)
    if (!s.empty() && std::find(strategies.begin(), strategies.end(), s) == strategies.end()) strategies.push_back(s);
  if (strategies.empty()) strategies.push_back(config.strategy);  // no allreduce: the group is never used

  if (config.mpi) {
    auto& world = MpiWorld::get();
    world_rank0 = world.rank();
    world_size = world.size();
    cc.ranks = 1;
    cc.strategy = config.strategy;
    if (is_nccl(config.strategy)) {
      ncclUniqueId id{};
      if (world.rank() == 0) EAGLESIM_NCCL_CHECK(ncclGetUniqueId(&id));
      world.broadcast(&id, sizeof(id), 0);
      groups.by_strategy[config.strategy] = std::make_unique<NcclCommGroup>(cc, id, world.rank(), world.size());
    } else {
      // The lower bound needs no peer; our own strategies map the peers' buffers through CUDA IPC.
      cc.processes = !is_lower_bound(config.strategy);
      groups.by_strategy[config.strategy] = create_comm_group(cc);
    }
  } else {
    bool needs_fallback = false;
    for (const std::string& s : strategies) {
      cc.strategy = s;
      auto g = create_comm_group(cc);
      if (!is_nccl(s) && static_cast<std::size_t>(max_ar_bytes) > g->rank(0).max_bytes()) needs_fallback = true;
      if (is_nccl(s)) groups.fallback = g.get();
      groups.by_strategy[s] = std::move(g);
    }
    if (needs_fallback && !groups.fallback) {
      CommGroupConfig nc = cc;
      nc.strategy = nccl_strategy();
      groups.extra_nccl = create_comm_group(nc);
      groups.fallback = groups.extra_nccl.get();
    }
  }

  NcclCommGroup* nccl_group = nullptr;
  for (auto& [name, g] : groups.by_strategy)
    if (auto* n = dynamic_cast<NcclCommGroup*>(g.get())) nccl_group = n;
  Watchdog watchdog(world_rank0 + static_cast<int>(config.devices.size()), opts.timeout_s,
                    [&groups] { groups.abort_all(); },
                    nccl_group ? std::function<std::string()>([nccl_group] { return nccl_group->async_error(); })
                               : std::function<std::string()>());
  Shared shared(step, config, groups, watchdog, world_rank0);

  const std::size_t local = config.devices.size();
  std::vector<RankOutcome> outcomes(local);
  std::vector<std::thread> threads;
  for (std::size_t li = 0; li < local; ++li) {
    threads.emplace_back([&, li] {
      try {
        outcomes[li] = RankRunner(shared, static_cast<int>(li)).run();
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(shared.error_mutex);
          // After a timeout the abort itself makes blocked NCCL calls fail ("internal error"):
          // the watchdog's message (rank, op, timeout) is the cause worth reporting.
          if (!shared.first_error)
            shared.first_error = watchdog.fired() ? std::make_exception_ptr(DeviceError(watchdog.message()))
                                                  : std::current_exception();
        }
        shared.barrier.abort();
        watchdog.fire(fmt::format("rank {}: {}", world_rank0 + static_cast<int>(li), e.what()));
      }
    });
  }
  for (auto& t : threads) t.join();
  if (shared.first_error) std::rethrow_exception(shared.first_error);

  std::vector<RankOutcome> all = outcomes;
  if (config.mpi) {
    const std::size_t iters = outcomes[0].step_us.size(), n = step.ops.size();
    const std::size_t rounds = outcomes[0].marginal_full.size();
    const std::vector<double> gathered = MpiWorld::get().allgather(pack(outcomes[0]));
    const std::size_t len = packed_length(iters, n, rounds);
    all.clear();
    for (int r = 0; r < world_size; ++r)
      all.push_back(unpack(gathered.data() + r * len, iters, n, rounds, outcomes[0]));
  }
  StepResult result = assemble(step, config, all);
  if (groups.extra_nccl)
    result.notes.push_back("a separate NCCL communicator carried the allreduces too large for " + config.strategy);
  return result;
}

}  // namespace eaglesim::cuda
