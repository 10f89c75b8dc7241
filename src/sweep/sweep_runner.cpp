#include "sweep/sweep_runner.hpp"

#include <chrono>
#include <map>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "domain/speculative.hpp"
#include "engine/evaluate.hpp"
#include "engine/op_pricing.hpp"
#include "engine/sim_backend.hpp"
#include "model/generator.hpp"
#include "sweep/memory_check.hpp"
#include "sweep/progress_bar.hpp"
#include "sweep/step_fingerprint.hpp"
#include "sweep/sweep_grid.hpp"
#include "sweep/thread_pool.hpp"

namespace eaglesim {

const char* to_string(UnfitKind k) {
  switch (k) {
    case UnfitKind::none: return "ok";
    case UnfitKind::tp_exceeds_gpus: return "tp_exceeds_gpus";
    case UnfitKind::tp_sharding: return "tp_sharding";
    case UnfitKind::memory: return "memory";
    case UnfitKind::strategy: return "strategy";
    case UnfitKind::acceptance: return "acceptance";
  }
  return "?";
}

std::size_t SweepAxes::combination_count() const {
  return models.size() * topologies.size() * weight_dtypes.size() * tps.size() * draft_tokens.size() *
         strategies.size() * acceptances.size();
}

namespace {

// Feasibility of one (model, topology, dtype, TP), decided before any trace exists.
struct Fit {
  UnfitKind unfit = UnfitKind::none;
  std::string reason;
  double need_gb = 0, usable_gb = 0;
};

// A generated trace and the distinct-step ids of its steps.
struct TraceSlot {
  std::size_t model = 0, dtype = 0, tp = 0, tokens = 0;  // axis positions
  Trace trace;
  std::uint64_t fp[3] = {0, 0, 0};  // verify, draft, decode
  int uid[3] = {-1, -1, -1};
};

// One distinct step, priced on every topology that needs it, with every strategy.
struct UniqueStep {
  const Trace* trace = nullptr;
  const Step* step = nullptr;
  int tp = 1;
};

constexpr const char* kStepNames[3] = {"verify", "draft", "decode"};

void check_request(const SweepRequest& rq) {
  auto need = [](bool ok, const char* what) {
    if (!ok) throw InputError(fmt::format("sweep: {} is empty", what));
  };
  need(!rq.models.empty(), "the model list (--model)");
  need(!rq.topologies.empty(), "the topology list (--topology)");
  need(!rq.weight_dtypes.empty(), "the weight dtype list (--weight-dtype)");
  need(!rq.tps.empty(), "the TP list (--tp)");
  need(!rq.draft_tokens.empty(), "the draft-token list (--draft-tokens)");
  need(!rq.acceptances.empty(), "the acceptance list (--accept-rate / --accept-len)");
  need(!rq.strategies.empty(), "the strategy list (--strategy)");
  for (const std::string& s : rq.strategies) find_communicator(s);  // InputError on unknown names
  if (!(rq.gpu_mem_util > 0 && rq.gpu_mem_util <= 1))
    throw InputError(fmt::format("--gpu-mem-util: expected a fraction in (0, 1], got {}", rq.gpu_mem_util));
}

// The sweep's phases, in order, over shared state. Every result lands in a slot chosen by its
// index, so the output is identical for any thread count.
class Sweep {
 public:
  Sweep(const SweepRequest& rq, SweepResults& out)
      : rq_(rq),
        out_(out),
        grid_(rq.models.size(), rq.topologies.size(), rq.weight_dtypes.size(), rq.tps.size(), rq.draft_tokens.size(),
              rq.strategies.size(), rq.acceptances.size()),
        pool_(rq.threads) {}

  void run() {
    describe_axes();
    out_.threads = pool_.size();
    decide_fits();
    generate_traces();
    find_distinct_steps();
    price_steps();
    build_rows();
    pick_best();
    if (rq_.waterfalls) add_waterfalls();
  }

 private:
  void describe_axes();
  void decide_fits();
  void generate_traces();
  void find_distinct_steps();
  void price_steps();
  // The Hugging Face class of the model a trace was generated for: the engine strategies turn
  // some of their defaults on by it (all of a model's steps run with the target's settings).
  std::string architecture_of(const std::string& model) const {
    for (const SweepModel& m : rq_.models)
      if (m.target.name == model) return m.target.hf_architecture;
    return {};
  }
  void build_rows();
  void pick_best();
  void add_waterfalls();

  const TraceSlot* slot(std::size_t m, std::size_t d, std::size_t p, std::size_t n) const {
    const int i = slot_of_[grid_.trace(m, d, p, n)];
    return i < 0 ? nullptr : &slots_[static_cast<std::size_t>(i)];
  }
  // The priced step `k` (verify, draft, decode) of a trace slot on topology t with strategy st.
  const PricedStep* priced(const TraceSlot& s, int k, std::size_t t, std::size_t st) const {
    if (s.uid[k] < 0) return nullptr;
    return &priced_[static_cast<std::size_t>(job_base_[static_cast<std::size_t>(s.uid[k]) * grid_.topologies + t]) + st];
  }
  bool deployable(const SweepRow& row) const { return row.ok() && !is_lower_bound(row.strategy); }

  const SweepRequest& rq_;
  SweepResults& out_;
  const SweepGrid grid_;
  ThreadPool pool_;
  std::vector<Fit> fits_;
  std::vector<int> slot_of_;       // per grid_.trace(): index into slots_, -1 when no topology can run it
  std::vector<TraceSlot> slots_;
  std::vector<UniqueStep> unique_;
  std::vector<long> job_base_;     // per (unique step, topology): first job (then one per strategy), -1: not needed
  std::vector<PricedStep> priced_;
};

void Sweep::describe_axes() {
  std::vector<std::string> models, drafts, topologies;
  for (const SweepModel& m : rq_.models) {
    models.push_back(m.target.name);
    drafts.push_back(m.draft ? m.draft->name : "");
    if (!m.draft)
      out_.notes.push_back(fmt::format("{}: no EAGLE-3 head, so the draft forwards are not in the cycle (tok/s is "
                                       "optimistic)",
                                       m.target.name));
  }
  for (const Topology& t : rq_.topologies) topologies.push_back(t.name);
  out_.axes = SweepAxes{models,          drafts,           topologies,     rq_.weight_dtypes, rq_.tps,
                        rq_.draft_tokens, rq_.acceptances, rq_.strategies, rq_.kv_len,        rq_.gpu_mem_util,
                        rq_.fuse_add_norm};
  if (!rq_.fuse_add_norm)
    out_.notes.push_back(kUnfusedAddNormNote);
}

// 1. Feasibility per (model, topology, dtype, TP): GPU count, sharding, memory (cheap, serial).
void Sweep::decide_fits() {
  fits_.assign(grid_.fits(), Fit{});
  for (std::size_t m = 0; m < grid_.models; ++m) {
    const SweepModel& model = rq_.models[m];
    for (std::size_t p = 0; p < grid_.tps; ++p) {
      const int tp = rq_.tps[p];
      std::string shard_error;
      try {
        check_tp(model.target, tp);
        if (model.draft) check_tp(*model.draft, tp);
      } catch (const InputError& e) {
        shard_error = e.what();
      }
      for (std::size_t d = 0; d < grid_.dtypes; ++d) {
        MemoryNeed need;
        if (shard_error.empty())
          need = memory_needed(model.target, model.draft ? &*model.draft : nullptr, tp, rq_.weight_dtypes[d], rq_.kv_len);
        for (std::size_t t = 0; t < grid_.topologies; ++t) {
          const Topology& topo = rq_.topologies[t];
          Fit& f = fits_[grid_.fit(m, t, d, p)];
          if (tp > topo.gpu_count) {
            f.unfit = UnfitKind::tp_exceeds_gpus;
            f.reason = fmt::format("TP {} needs {} GPUs, {} has {}", tp, tp, topo.name, topo.gpu_count);
            continue;
          }
          if (!shard_error.empty()) {
            f.unfit = UnfitKind::tp_sharding;
            f.reason = shard_error;
            continue;
          }
          const MemoryVerdict v = check_memory(need, topo.gpu, rq_.gpu_mem_util);
          f.need_gb = v.need_gb;
          f.usable_gb = v.usable_gb;
          if (!v.fits) {
            f.unfit = UnfitKind::memory;
            f.reason = v.reason;
          }
        }
      }
    }
  }
}

// 2. One generated trace per (model, dtype, TP, draft tokens) that some topology can run.
void Sweep::generate_traces() {
  slot_of_.assign(grid_.traces(), -1);
  for (std::size_t m = 0; m < grid_.models; ++m)
    for (std::size_t d = 0; d < grid_.dtypes; ++d)
      for (std::size_t p = 0; p < grid_.tps; ++p) {
        bool wanted = false;
        for (std::size_t t = 0; t < grid_.topologies && !wanted; ++t)
          wanted = fits_[grid_.fit(m, t, d, p)].unfit == UnfitKind::none;
        if (!wanted) continue;
        for (std::size_t n = 0; n < grid_.draft_tokens; ++n) {
          slot_of_[grid_.trace(m, d, p, n)] = static_cast<int>(slots_.size());
          TraceSlot s;
          s.model = m, s.dtype = d, s.tp = p, s.tokens = n;
          slots_.push_back(std::move(s));
        }
      }
  pool_.run(slots_.size(), [&](std::size_t i) {
    TraceSlot& s = slots_[i];
    const SweepModel& model = rq_.models[s.model];
    GenOptions g;
    g.tp = rq_.tps[s.tp];
    g.tokens = 1 + rq_.draft_tokens[s.tokens];
    g.kv_len = rq_.kv_len;
    g.weight_dtype = rq_.weight_dtypes[s.dtype];
    g.draft = model.draft;
    s.trace = generate_trace(model.target, g);
    s.trace.meta.draft_tokens = rq_.draft_tokens[s.tokens];
    for (int k = 0; k < 3; ++k)
      if (const Step* st = s.trace.find_step(kStepNames[k])) s.fp[k] = step_fingerprint(*st);
  });
  out_.traces_generated = slots_.size();
}

// Distinct steps: a step equal in content (and world size) to one seen before shares its id
// (draft and decode steps do not depend on the draft-token count, so they are shared across it).
void Sweep::find_distinct_steps() {
  std::multimap<std::uint64_t, int> by_fp;
  for (TraceSlot& s : slots_) {
    for (int k = 0; k < 3; ++k) {
      const Step* st = s.trace.find_step(kStepNames[k]);
      if (!st) continue;
      const int tp = rq_.tps[s.tp];
      int id = -1;
      auto range = by_fp.equal_range(s.fp[k]);
      for (auto it = range.first; it != range.second && id < 0; ++it) {
        const UniqueStep& u = unique_[static_cast<std::size_t>(it->second)];
        if (u.tp == tp && same_step_content(*u.step, *st)) id = it->second;
      }
      if (id < 0) {
        id = static_cast<int>(unique_.size());
        unique_.push_back({&s.trace, st, tp});
        by_fp.emplace(s.fp[k], id);
      }
      s.uid[k] = id;
    }
  }
}

// 3. One simulation per distinct step x topology (where it can run) x strategy.
void Sweep::price_steps() {
  const std::size_t T = grid_.topologies, S = grid_.strategies;
  job_base_.assign(unique_.size() * T, -1);
  struct Job {
    int uid;
    std::size_t topo;
    std::size_t strategy;
  };
  std::vector<Job> jobs;
  for (std::size_t m = 0; m < grid_.models; ++m)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t d = 0; d < grid_.dtypes; ++d)
        for (std::size_t p = 0; p < grid_.tps; ++p) {
          if (fits_[grid_.fit(m, t, d, p)].unfit != UnfitKind::none) continue;
          for (std::size_t n = 0; n < grid_.draft_tokens; ++n) {
            const TraceSlot& s = *slot(m, d, p, n);
            for (int k = 0; k < 3; ++k) {
              if (s.uid[k] < 0) continue;
              long& base = job_base_[static_cast<std::size_t>(s.uid[k]) * T + t];
              if (base >= 0) continue;
              base = static_cast<long>(jobs.size());
              for (std::size_t st = 0; st < S; ++st) jobs.push_back({s.uid[k], t, st});
            }
          }
        }
  priced_.assign(jobs.size(), PricedStep{});
  ProgressBar bar("sweep", jobs.size(), rq_.progress && ProgressBar::is_terminal(stderr));
  pool_.run(jobs.size(), [&](std::size_t i) {
    const Job& job = jobs[i];
    const UniqueStep& u = unique_[static_cast<std::size_t>(job.uid)];
    SimBackend backend;
    RunOptions opts;
    opts.ranks = u.tp;
    opts.engine.model_architecture = architecture_of(u.trace->meta.model);
    opts.fuse_add_norm = rq_.fuse_add_norm;
    priced_[i] = price_step(backend, *u.trace, *u.step, rq_.strategies[job.strategy], &rq_.topologies[job.topo], opts);
    bar.advance();
  });
  out_.steps_priced = jobs.size();
}

// 4. Rows, in grid order; acceptance only enters the speculative arithmetic.
void Sweep::build_rows() {
  const SweepAxes& ax = out_.axes;
  out_.rows.resize(grid_.rows());
  GridPoint g;
  for (g.model = 0; g.model < grid_.models; ++g.model)
    for (g.topology = 0; g.topology < grid_.topologies; ++g.topology)
      for (g.dtype = 0; g.dtype < grid_.dtypes; ++g.dtype)
        for (g.tp = 0; g.tp < grid_.tps; ++g.tp) {
          const Fit& fit = fits_[grid_.fit(g.model, g.topology, g.dtype, g.tp)];
          for (g.draft_tokens = 0; g.draft_tokens < grid_.draft_tokens; ++g.draft_tokens) {
            const TraceSlot* s = fit.unfit == UnfitKind::none ? slot(g.model, g.dtype, g.tp, g.draft_tokens) : nullptr;
            for (g.strategy = 0; g.strategy < grid_.strategies; ++g.strategy) {
              StrategyResult r;
              r.strategy = rq_.strategies[g.strategy];
              UnfitKind unfit = fit.unfit;
              std::string reason = fit.reason;
              if (s) {
                r = assemble_result(r.strategy, *priced(*s, 0, g.topology, g.strategy), priced(*s, 1, g.topology, g.strategy),
                                    priced(*s, 2, g.topology, g.strategy));
                if (!r.supported) {
                  unfit = UnfitKind::strategy;
                  reason = r.reason;
                }
              }
              for (g.acceptance = 0; g.acceptance < grid_.acceptances; ++g.acceptance) {
                const std::size_t index = grid_.row(g);
                SweepRow& row = out_.rows[index];
                row.index = index;
                row.model = ax.models[g.model];
                row.draft_model = ax.draft_models[g.model];
                row.topology = ax.topologies[g.topology];
                row.gpu = rq_.topologies[g.topology].gpu.name;
                row.gpu_count = rq_.topologies[g.topology].gpu_count;
                row.weight_dtype = rq_.weight_dtypes[g.dtype];
                row.tp = rq_.tps[g.tp];
                row.draft_tokens = rq_.draft_tokens[g.draft_tokens];
                row.acceptance = rq_.acceptances[g.acceptance];
                row.strategy = r.strategy;
                row.mem_need_gb = fit.need_gb;
                row.mem_usable_gb = fit.usable_gb;
                row.unfit = unfit;
                row.reason = reason;
                if (unfit != UnfitKind::none) continue;
                const Acceptance& acc = rq_.acceptances[g.acceptance];
                if (acc.mode == Acceptance::Mode::length && acc.value > row.draft_tokens + 1) {
                  row.unfit = UnfitKind::acceptance;
                  row.reason = fmt::format("mean accepted length {} exceeds N + 1 = {} tokens per cycle", acc.value,
                                           row.draft_tokens + 1);
                  continue;
                }
                derive_strategy_metrics(r, acc, row.draft_tokens);
                static_cast<CycleMetrics&>(row) = r;
                const VerifySplit split = verify_split(r);
                row.verify_compute_us = split.matmul_attention_us;
                row.verify_other_us = split.other_us;
              }
            }
          }
        }
}

// The best row per (model, topology, acceptance), against the best plain decoding there.
void Sweep::pick_best() {
  const std::size_t A = grid_.acceptances;
  for (std::size_t m = 0; m < grid_.models; ++m)
    for (std::size_t t = 0; t < grid_.topologies; ++t) {
      const RowRange block = grid_.model_topology_rows(m, t);
      std::optional<std::size_t> plain;
      for (std::size_t i = block.first; i < block.last; ++i) {
        const SweepRow& row = out_.rows[i];
        if (deployable(row) && row.decode_tokens_per_s > 0 &&
            (!plain || row.decode_tokens_per_s > out_.rows[*plain].decode_tokens_per_s))
          plain = i;
      }
      for (std::size_t a = 0; a < A; ++a) {
        SweepBest b;
        b.model = out_.axes.models[m];
        b.topology = out_.axes.topologies[t];
        b.acceptance = rq_.acceptances[a];
        for (std::size_t i = block.first + a; i < block.last; i += A) {
          const SweepRow& row = out_.rows[i];
          if (deployable(row) && (!b.row || row.tokens_per_s > out_.rows[*b.row].tokens_per_s)) b.row = i;
        }
        b.plain_row = plain;
        if (plain) b.best_plain_tokens_per_s = out_.rows[*plain].decode_tokens_per_s;
        if (b.row && b.best_plain_tokens_per_s > 0)
          b.speedup_vs_best_plain = out_.rows[*b.row].tokens_per_s / b.best_plain_tokens_per_s;
        out_.best.push_back(std::move(b));
      }
    }
}

// Each model's fastest configuration, re-simulated with a timeline for the waterfall.
void Sweep::add_waterfalls() {
  for (std::size_t m = 0; m < grid_.models; ++m) {
    std::optional<std::size_t> best;
    const RowRange rows = grid_.model_rows(m);
    for (std::size_t i = rows.first; i < rows.last; ++i)
      if (deployable(out_.rows[i]) && (!best || out_.rows[i].tokens_per_s > out_.rows[*best].tokens_per_s)) best = i;
    if (!best) continue;
    const GridPoint g = grid_.point(*best);
    const TraceSlot& s = *slot(g.model, g.dtype, g.tp, g.draft_tokens);
    SimBackend backend;
    RunOptions opts;
    opts.ranks = rq_.tps[g.tp];
    opts.fuse_add_norm = rq_.fuse_add_norm;
    opts.want_timeline = true;
    opts.engine.model_architecture = architecture_of(s.trace.meta.model);
    StepResult r = backend.run_step(s.trace, s.trace.verify(), rq_.strategies[g.strategy], &rq_.topologies[g.topology], opts);
    out_.waterfalls.push_back({out_.axes.models[m], *best, std::move(r.timeline)});
  }
}

}  // namespace

SweepResults run_sweep(const SweepRequest& rq) {
  check_request(rq);
  const auto t0 = std::chrono::steady_clock::now();
  SweepResults out;
  Sweep(rq, out).run();
  out.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace eaglesim
