#include "sweep/sweep_runner.hpp"

#include <chrono>
#include <map>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "core/errors.hpp"
#include "engine/sim_backend.hpp"
#include "model/generator.hpp"
#include "report/speculative.hpp"
#include "sweep/memory_check.hpp"
#include "sweep/progress_bar.hpp"
#include "sweep/step_fingerprint.hpp"
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

bool is_lower_bound_strategy(const std::string& strategy) { return strategy == "ideal"; }

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

struct PricedStep {
  bool supported = true;
  std::string reason;
  StepResult result;
};

constexpr const char* kStepNames[3] = {"verify", "draft", "decode"};

double matmul_and_attention_us(const StepResult& s) {
  double us = 0;
  for (OpKind k : {OpKind::gemm, OpKind::grouped_gemm, OpKind::attention, OpKind::lm_head})
    us += s.kind_us[static_cast<std::size_t>(k)];
  return us;
}

void fill_metrics(SweepRow& row, const StrategyResult& r) {
  row.verify_us = r.verify_us;
  // The three parts add up to verify_us by construction: "other" is the remainder.
  row.verify_allreduce_us = r.comm_us;
  row.verify_compute_us = std::min(matmul_and_attention_us(r.verify), r.verify_us - r.comm_us);
  row.verify_other_us = std::max(0.0, r.verify_us - r.comm_us - row.verify_compute_us);
  row.allreduce_count = r.allreduce_count;
  row.allreduce_mean_us = r.allreduce_mean_us;
  row.draft_us = r.draft_us;
  row.decode_us = r.decode_us;
  row.cycle_us = r.cycle_us;
  row.tokens_per_cycle = r.tokens_per_cycle;
  row.tokens_per_s = r.tokens_per_s;
  row.decode_tokens_per_s = r.decode_tokens_per_s;
  row.speedup_vs_decode = r.speedup_vs_decode;
  row.breakeven_accept_rate = r.breakeven_accept_rate;
  row.breakeven_accept_len = r.breakeven_accept_len;
}

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

}  // namespace

SweepResults run_sweep(const SweepRequest& rq) {
  check_request(rq);
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t M = rq.models.size(), T = rq.topologies.size(), D = rq.weight_dtypes.size(),
                    P = rq.tps.size(), N = rq.draft_tokens.size(), S = rq.strategies.size(),
                    A = rq.acceptances.size();

  SweepResults out;
  SweepAxes& ax = out.axes;
  for (const SweepModel& m : rq.models) {
    ax.models.push_back(m.target.name);
    ax.draft_models.push_back(m.draft ? m.draft->name : "");
    if (!m.draft)
      out.notes.push_back(fmt::format("{}: no EAGLE-3 head, so the draft forwards are not in the cycle (tok/s is "
                                      "optimistic)",
                                      m.target.name));
  }
  for (const Topology& t : rq.topologies) ax.topologies.push_back(t.name);
  ax.weight_dtypes = rq.weight_dtypes;
  ax.tps = rq.tps;
  ax.draft_tokens = rq.draft_tokens;
  ax.acceptances = rq.acceptances;
  ax.strategies = rq.strategies;
  ax.kv_len = rq.kv_len;
  ax.gpu_mem_util = rq.gpu_mem_util;

  ThreadPool pool(rq.threads);
  out.threads = pool.size();

  // ---- 1. feasibility per (model, topology, dtype, TP)
  auto fit_at = [&](std::size_t m, std::size_t t, std::size_t d, std::size_t p) -> std::size_t {
    return ((m * T + t) * D + d) * P + p;
  };
  std::vector<Fit> fits(M * T * D * P);
  for (std::size_t m = 0; m < M; ++m) {
    const SweepModel& model = rq.models[m];
    for (std::size_t p = 0; p < P; ++p) {
      const int tp = rq.tps[p];
      std::string shard_error;
      try {
        check_tp(model.target, tp);
        if (model.draft) check_tp(*model.draft, tp);
      } catch (const InputError& e) {
        shard_error = e.what();
      }
      for (std::size_t d = 0; d < D; ++d) {
        MemoryNeed need;
        if (shard_error.empty())
          need = memory_needed(model.target, model.draft ? &*model.draft : nullptr, tp, rq.weight_dtypes[d], rq.kv_len);
        for (std::size_t t = 0; t < T; ++t) {
          const Topology& topo = rq.topologies[t];
          Fit& f = fits[fit_at(m, t, d, p)];
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
          const MemoryVerdict v = check_memory(need, topo.gpu, rq.gpu_mem_util);
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

  // ---- 2. one trace per (model, dtype, TP, draft tokens) that some topology can run
  auto trace_at = [&](std::size_t m, std::size_t d, std::size_t p, std::size_t n) -> std::size_t {
    return ((m * D + d) * P + p) * N + n;
  };
  std::vector<int> slot_of(M * D * P * N, -1);
  std::vector<TraceSlot> slots;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t d = 0; d < D; ++d)
      for (std::size_t p = 0; p < P; ++p) {
        bool wanted = false;
        for (std::size_t t = 0; t < T && !wanted; ++t) wanted = fits[fit_at(m, t, d, p)].unfit == UnfitKind::none;
        if (!wanted) continue;
        for (std::size_t n = 0; n < N; ++n) {
          slot_of[trace_at(m, d, p, n)] = static_cast<int>(slots.size());
          TraceSlot s;
          s.model = m, s.dtype = d, s.tp = p, s.tokens = n;
          slots.push_back(std::move(s));
        }
      }
  pool.run(slots.size(), [&](std::size_t i) {
    TraceSlot& s = slots[i];
    const SweepModel& model = rq.models[s.model];
    GenOptions g;
    g.tp = rq.tps[s.tp];
    g.tokens = 1 + rq.draft_tokens[s.tokens];
    g.kv_len = rq.kv_len;
    g.weight_dtype = rq.weight_dtypes[s.dtype];
    g.draft = model.draft;
    s.trace = generate_trace(model.target, g);
    s.trace.meta.draft_tokens = rq.draft_tokens[s.tokens];
    for (int k = 0; k < 3; ++k)
      if (const Step* st = s.trace.find_step(kStepNames[k])) s.fp[k] = step_fingerprint(*st);
  });
  out.traces_generated = slots.size();

  // Distinct steps: a step equal in content (and world size) to one seen before shares its id.
  std::vector<UniqueStep> unique;
  std::multimap<std::uint64_t, int> by_fp;
  for (TraceSlot& s : slots) {
    for (int k = 0; k < 3; ++k) {
      const Step* st = s.trace.find_step(kStepNames[k]);
      if (!st) continue;
      const int tp = rq.tps[s.tp];
      int id = -1;
      auto range = by_fp.equal_range(s.fp[k]);
      for (auto it = range.first; it != range.second && id < 0; ++it) {
        const UniqueStep& u = unique[static_cast<std::size_t>(it->second)];
        if (u.tp == tp && same_step_content(*u.step, *st)) id = it->second;
      }
      if (id < 0) {
        id = static_cast<int>(unique.size());
        unique.push_back({&s.trace, st, tp});
        by_fp.emplace(s.fp[k], id);
      }
      s.uid[k] = id;
    }
  }

  // ---- 3. one simulation per distinct step x topology (where it can run) x strategy
  const std::size_t U = unique.size();
  std::vector<long> job_base(U * T, -1);
  struct Job {
    int uid;
    std::size_t topo;
    std::size_t strategy;
  };
  std::vector<Job> jobs;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t d = 0; d < D; ++d)
        for (std::size_t p = 0; p < P; ++p) {
          if (fits[fit_at(m, t, d, p)].unfit != UnfitKind::none) continue;
          for (std::size_t n = 0; n < N; ++n) {
            const TraceSlot& s = slots[static_cast<std::size_t>(slot_of[trace_at(m, d, p, n)])];
            for (int k = 0; k < 3; ++k) {
              if (s.uid[k] < 0) continue;
              long& base = job_base[static_cast<std::size_t>(s.uid[k]) * T + t];
              if (base >= 0) continue;
              base = static_cast<long>(jobs.size());
              for (std::size_t st = 0; st < S; ++st) jobs.push_back({s.uid[k], t, st});
            }
          }
        }
  std::vector<PricedStep> priced(jobs.size());
  {
    ProgressBar bar("sweep", jobs.size(), rq.progress && ProgressBar::is_terminal(stderr));
    pool.run(jobs.size(), [&](std::size_t i) {
      const Job& job = jobs[i];
      const UniqueStep& u = unique[static_cast<std::size_t>(job.uid)];
      SimBackend backend;
      RunOptions opts;
      opts.ranks = u.tp;
      try {
        priced[i].result = backend.run_step(*u.trace, *u.step, rq.strategies[job.strategy], &rq.topologies[job.topo], opts);
      } catch (const StrategyUnsupported& e) {
        priced[i].supported = false;
        priced[i].reason = e.what();
      }
      bar.advance();
    });
  }
  out.steps_priced = jobs.size();

  // ---- 4. rows, in grid order; acceptance only enters the arithmetic
  out.rows.resize(ax.combination_count());
  std::size_t index = 0;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t d = 0; d < D; ++d)
        for (std::size_t p = 0; p < P; ++p) {
          const Fit& fit = fits[fit_at(m, t, d, p)];
          for (std::size_t n = 0; n < N; ++n) {
            const TraceSlot* slot = fit.unfit == UnfitKind::none
                                        ? &slots[static_cast<std::size_t>(slot_of[trace_at(m, d, p, n)])]
                                        : nullptr;
            for (std::size_t st = 0; st < S; ++st) {
              StrategyResult r;
              r.strategy = rq.strategies[st];
              UnfitKind unfit = fit.unfit;
              std::string reason = fit.reason;
              if (slot) {
                const PricedStep* steps[3] = {nullptr, nullptr, nullptr};
                for (int k = 0; k < 3; ++k) {
                  if (slot->uid[k] < 0) continue;
                  const std::size_t j = static_cast<std::size_t>(job_base[static_cast<std::size_t>(slot->uid[k]) * T + t]) + st;
                  steps[k] = &priced[j];
                  if (!priced[j].supported && unfit == UnfitKind::none) {
                    unfit = UnfitKind::strategy;
                    reason = priced[j].reason;
                  }
                }
                if (unfit == UnfitKind::none) {
                  r.verify = steps[0]->result;
                  if (steps[1]) r.draft = steps[1]->result;
                  if (steps[2]) r.decode = steps[2]->result;
                }
              }
              for (std::size_t a = 0; a < A; ++a, ++index) {
                SweepRow& row = out.rows[index];
                row.index = index;
                row.model = ax.models[m];
                row.draft_model = ax.draft_models[m];
                row.topology = ax.topologies[t];
                row.gpu = rq.topologies[t].gpu.name;
                row.gpu_count = rq.topologies[t].gpu_count;
                row.weight_dtype = rq.weight_dtypes[d];
                row.tp = rq.tps[p];
                row.draft_tokens = rq.draft_tokens[n];
                row.acceptance = rq.acceptances[a];
                row.strategy = rq.strategies[st];
                row.mem_need_gb = fit.need_gb;
                row.mem_usable_gb = fit.usable_gb;
                row.unfit = unfit;
                row.reason = reason;
                if (unfit != UnfitKind::none) continue;
                const Acceptance& acc = rq.acceptances[a];
                if (acc.mode == Acceptance::Mode::length && acc.value > row.draft_tokens + 1) {
                  row.unfit = UnfitKind::acceptance;
                  row.reason = fmt::format("mean accepted length {} exceeds N + 1 = {} tokens per cycle", acc.value,
                                           row.draft_tokens + 1);
                  continue;
                }
                derive_strategy_metrics(r, acc, row.draft_tokens);
                fill_metrics(row, r);
              }
            }
          }
        }

  // ---- best per (model, topology, acceptance), against the best plain decoding there
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t first = (m * T + t) * D * P * N * S * A;
      const std::size_t last = first + D * P * N * S * A;
      std::optional<std::size_t> plain;
      for (std::size_t i = first; i < last; ++i) {
        const SweepRow& row = out.rows[i];
        if (row.ok() && row.decode_tokens_per_s > 0 && !is_lower_bound_strategy(row.strategy) &&
            (!plain || row.decode_tokens_per_s > out.rows[*plain].decode_tokens_per_s))
          plain = i;
      }
      for (std::size_t a = 0; a < A; ++a) {
        SweepBest b;
        b.model = ax.models[m];
        b.topology = ax.topologies[t];
        b.acceptance = rq.acceptances[a];
        for (std::size_t i = first + a; i < last; i += A) {
          const SweepRow& row = out.rows[i];
          if (row.ok() && !is_lower_bound_strategy(row.strategy) &&
              (!b.row || row.tokens_per_s > out.rows[*b.row].tokens_per_s))
            b.row = i;
        }
        b.plain_row = plain;
        if (plain) b.best_plain_tokens_per_s = out.rows[*plain].decode_tokens_per_s;
        if (b.row && b.best_plain_tokens_per_s > 0)
          b.speedup_vs_best_plain = out.rows[*b.row].tokens_per_s / b.best_plain_tokens_per_s;
        out.best.push_back(std::move(b));
      }
    }

  // ---- each model's fastest configuration, re-simulated with a timeline for the waterfall
  if (rq.waterfalls) {
    for (std::size_t m = 0; m < M; ++m) {
      std::optional<std::size_t> best;
      const std::size_t first = m * T * D * P * N * S * A, last = first + T * D * P * N * S * A;
      for (std::size_t i = first; i < last; ++i)
        if (out.rows[i].ok() && !is_lower_bound_strategy(out.rows[i].strategy) &&
            (!best || out.rows[i].tokens_per_s > out.rows[*best].tokens_per_s))
          best = i;
      if (!best) continue;
      // Decode the grid position back from the row index.
      std::size_t rest = *best / A;
      const std::size_t st = rest % S;
      rest /= S;
      const std::size_t n = rest % N;
      rest /= N;
      const std::size_t p = rest % P;
      rest /= P;
      const std::size_t d = rest % D;
      const std::size_t t = rest / D % T;
      const TraceSlot& slot = slots[static_cast<std::size_t>(slot_of[trace_at(m, d, p, n)])];
      SimBackend backend;
      RunOptions opts;
      opts.ranks = rq.tps[p];
      opts.want_timeline = true;
      StepResult r = backend.run_step(slot.trace, slot.trace.verify(), rq.strategies[st], &rq.topologies[t], opts);
      out.waterfalls.push_back({ax.models[m], *best, std::move(r.timeline)});
    }
  }

  out.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace eaglesim
