#include "sweep/sweep_runner.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "domain/acceptance_resolution.hpp"
#include "domain/spec_decode_metrics.hpp"
#include "backend/evaluate.hpp"
#include "backend/op_pricing.hpp"
#include "backend/sim_backend.hpp"
#include "model/default_eagle3_head.hpp"
#include "model/generator.hpp"
#include "model/speculative_flags.hpp"
#include "sweep/batch_best.hpp"
#include "sweep/layout_best.hpp"
#include "sweep/memory_check.hpp"
#include "sweep/progress_bar.hpp"
#include "sweep/step_fingerprint.hpp"
#include "sweep/sweep_grid.hpp"
#include "sweep/thread_pool.hpp"
#include "sweep/tree_breakeven.hpp"

namespace eaglesim {

std::string SweepAxes::drafting(std::size_t m) const {
  const bool mtp = m < draft_models.size() && m < models.size() && draft_models[m] == mtp_draft_name(models[m]);
  return mtp ? "MTP" : "EAGLE-3";
}

std::string SweepAxes::drafting() const {
  if (models.empty()) return "speculation";
  const std::string first = drafting(0);
  for (std::size_t m = 1; m < models.size(); ++m)
    if (drafting(m) != first) return "speculation";
  return first;
}

const char* to_string(UnfitKind k) {
  switch (k) {
    case UnfitKind::none: return "ok";
    case UnfitKind::tp_exceeds_gpus: return "tp_exceeds_gpus";
    case UnfitKind::tp_sharding: return "tp_sharding";
    case UnfitKind::layout: return "layout";
    case UnfitKind::memory: return "memory";
    case UnfitKind::strategy: return "strategy";
    case UnfitKind::trace: return "trace";
    case UnfitKind::acceptance: return "acceptance";
  }
  return "?";
}

std::size_t SweepAxes::combination_count() const {
  return models.size() * topologies.size() * weight_dtypes.size() * layouts.size() * batches.size() * spec_configs.size() *
         strategies.size() * acceptances.size();
}

namespace {

// Feasibility of one (model, topology, dtype, TP, batch), decided before any trace exists.
struct Fit {
  UnfitKind unfit = UnfitKind::none;
  std::string reason;
  double need_gb = 0, usable_gb = 0;
};

// The steps of a cycle a trace may hold, in the order assemble_result takes them.
enum StepKind { kVerify, kDraft, kDecode, kDraftExtend, kStepKinds };
constexpr const char* kStepNames[kStepKinds] = {"verify", "draft", "decode", "draft_extend"};

// One generated trace, reduced to the distinct-step ids of its steps (the trace itself is freed
// once its steps are sorted into the distinct ones).
struct TraceSlot {
  std::size_t model = 0, dtype = 0, layout = 0, batch = 0, spec = 0;  // axis positions
  int uid[kStepKinds] = {-1, -1, -1, -1};
  std::string error;  // the generator refused the combination
};

// One distinct step, kept as a trace of that one step (its meta is what the simulator reads),
// priced on every topology that needs it, with every strategy.
struct UniqueStep {
  Trace trace;
  std::uint64_t fp = 0;
  int tp = 1;  // ranks
  std::size_t model = 0;
};

// Traces generated at once before their steps are sorted: bounds memory to a chunk of traces.
constexpr std::size_t kTraceChunk = 64;

void check_request(const SweepRequest& rq) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw InputError(fmt::format("sweep: {} is empty", what));
  };
  need(!rq.models.empty(), fmt::format("the model list ({})", setting_name(Setting::model)));
  need(!rq.topologies.empty(), fmt::format("the topology list ({})", setting_name(Setting::topology)));
  need(!rq.weight_dtypes.empty(), fmt::format("the weight dtype list ({})", setting_name(Setting::weight_dtype)));
  need(!rq.layouts.empty(), fmt::format("the TP list ({})", setting_name(Setting::tp)));
  need(!rq.batches.empty(), fmt::format("the batch list ({})", setting_name(Setting::batch)));
  need(!rq.draft_tokens.empty() || !rq.spec_configs.empty(),
       fmt::format("the speculative configuration list ({} or {})", setting_name(Setting::draft_tokens),
                   setting_name(Setting::speculative_num_steps)));
  need(!rq.acceptances.empty() || rq.accept_probs,
       fmt::format("the acceptance list ({} / {} / {})", setting_name(Setting::accept_rate),
                   setting_name(Setting::accept_len), setting_name(Setting::accept_probs)));
  need(!rq.strategies.empty(), fmt::format("the strategy list ({})", setting_name(Setting::strategy)));
  for (const std::string& s : rq.strategies) find_cost_model(s);  // InputError on unknown names
  for (int b : rq.batches)
    if (b < 1 || b > kMaxGenBatch)
      throw SettingError(Setting::batch, fmt::format("expected values in [1, {}], got {}", kMaxGenBatch, b));
  if (!(rq.gpu_mem_util > 0 && rq.gpu_mem_util <= 1))
    throw SettingError(Setting::gpu_mem_util, fmt::format("expected a fraction in (0, 1], got {}", rq.gpu_mem_util));
}

// The chains of --draft-tokens and the given configurations, sorted, without duplicates.
std::vector<SpecConfig> spec_configs_of(const SweepRequest& rq) {
  std::vector<SpecConfig> out = rq.spec_configs;
  for (int n : rq.draft_tokens) out.push_back(chain_config(n));
  std::sort(out.begin(), out.end(), [](const SpecConfig& a, const SpecConfig& b) {
    return std::tie(a.num_steps, a.eagle_topk, a.num_draft_tokens) < std::tie(b.num_steps, b.eagle_topk, b.num_draft_tokens);
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The acceptance axis: the rates and lengths as given, then the accept_probs entry.
std::vector<Acceptance> acceptance_axis(const SweepRequest& rq) {
  std::vector<Acceptance> out = rq.acceptances;
  if (rq.accept_probs) {
    AcceptanceSource s;
    s.kind = AcceptanceSource::Kind::tree_model;
    s.rank_probabilities = rq.accept_probs->describe();
    s.description = fmt::format("per-rank acceptance {} ({})", s.rank_probabilities, setting_name(Setting::accept_probs));
    out.push_back({Acceptance::Mode::length, 0.0, s});
  }
  return out;
}

// The sweep's phases, in order, over shared state. Every result lands in a slot chosen by its
// index, so the output is identical for any thread count.
class Sweep {
 public:
  Sweep(const SweepRequest& rq, SweepResults& out)
      : rq_(rq),
        specs_(spec_configs_of(rq)),
        acceptances_(acceptance_axis(rq)),
        out_(out),
        grid_(rq.models.size(), rq.topologies.size(), rq.weight_dtypes.size(), rq.layouts.size(), rq.batches.size(),
              specs_.size(), rq.strategies.size(), acceptances_.size()),
        pool_(rq.threads) {}

  void run() {
    describe_axes();
    out_.threads = pool_.size();
    resolve_acceptances();
    decide_fits();
    generate_traces();
    price_steps();
    build_rows();
    pick_best();
    if (rq_.waterfalls) add_waterfalls();
    keep_picked_rows();
  }

 private:
  void describe_axes();
  void resolve_acceptances();
  void decide_fits();
  GenOptions gen_options(std::size_t m, std::size_t d, std::size_t p, std::size_t b, std::size_t c) const;
  void generate_traces();
  void add_distinct_steps(TraceSlot& slot, Trace& trace);
  void price_steps();
  // The Hugging Face class of the model a trace was generated for: the engine strategies turn
  // some of their defaults on by it (all of a model's steps run with the target's settings).
  std::string architecture_of(std::size_t model) const { return rq_.models[model].target.hf_architecture; }
  void build_block(std::size_t fit_index, std::vector<SweepRow>& rows) const;
  void build_rows();
  void count(const SweepRow& row, std::map<std::string, std::size_t>& group_of);
  void pick_best();
  void add_waterfalls();
  void keep_picked_rows();

  const TraceSlot* slot(std::size_t m, std::size_t d, std::size_t p, std::size_t b, std::size_t c) const {
    const int i = slot_of_[grid_.trace(m, d, p, b, c)];
    return i < 0 ? nullptr : &slots_[static_cast<std::size_t>(i)];
  }
  // The priced step `k` of a trace slot on topology t with strategy st; null when it has none.
  const PricedStep* priced(const TraceSlot& s, int k, std::size_t t, std::size_t st) const {
    if (s.uid[k] < 0) return nullptr;
    return &priced_[static_cast<std::size_t>(job_base_[static_cast<std::size_t>(s.uid[k]) * grid_.topologies + t]) + st];
  }
  std::size_t acceptance_slot(std::size_t c, std::size_t a, std::size_t b) const {
    return (c * grid_.acceptances + a) * grid_.batches + b;
  }

  const SweepRequest& rq_;
  const std::vector<SpecConfig> specs_;
  const std::vector<Acceptance> acceptances_;
  SweepResults& out_;
  const SweepGrid grid_;
  ThreadPool pool_;
  std::vector<bool> deployable_;    // per strategy: not a lower bound
  std::vector<int> resolved_;       // per acceptance_slot: index into out_.acceptance_sources, -1: unfit
  // Per entry of out_.acceptance_sources: what derive_strategy_metrics is given. For a tree, E
  // alone, and the break-even rate comes from the configuration's curve (tree_breakeven.hpp),
  // the same number the domain's bisection over built trees gives, at a fraction of the cost.
  std::vector<Acceptance> derive_acceptance_;
  std::vector<std::optional<TreeBreakevenCurve>> curves_;  // per configuration, trees only
  std::vector<std::string> acceptance_unfit_;  // per acceptance_slot: why, when resolved_ is -1
  std::vector<Fit> fits_;
  std::vector<int> slot_of_;        // per grid_.trace(): index into slots_, -1 when no topology can run it
  std::vector<TraceSlot> slots_;
  std::vector<UniqueStep> unique_;
  std::multimap<std::uint64_t, int> unique_by_fp_;
  std::vector<long> job_base_;      // per (unique step, topology): first job (then one per strategy), -1: not needed
  std::vector<PricedStep> priced_;
  std::vector<RowSpeeds> speeds_;   // per row: what the picks compare
};

void Sweep::describe_axes() {
  out_.notes = rq_.notes;
  std::vector<std::string> models, drafts, topologies;
  for (const SweepModel& m : rq_.models) {
    models.push_back(m.target.name);
    drafts.push_back(m.mtp ? mtp_draft_name(m.target.name) : m.draft ? m.draft->name : "");
    if (m.mtp)
      out_.notes.push_back(fmt::format("{}: the draft is its own MTP layer ({} NextN layer{}, as SGLang's NEXTN "
                                       "runs it)",
                                       m.target.name, m.target.mtp_layers, m.target.mtp_layers == 1 ? "" : "s"));
    else if (!m.draft)
      out_.notes.push_back(fmt::format("{}: no EAGLE-3 head (--draft none), so the draft forwards are not in the "
                                       "cycle (tok/s is optimistic)",
                                       m.target.name));
    else if (m.draft_derived)
      out_.notes.push_back(describe_default_head(m.target, *m.draft));
  }
  for (const Topology& t : rq_.topologies) topologies.push_back(t.name);
  SweepAxes& ax = out_.axes;
  ax.models = models;
  ax.draft_models = drafts;
  ax.topologies = topologies;
  ax.weight_dtypes = rq_.weight_dtypes;
  ax.layouts = rq_.layouts;
  ax.skipped_layouts = rq_.skipped_layouts;
  ax.a2a = rq_.a2a;
  ax.batches = rq_.batches;
  ax.spec_configs = specs_;
  ax.skipped_configs = rq_.skipped_configs;
  std::set<int> n;
  for (const SpecConfig& c : specs_) n.insert(c.num_draft_tokens - 1);
  ax.draft_tokens.assign(n.begin(), n.end());
  ax.acceptances = acceptances_;
  ax.strategies = rq_.strategies;
  ax.acceptance_table = rq_.acceptance_table ? rq_.acceptance_table->file : "";
  ax.engine_cycle = rq_.engine_cycle;
  ax.kv_len = rq_.kv_len;
  ax.gpu_mem_util = rq_.gpu_mem_util;
  ax.fused_add_norm = rq_.fuse_add_norm;
  ax.allow_lossy = rq_.allow_lossy;
  if (!rq_.fuse_add_norm) out_.notes.push_back(unfused_add_norm_note());
  // Candidates for "best": not a lower bound, and not lossy unless the request allows it.
  for (const std::string& s : rq_.strategies) deployable_.push_back(may_be_picked(s, rq_.allow_lossy));
}

// Tokens per cycle per (configuration, acceptance, batch), by the one rule a run uses
// (acceptance_resolution.hpp); the batch only matters to a measurement table's lookup, so
// without a table each resolution serves every batch.
void Sweep::resolve_acceptances() {
  const std::size_t C = grid_.specs, A = grid_.acceptances, B = grid_.batches;
  resolved_.assign(C * A * B, -1);
  acceptance_unfit_.assign(C * A * B, {});
  const AcceptanceTable* table = rq_.acceptance_table ? &*rq_.acceptance_table : nullptr;
  curves_.resize(C);
  for (std::size_t c = 0; c < C; ++c)
    if (specs_[c].eagle_topk > 1) curves_[c].emplace(specs_[c]);
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t a = 0; a < A; ++a)
      for (std::size_t b = 0; b < B; ++b) {
        const std::size_t at = acceptance_slot(c, a, b);
        if (b > 0 && !table) {
          resolved_[at] = resolved_[acceptance_slot(c, a, 0)];
          acceptance_unfit_[at] = acceptance_unfit_[acceptance_slot(c, a, 0)];
          continue;
        }
        const SpecConfig& config = specs_[c];
        const Acceptance& given = acceptances_[a];
        AcceptanceInputs in;
        in.table = table;
        in.batch = rq_.batches[b];
        if (given.source) {
          in.rank_probabilities = rq_.accept_probs;
        } else if (given.mode == Acceptance::Mode::rate) {
          in.accept_rate = given.value;
        } else {
          const int most = max_tokens_per_cycle(config);
          if (given.value > most) {
            acceptance_unfit_[at] =
                is_chain(config)
                    ? fmt::format("mean accepted length {} exceeds N + 1 = {} tokens per cycle", given.value, most)
                    : fmt::format("mean accepted length {} exceeds 1 + min(num_steps, num_draft_tokens - 1) = {} "
                                  "tokens per cycle of {}",
                                  given.value, most, short_spec(config));
            continue;
          }
          in.accept_len = given.value;
        }
        try {
          const ResolvedAcceptance r = resolve_acceptance(config, in);
          resolved_[at] = static_cast<int>(out_.acceptance_sources.size());
          out_.acceptance_sources.push_back(r.report_acceptance());
          derive_acceptance_.push_back(config.eagle_topk > 1 ? Acceptance{Acceptance::Mode::length, r.tokens_per_cycle}
                                                             : out_.acceptance_sources.back());
        } catch (const InputError& e) {
          acceptance_unfit_[at] = e.what();
        }
      }
}

// 1. Feasibility per (model, topology, dtype, TP, batch): GPU count, sharding, memory.
void Sweep::decide_fits() {
  fits_.assign(grid_.fits(), Fit{});
  for (std::size_t m = 0; m < grid_.models; ++m) {
    const SweepModel& model = rq_.models[m];
    for (std::size_t p = 0; p < grid_.layouts; ++p) {
      const ParallelLayout& layout = rq_.layouts[p];
      const int tp = layout.tp;
      std::string shard_error;
      try {
        // Data-parallel attention runs attention and the draft at TP 1: only the experts shard.
        if (!layout.dp_attention) {
          check_tp(model.target, tp);
          if (model.draft) check_tp(*model.draft, tp);
        }
      } catch (const InputError& e) {
        shard_error = e.what();
      }
      const std::string layout_error = layout_problem(model.target, layout);
      for (std::size_t d = 0; d < grid_.dtypes; ++d)
        for (std::size_t b = 0; b < grid_.batches; ++b) {
          MemoryNeed need;
          if (shard_error.empty() && layout_error.empty())
            need = memory_needed(model.target, model.draft ? &*model.draft : nullptr,
                                 RankHolding{tp, layout.dp_attention, model.mtp}, LinearFormats::all(rq_.weight_dtypes[d]),
                                 std::vector<std::int64_t>(static_cast<std::size_t>(rq_.batches[b]), rq_.kv_len));
          for (std::size_t t = 0; t < grid_.topologies; ++t) {
            const Topology& topo = rq_.topologies[t];
            Fit& f = fits_[grid_.fit(m, t, d, p, b)];
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
            if (!layout_error.empty()) {
              f.unfit = UnfitKind::layout;
              f.reason = layout_error;
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

GenOptions Sweep::gen_options(std::size_t m, std::size_t d, std::size_t p, std::size_t b, std::size_t c) const {
  const SpecConfig& config = specs_[c];
  GenOptions g;
  g.tp = rq_.layouts[p].tp;
  g.ep = rq_.layouts[p].ep;
  g.dp_attention = rq_.layouts[p].dp_attention;
  g.mtp_draft = rq_.models[m].mtp;
  g.kv_len = rq_.kv_len;
  g.weight_dtype = rq_.weight_dtypes[d];
  g.draft = rq_.models[m].draft;
  g.batch = rq_.batches[b];
  g.engine_cycle = rq_.engine_cycle;
  if (is_chain(config)) {
    // A chain is gen's --tokens N + 1: one request without the engine's cycle is the version-1 trace.
    g.tokens = config.num_draft_tokens;
  } else {
    SpeculativeFlags f;
    f.num_steps = config.num_steps;
    f.eagle_topk = config.eagle_topk;
    f.num_draft_tokens = config.num_draft_tokens;
    g.speculative = resolve_speculative_flags(f).config;
  }
  return g;
}

// 2. One generated trace per (model, dtype, TP, batch, configuration) that some topology can
// run, in chunks: each chunk is generated on the pool, then its steps are sorted into the
// distinct ones and the traces freed.
void Sweep::generate_traces() {
  slot_of_.assign(grid_.traces(), -1);
  for (std::size_t m = 0; m < grid_.models; ++m)
    for (std::size_t d = 0; d < grid_.dtypes; ++d)
      for (std::size_t p = 0; p < grid_.layouts; ++p)
        for (std::size_t b = 0; b < grid_.batches; ++b) {
          bool wanted = false;
          for (std::size_t t = 0; t < grid_.topologies && !wanted; ++t)
            wanted = fits_[grid_.fit(m, t, d, p, b)].unfit == UnfitKind::none;
          if (!wanted) continue;
          for (std::size_t c = 0; c < grid_.specs; ++c) {
            slot_of_[grid_.trace(m, d, p, b, c)] = static_cast<int>(slots_.size());
            TraceSlot s;
            s.model = m, s.dtype = d, s.layout = p, s.batch = b, s.spec = c;
            slots_.push_back(std::move(s));
          }
        }
  std::vector<Trace> chunk;
  std::vector<std::uint64_t> fps;
  for (std::size_t first = 0; first < slots_.size(); first += kTraceChunk) {
    const std::size_t n = std::min(kTraceChunk, slots_.size() - first);
    chunk.assign(n, Trace{});
    fps.assign(n * kStepKinds, 0);
    pool_.run(n, [&](std::size_t i) {
      TraceSlot& s = slots_[first + i];
      try {
        chunk[i] = generate_trace(rq_.models[s.model].target, gen_options(s.model, s.dtype, s.layout, s.batch, s.spec));
      } catch (const InputError& e) {
        s.error = e.what();
        return;
      }
      if (is_chain(specs_[s.spec])) chunk[i].meta.draft_tokens = specs_[s.spec].num_steps;
      for (int k = 0; k < kStepKinds; ++k)
        if (const Step* st = chunk[i].find_step(kStepNames[k])) fps[i * kStepKinds + k] = step_fingerprint(*st);
    });
    for (std::size_t i = 0; i < n; ++i) {
      TraceSlot& s = slots_[first + i];
      if (!s.error.empty()) continue;
      for (int k = 0; k < kStepKinds; ++k) {
        Step* st = nullptr;
        for (Step& x : chunk[i].steps)
          if (x.name == kStepNames[k]) st = &x;
        if (!st) continue;
        const std::uint64_t fp = fps[i * kStepKinds + k];
        const int tp = rq_.layouts[s.layout].tp;
        int id = -1;
        auto range = unique_by_fp_.equal_range(fp);
        for (auto it = range.first; it != range.second && id < 0; ++it) {
          const UniqueStep& u = unique_[static_cast<std::size_t>(it->second)];
          if (u.tp == tp && u.model == s.model && same_step_content(u.trace.steps.front(), *st)) id = it->second;
        }
        if (id < 0) {
          id = static_cast<int>(unique_.size());
          UniqueStep u;
          u.trace.meta = chunk[i].meta;
          u.trace.steps.push_back(std::move(*st));
          u.fp = fp, u.tp = tp, u.model = s.model;
          unique_.push_back(std::move(u));
          unique_by_fp_.emplace(fp, id);
        }
        s.uid[k] = id;
      }
    }
  }
  out_.traces_generated = slots_.size();
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
  for (const TraceSlot& s : slots_)
    for (std::size_t t = 0; t < T; ++t) {
      if (fits_[grid_.fit(s.model, t, s.dtype, s.layout, s.batch)].unfit != UnfitKind::none) continue;
      for (int k = 0; k < kStepKinds; ++k) {
        if (s.uid[k] < 0) continue;
        long& base = job_base_[static_cast<std::size_t>(s.uid[k]) * T + t];
        if (base >= 0) continue;
        base = static_cast<long>(jobs.size());
        for (std::size_t st = 0; st < S; ++st) jobs.push_back({s.uid[k], t, st});
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
    opts.a2a = rq_.a2a;
    opts.engine.model_architecture = architecture_of(u.model);
    opts.fuse_add_norm = rq_.fuse_add_norm;
    priced_[i] = price_step(backend, u.trace, u.trace.steps.front(), rq_.strategies[job.strategy],
                            &rq_.topologies[job.topo], opts);
    bar.advance();
  });
  out_.steps_priced = jobs.size();
}

// 4. The rows of one (model, topology, dtype, TP, batch), in grid order: they are contiguous,
// and acceptance only enters the speculative arithmetic.
void Sweep::build_block(std::size_t fit_index, std::vector<SweepRow>& rows) const {
  const SweepAxes& ax = out_.axes;
  rows.assign(grid_.specs * grid_.strategies * grid_.acceptances, SweepRow{});
  GridPoint g = grid_.fit_point(fit_index);
  const std::size_t first = grid_.row(g);
  const Fit& fit = fits_[fit_index];
  const int batch = rq_.batches[g.batch];
  const ParallelLayout& layout = rq_.layouts[g.layout];
  const int tp = layout.tp;
  for (g.spec = 0; g.spec < grid_.specs; ++g.spec) {
    const SpecConfig& config = specs_[g.spec];
    const TraceSlot* s = fit.unfit == UnfitKind::none ? slot(g.model, g.dtype, g.layout, g.batch, g.spec) : nullptr;
    for (g.strategy = 0; g.strategy < grid_.strategies; ++g.strategy) {
      StrategyResult r;
      r.strategy = rq_.strategies[g.strategy];
      UnfitKind unfit = fit.unfit;
      const std::string* reason = &fit.reason;
      std::optional<std::optional<double>> tree_breakeven;  // at breakeven_len
      double breakeven_len = 0;
      if (s && !s->error.empty()) {
        unfit = UnfitKind::trace;
        reason = &s->error;
      } else if (s) {
        r = assemble_result(r.strategy, *priced(*s, kVerify, g.topology, g.strategy),
                            priced(*s, kDraft, g.topology, g.strategy), priced(*s, kDecode, g.topology, g.strategy),
                            priced(*s, kDraftExtend, g.topology, g.strategy));
        if (!r.supported) {
          unfit = UnfitKind::strategy;
          reason = &r.reason;
        }
      }
      for (g.acceptance = 0; g.acceptance < grid_.acceptances; ++g.acceptance) {
        const std::size_t index = grid_.row(g);
        SweepRow& row = rows[index - first];
        row.index = index;
        row.model = ax.models[g.model];
        row.draft_model = ax.draft_models[g.model];
        row.topology = ax.topologies[g.topology];
        row.gpu = rq_.topologies[g.topology].gpu.name;
        row.gpu_count = rq_.topologies[g.topology].gpu_count;
        row.weight_dtype = rq_.weight_dtypes[g.dtype];
        row.tp = tp;
        row.ep = layout.ep;
        row.dp_attention = layout.dp_attention;
        row.batch = batch;
        row.gpus = tp;
        row.spec = config;
        row.draft_tokens = config.num_draft_tokens - 1;
        row.acceptance = acceptances_[g.acceptance];
        row.strategy = r.strategy;
        row.mem_need_gb = fit.need_gb;
        row.mem_usable_gb = fit.usable_gb;
        row.unfit = unfit;
        if (unfit != UnfitKind::none) {
          row.reason = *reason;
          continue;
        }
        const std::size_t at = acceptance_slot(g.spec, g.acceptance, g.batch);
        if (resolved_[at] < 0) {
          row.unfit = UnfitKind::acceptance;
          row.reason = acceptance_unfit_[at];
          continue;
        }
        row.accept_source = resolved_[at];
        derive_strategy_metrics(r, derive_acceptance_[static_cast<std::size_t>(resolved_[at])], config.num_steps,
                                batch, tp);
        if (curves_[g.spec] && r.decode_us > 0) {
          // The break-even depends on the cycle, the decode step and the configuration, not on
          // the acceptance: rows that differ only in it have the same inputs here.
          if (!tree_breakeven || breakeven_len != r.breakeven_accept_len) {
            breakeven_len = r.breakeven_accept_len;
            tree_breakeven = curves_[g.spec]->rate_for_tokens(breakeven_len);
          }
          r.breakeven_accept_rate = *tree_breakeven;
        }
        static_cast<CycleMetrics&>(row) = r;
        const VerifySplit split = verify_split(r);
        row.verify_compute_us = split.matmul_attention_us;
        row.verify_other_us = split.other_us;
      }
    }
  }
}

// Every row, in grid order: blocks are built in parallel a chunk at a time and handed on in
// order (the sink, the counts, the speeds the picks compare, and out_.rows when kept), so
// without kept rows memory is one chunk's rows whatever the grid.
void Sweep::build_rows() {
  const std::size_t block_rows = grid_.specs * grid_.strategies * grid_.acceptances;
  const std::size_t blocks = grid_.fits();
  speeds_.assign(grid_.rows(), RowSpeeds{});
  out_.rows_kept = rq_.keep_rows;
  if (rq_.keep_rows) out_.rows.reserve(grid_.rows());
  out_.counts.combinations = grid_.rows();
  // ~16k rows a chunk, at least a few blocks per thread so the pool stays busy.
  const std::size_t chunk =
      std::max<std::size_t>(4 * pool_.size(), (16384 + block_rows - 1) / std::max<std::size_t>(block_rows, 1));
  std::vector<std::vector<SweepRow>> built(std::min(chunk, blocks));
  std::map<std::string, std::size_t> group_of;  // reason -> index into out_.counts.unfit
  for (std::size_t first = 0; first < blocks; first += chunk) {
    const std::size_t n = std::min(chunk, blocks - first);
    pool_.run(n, [&](std::size_t i) { build_block(first + i, built[i]); });
    for (std::size_t i = 0; i < n; ++i) {
      for (SweepRow& row : built[i]) {
        speeds_[row.index] = RowSpeeds::of(row, deployable_[grid_.point(row.index).strategy], row_e_measured(out_, row));
        count(row, group_of);
        if (rq_.row_sink) rq_.row_sink(out_, row);
        if (rq_.keep_rows) out_.rows.push_back(std::move(row));
      }
      built[i].clear();
      built[i].shrink_to_fit();
    }
  }
}

void Sweep::count(const SweepRow& row, std::map<std::string, std::size_t>& group_of) {
  SweepCounts& c = out_.counts;
  if (row.ok()) {
    ++c.ok;
    return;
  }
  ++c.by_status[to_string(row.unfit)];
  auto [it, inserted] = group_of.try_emplace(row.reason, c.unfit.size());
  if (inserted) {
    c.unfit.emplace_back();
    c.unfit.back().reason = row.reason;
  }
  SweepUnfitGroup& g = c.unfit[it->second];
  ++g.count;
  g.models.insert(row.model);
  g.topologies.insert(row.topology);
  g.dtypes.insert(to_string(row.weight_dtype));
  g.strategies.insert(row.strategy);
  g.tps.insert(row.tp);
}

// The best row per (model, topology, acceptance), against the best plain decoding there, and
// the best per batch with where speculation stops paying.
void Sweep::pick_best() {
  const std::size_t A = grid_.acceptances;
  for (std::size_t m = 0; m < grid_.models; ++m)
    for (std::size_t t = 0; t < grid_.topologies; ++t) {
      const RowRange block = grid_.model_topology_rows(m, t);
      std::optional<std::size_t> plain;
      for (std::size_t i = block.first; i < block.last; ++i) {
        const RowSpeeds& row = speeds_[i];
        if (row.deployable && row.decode_tokens_per_s > 0 &&
            (!plain || row.decode_tokens_per_s > speeds_[*plain].decode_tokens_per_s))
          plain = i;
      }
      for (std::size_t a = 0; a < A; ++a) {
        SweepBest b;
        b.model = out_.axes.models[m];
        b.topology = out_.axes.topologies[t];
        b.acceptance = acceptances_[a];
        for (std::size_t i = block.first + a; i < block.last; i += A) {
          if (!speeds_[i].deployable) continue;
          if (!b.row || speeds_[i].tokens_per_s > speeds_[*b.row].tokens_per_s) b.row = i;
          if (speeds_[i].measured && (!b.measured_row || speeds_[i].tokens_per_s > speeds_[*b.measured_row].tokens_per_s))
            b.measured_row = i;
        }
        if (b.row && speeds_[*b.row].measured) b.measured_row.reset();  // the best is measured already
        b.plain_row = plain;
        if (plain) b.best_plain_tokens_per_s = speeds_[*plain].decode_tokens_per_s;
        if (b.row && b.best_plain_tokens_per_s > 0)
          b.speedup_vs_best_plain = speeds_[*b.row].tokens_per_s / b.best_plain_tokens_per_s;
        out_.best.push_back(std::move(b));
      }
    }
  BatchVerdicts v = best_per_batch(grid_, rq_.batches, speeds_);
  out_.batch_best = std::move(v.best);
  out_.pay_limits = std::move(v.limits);
  // Side by side only when the layouts differ in more than TP (the tables above compare TPs).
  if (grid_.layouts > 1 && !tensor_parallel_only(rq_.layouts)) out_.layout_best = best_per_layout(grid_, rq_.batches, speeds_);
}

// Each model's fastest configuration, re-simulated with a timeline for the waterfall (its trace
// generated again: traces are not kept past their steps).
void Sweep::add_waterfalls() {
  for (std::size_t m = 0; m < grid_.models; ++m) {
    std::optional<std::size_t> best;
    const RowRange rows = grid_.model_rows(m);
    for (std::size_t i = rows.first; i < rows.last; ++i)
      if (speeds_[i].deployable && (!best || speeds_[i].tokens_per_s > speeds_[*best].tokens_per_s)) best = i;
    if (!best) continue;
    const GridPoint g = grid_.point(*best);
    const Trace trace =
        generate_trace(rq_.models[m].target, gen_options(g.model, g.dtype, g.layout, g.batch, g.spec));
    SimBackend backend;
    RunOptions opts;
    opts.ranks = rq_.layouts[g.layout].tp;
    opts.a2a = rq_.a2a;
    opts.fuse_add_norm = rq_.fuse_add_norm;
    opts.want_timeline = true;
    opts.engine.model_architecture = architecture_of(m);
    StepResult r = backend.run_step(trace, trace.verify(), rq_.strategies[g.strategy], &rq_.topologies[g.topology], opts);
    out_.waterfalls.push_back({out_.axes.models[m], *best, std::move(r.timeline)});
  }
}

// Without kept rows: the rows the picks and waterfalls point at, rebuilt block by block.
void Sweep::keep_picked_rows() {
  if (rq_.keep_rows) return;
  std::set<std::size_t> wanted;
  auto want = [&](const std::optional<std::size_t>& i) {
    if (i) wanted.insert(*i);
  };
  for (const SweepBest& b : out_.best) want(b.row), want(b.plain_row), want(b.measured_row);
  for (const SweepBatchBest& b : out_.batch_best) want(b.row), want(b.plain_row);
  for (const SweepLayoutBest& b : out_.layout_best) want(b.row), want(b.plain_row);
  for (const SweepWaterfall& w : out_.waterfalls) wanted.insert(w.row);
  const std::size_t block_rows = grid_.specs * grid_.strategies * grid_.acceptances;
  std::vector<SweepRow> rows;
  std::size_t built = grid_.fits();
  for (std::size_t i : wanted) {
    const std::size_t block = i / block_rows;
    if (block != built) build_block(block, rows), built = block;
    out_.picked_rows.emplace(i, rows[i - block * block_rows]);
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
