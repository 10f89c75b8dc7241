#include "import/kineto_import.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "import/collective_aligner.hpp"
#include "import/config_shape_matcher.hpp"
#include "import/kernel_grouper.hpp"
#include "import/kineto_reader.hpp"
#include "import/layer_assigner.hpp"
#include "import/recorded_strategy.hpp"
#include "import/step_splitter.hpp"

namespace eaglesim {

namespace {

// A GPU that is busy at least this share of a step's span is not waiting on the CPU, so the
// span is a real step time; below it (eager mode: launch-bound) the span says more about
// Python than about the GPU and is only reported in the notes.
constexpr double kGpuBoundBusyShare = 0.9;

struct RankOps {
  RankTrace trace;
  std::vector<ImportedOp> ops;
  StepSplit split;
  std::vector<int> collective_ordinal;  // per op, -1 for non-collectives
  int collectives = 0;
};

std::string default_model_name(const std::string& file) {
  std::string base = file.substr(file.find_last_of('/') + 1);
  for (const char* ext : {".gz", ".json"})
    if (base.size() > std::strlen(ext) && base.compare(base.size() - std::strlen(ext), std::string::npos, ext) == 0)
      base.resize(base.size() - std::strlen(ext));
  base = std::regex_replace(base, std::regex("[_.-]?rank[_-]?[0-9]+$"), "");
  return base.empty() ? "imported" : base;
}

template <typename T>
T mode_of(const std::vector<T>& v, T fallback) {
  std::map<T, int> counts;
  for (const T& x : v) ++counts[x];
  T best = fallback;
  int n = 0;
  for (const auto& [x, c] : counts)
    if (c > n) { best = x; n = c; }
  return best;
}

// Same number of collectives and of steps on every rank.
void check_rank_steps_match(const std::vector<RankOps>& ranks) {
  const RankOps& a = ranks[0];
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    const RankOps& b = ranks[r];
    const std::string mismatch = "the files are not the ranks of one run (they must hold the same kernels)";
    if (a.collectives != b.collectives)
      throw InputError(fmt::format("{}: {} collective kernels, but {} has {}: {}", b.trace.file, b.collectives,
                                   a.trace.file, a.collectives, mismatch));
    if (a.split.steps.size() != b.split.steps.size())
      throw InputError(fmt::format("{}: {} steps found, but {} has {}: {}", b.trace.file, b.split.steps.size(),
                                   a.trace.file, a.split.steps.size(), mismatch));
  }
}

// Same kind and shape at every position of the imported steps (after the shapes are known).
void check_rank_ops_match(const std::vector<RankOps>& ranks, const std::vector<int>& selected) {
  const RankOps& a = ranks[0];
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    const RankOps& b = ranks[r];
    const std::string mismatch = "the files are not the ranks of one run (they must hold the same kernels)";
    for (int s : selected) {
      const auto& sa = a.split.steps[static_cast<std::size_t>(s)];
      const auto& sb = b.split.steps[static_cast<std::size_t>(s)];
      if (sa.size() != sb.size())
        throw InputError(fmt::format("{}: step {} has {} ops, but in {} it has {}: {}", b.trace.file, s, sb.size(),
                                     a.trace.file, sa.size(), mismatch));
      for (std::size_t j = 0; j < sa.size(); ++j) {
        const ImportedOp& oa = a.ops[sa[j]];
        const ImportedOp& ob = b.ops[sb[j]];
        if (oa.signature() != ob.signature())
          throw InputError(fmt::format("{}: step {} op {} is {}, but in {} it is {}: {}", b.trace.file, s, j,
                                       ob.signature(), a.trace.file, oa.signature(), mismatch));
      }
    }
  }
}

// Inside a CUDA graph the GPU never waits for the CPU: the time between two kernels of one
// replay is the GPU's kernel boundary (the graph's own launch latency), part of the step as
// much as the kernels are. Eager gaps are Python and are dropped; graph gaps are kept: the gap
// before an op and the gaps between its own kernels belong to it.
double graph_gap_before(const RankOps& r, int s, std::size_t j) {
  const auto& idx = r.split.steps[static_cast<std::size_t>(s)];
  const ImportedOp& o = r.ops[idx[j]];
  if (o.graph_launch < 0 || j == 0) return 0;
  const ImportedOp& prev = r.ops[idx[j - 1]];
  return prev.graph_launch == o.graph_launch ? std::max(0.0, o.start - prev.end) : 0.0;
}
double graph_gaps_inside(const ImportedOp& o) {
  if (o.graph_launch < 0 || o.collective) return 0;
  return std::max(0.0, (o.end - o.start) - o.kernel_us);
}

std::vector<int> select_steps(const RankOps& r0, const KinetoImportOptions& opt) {
  const StepSplit& sp = r0.split;
  std::vector<int> complete;
  for (std::size_t i = 0; i < sp.steps.size(); ++i)
    if (sp.complete[i]) complete.push_back(static_cast<int>(i));
  std::string list;
  for (int i : complete) list += (list.empty() ? "" : ", ") + std::to_string(i);
  if (complete.empty())
    throw InputError(fmt::format("{}: no complete step among the {} found ({})", r0.trace.file, sp.steps.size(), sp.method));
  if (opt.all_steps) return complete;
  if (opt.step) {
    if (std::find(complete.begin(), complete.end(), *opt.step) == complete.end())
      throw InputError(fmt::format("--step {}: not a complete step of {} (complete steps: {})", *opt.step,
                                   r0.trace.file, list));
    return {*opt.step};
  }
  // Default: the last complete step. The first steps of a profile carry one-time costs (cuBLAS
  // heuristics, allocator growth, lazy initialisation, the profiler's own buffer setup: the
  // first collective of these fixtures is 30x the others), so the latest full step is the
  // closest to steady state.
  return {complete.back()};
}

}  // namespace

KinetoImport import_kineto_with_summary(const std::vector<std::string>& files, const KinetoImportOptions& opt) {
  if (files.empty()) throw InputError("import kineto: no trace files given (one Chrome-trace JSON per rank)");
  if (opt.step && opt.all_steps) throw InputError("import kineto: --step and --all-steps exclude each other");
  if (opt.step && *opt.step < 0) throw InputError(fmt::format("--step {}: expected a step index >= 0", *opt.step));
  if (opt.layers_per_step && *opt.layers_per_step <= 0)
    throw InputError(fmt::format("--layers {}: expected a positive number of layers", *opt.layers_per_step));

  std::vector<RankOps> ranks;
  for (const auto& f : files) {
    RankOps r;
    r.trace = read_kineto_rank(f);
    ranks.push_back(std::move(r));
  }

  // Rank order: distributedInfo.rank when every file has it, else the order given.
  const bool all_ranked = std::all_of(ranks.begin(), ranks.end(), [](const RankOps& r) { return r.trace.rank.has_value(); });
  if (all_ranked) {
    std::stable_sort(ranks.begin(), ranks.end(), [](const RankOps& a, const RankOps& b) { return *a.trace.rank < *b.trace.rank; });
    for (std::size_t i = 1; i < ranks.size(); ++i)
      if (*ranks[i].trace.rank == *ranks[i - 1].trace.rank)
        throw InputError(fmt::format("{} and {} are both rank {} (distributedInfo.rank): give one file per rank",
                                     ranks[i - 1].trace.file, ranks[i].trace.file, *ranks[i].trace.rank));
  }
  int tp = static_cast<int>(ranks.size());
  std::optional<int> world;
  for (const auto& r : ranks) {
    if (!r.trace.world_size) continue;
    if (world && *world != *r.trace.world_size)
      throw InputError(fmt::format("{}: distributedInfo.world_size is {}, but {} says {}", r.trace.file,
                                   *r.trace.world_size, ranks[0].trace.file, *world));
    world = r.trace.world_size;
  }
  if (world) {
    if (static_cast<int>(ranks.size()) > *world)
      throw InputError(fmt::format("{} rank files given, but distributedInfo.world_size is {}", ranks.size(), *world));
    tp = *world;
  }
  if (opt.tp) {
    if (*opt.tp < static_cast<int>(ranks.size()) || (world && *world != *opt.tp))
      throw InputError(fmt::format("--tp {}: expected {}", *opt.tp,
                                   world ? fmt::format("{} (distributedInfo.world_size of {})", *world, ranks[0].trace.file)
                                         : fmt::format("at least the {} rank file(s) given", ranks.size())));
    tp = *opt.tp;
  }

  for (auto& r : ranks) {
    r.ops = group_kernels(r.trace);
    r.split = split_steps(r.trace, r.ops, opt.layers_per_step);
    r.collective_ordinal.assign(r.ops.size(), -1);
    for (std::size_t i = 0; i < r.ops.size(); ++i)
      if (r.ops[i].collective) r.collective_ordinal[i] = r.collectives++;
  }
  RankOps& r0 = ranks[0];
  const std::vector<int> selected = select_steps(r0, opt);
  check_rank_steps_match(ranks);

  // Kernels without shapes take them from the model config, on every rank, before the ranks
  // are compared (their signatures hold the shapes).
  const auto shapeless = [&](const RankOps& r, int s) {
    const auto& idx = r.split.steps[static_cast<std::size_t>(s)];
    return std::count_if(idx.begin(), idx.end(), [&](std::size_t i) { return r.ops[i].shape_missing; });
  };
  std::map<int, ConfigMatch> matched;  // by step, from rank 0
  const bool any_shapeless = std::any_of(selected.begin(), selected.end(), [&](int s) { return shapeless(r0, s) > 0; });
  const bool graph_mode = std::any_of(r0.ops.begin(), r0.ops.end(), [](const ImportedOp& o) { return o.graph_launch >= 0; });
  RecordedRun run;
  std::optional<RankLayerShape> layer;
  if (any_shapeless && opt.layer_shape) {
    const std::string why = fmt::format("{} has kernels without shapes{}, which take theirs from --config", r0.trace.file,
                                        graph_mode ? " (CUDA graph replays)" : "");
    if (!opt.tokens) throw InputError(fmt::format("--tokens: required: {}; give the query tokens per request of the "
                                                  "recorded step (1 + draft tokens for a verify step)", why));
    if (!opt.kv_len) throw InputError(fmt::format("--kv-len: required: {}; give the KV length each request attended over", why));
    run.tp = tp;
    run.tokens = *opt.tokens;
    run.batch = opt.batch.value_or(1);
    run.kv_len = *opt.kv_len;
    layer = opt.layer_shape(tp);
    for (auto& r : ranks)
      for (int s : selected) {
        ConfigMatch m = match_config_shapes(r.ops, r.split.steps[static_cast<std::size_t>(s)], *layer, run, r.trace.file);
        if (&r == &r0) matched[s] = m;
        // What the config gave no role keeps its measured us; it was recognised, not shapeless.
        for (std::size_t i : r.split.steps[static_cast<std::size_t>(s)]) r.ops[i].shape_missing = false;
      }
  }
  check_rank_ops_match(ranks, selected);

  // Collective cost: aligned across ranks when there are several, else the raw duration.
  std::optional<CollectiveAlignment> alignment;
  if (ranks.size() > 1) {
    std::vector<std::vector<CollectiveTiming>> timings(ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r)
      for (const auto& op : ranks[r].ops)
        if (op.collective) timings[r].push_back({op.collective_start, op.collective_end});
    alignment = align_collectives(timings);
  }

  KinetoImport result;
  ImportSummary& sum = result.summary;
  Trace& t = result.trace;
  for (const auto& r : ranks) sum.files.push_back(r.trace.file);
  sum.tp = tp;
  sum.step_method = r0.split.method;
  sum.steps_found = static_cast<int>(r0.split.steps.size());
  sum.complete_steps = static_cast<int>(std::count(r0.split.complete.begin(), r0.split.complete.end(), true));
  sum.steps_imported = selected;

  std::map<std::string, ImportSummaryRow> rows;
  std::map<std::string, int> missing_shape;  // recognised kind -> ops without shape
  int unrecognised_ops = 0;
  double unrecognised_us = 0;
  std::vector<std::string> step_notes;
  std::vector<std::int64_t> gemm_m;
  std::vector<DType> gemm_dtype;
  std::int64_t kv_len = 0;

  for (int s : selected) {
    Step step;
    step.name = "verify";
    double span_start = 1e300, span_end = -1e300, collective_us = 0, graph_gap_us = 0;
    const auto& idx0 = r0.split.steps[static_cast<std::size_t>(s)];
    for (std::size_t j = 0; j < idx0.size(); ++j) {
      const ImportedOp& io = r0.ops[idx0[j]];
      Op op = io.op;
      double mean_kernel = 0, mean_copy = 0, mean_gap = 0;
      for (const auto& r : ranks) {
        const ImportedOp& o = r.ops[r.split.steps[static_cast<std::size_t>(s)][j]];
        mean_kernel += o.kernel_us + graph_gaps_inside(o);
        mean_copy += o.folded_copy_us;
        mean_gap += graph_gap_before(r, s, j);
      }
      mean_kernel /= static_cast<double>(ranks.size());
      mean_copy /= static_cast<double>(ranks.size());
      mean_gap /= static_cast<double>(ranks.size());
      graph_gap_us += mean_gap;
      if (io.collective) {
        if (alignment) {
          op.us = alignment->cost_us[static_cast<std::size_t>(r0.collective_ordinal[idx0[j]])] + mean_copy;
          op.us_source = UsSource::aligned;
        } else {
          op.us = io.kernel_us + io.folded_copy_us;  // upper bound: includes waiting (see notes)
        }
        collective_us += *op.us;
        // The boundary before a collective goes to the op before it, so that it stays when a
        // replay swaps the allreduce for another strategy's.
        if (!step.ops.empty() && !step.ops.back().is_comm()) *step.ops.back().us += mean_gap;
      } else {
        op.us = mean_kernel + mean_gap;  // compute ops: any rank is a measurement; the mean halves the noise
      }
      span_start = std::min(span_start, io.start);
      span_end = std::max(span_end, io.end);
      step.ops.push_back(std::move(op));

      if (s == selected.front()) {
        for (const auto& k : io.kernels) {
          std::string what;
          if (io.op.kind == OpKind::other)
            what = io.shape_missing ? io.recognised_as + " without shape"
                   : io.recognised_as == "other" ? "unrecognised" : io.recognised_as;
          auto& row = rows[std::string(to_string(io.op.kind)) + "|" + what + "|" + k.name];
          row.kind = to_string(io.op.kind);
          row.what = what;
          row.family = k.family;
          row.kernel = k.name;
          ++row.count;
          row.us += k.us;
        }
        if (io.shape_missing) ++missing_shape[io.recognised_as];
        if (io.op.kind == OpKind::other && !io.shape_missing && io.recognised_as == "other") {
          ++unrecognised_ops;
          unrecognised_us += io.kernel_us;
        }
        if (io.op.kind == OpKind::gemm) { gemm_m.push_back(io.op.m); gemm_dtype.push_back(io.op.dtype); }
        if (io.op.kind == OpKind::attention) kv_len = std::max(kv_len, io.op.kv_len);
      }
    }
    auto match = matched.find(s);
    int layers = 0;
    if (match == matched.end()) layers = assign_layers(step.ops);
    else {
      layers = match->second.layers;
      if (!match->second.shapes) name_layer_roles(step.ops);
    }
    double busy = 0;
    for (const auto& op : step.ops) busy += *op.us;
    const double span = span_end - span_start;
    if (!alignment && collective_us > 0) {
      // One rank: its collective kernels mix work with waiting for the others, so whether the
      // GPU was kept busy cannot be told.
      step_notes.push_back(fmt::format("step {}: GPU span {:.1f} us on one rank with collectives whose waiting "
                                       "cannot be separated from work: not recorded as measured_us", s, span));
    } else if (span > 0 && busy >= kGpuBoundBusyShare * span) {
      step.measured_us = span;
      step_notes.push_back(fmt::format("step {}: GPU span {:.1f} us, busy {:.0f} %: GPU-bound, recorded as measured_us",
                                       s, span, 100.0 * busy / span));
    } else {
      step_notes.push_back(fmt::format("step {}: GPU span {:.1f} us but the GPU was busy only {:.0f} % of it "
                                       "(launch/CPU-bound, eager mode?): not recorded as measured_us",
                                       s, span, span > 0 ? 100.0 * busy / span : 0.0));
    }
    if (graph_gap_us > 0)
      step_notes.push_back(fmt::format("step {}: {:.1f} us of kernel boundaries inside CUDA graphs added to the ops "
                                       "that follow them", s, graph_gap_us));
    if (s == selected.front()) {
      for (const auto& op : step.ops) ++sum.ops_by_kind[to_string(op.kind)];
      sum.op_us_per_step = busy;
      sum.collective_us_per_step = collective_us;
      if (layers == 0) sum.warnings.push_back("no allreduces in the step: layers are not numbered (layer -1)");
      std::vector<const ImportedOp*> step_io;
      std::vector<double> step_us;
      for (std::size_t j = 0; j < idx0.size(); ++j) {
        step_io.push_back(&r0.ops[idx0[j]]);
        step_us.push_back(*step.ops[j].us);
      }
      for (const auto& path : recorded_allreduce_paths(step_io, step_us)) sum.allreduce_paths.push_back(describe(path));
      if (match != matched.end()) {
        const ConfigMatch& m = match->second;
        int kept = 0;
        double kept_us = 0;
        std::map<std::string, int> kept_names;
        // Unrecognised kernels have their own warning; these are the recognised ones without a role.
        for (std::size_t j = 0; j < idx0.size(); ++j) {
          const Op& op = step.ops[j];
          if (op.kind != OpKind::other || r0.ops[idx0[j]].recognised_as == "other") continue;
          ++kept;
          kept_us += *op.us;
          ++kept_names[op.name];
        }
        sum.shape_source = fmt::format(
            "from --config {} ({}, tp {}, {} token(s) x {} request(s), kv {}): {} layers of {} ops from op {}, {} ops "
            "typed{}", layer->model_name, layer->model_type, run.tp, run.tokens, run.batch, run.kv_len, m.layers,
            m.period, m.first, m.typed, m.shapes ? "" : " (no layer template for this architecture: layers numbered, ops measured)");
        if (kept > 0) {
          std::string names;
          for (const auto& [n, c] : kept_names) names += fmt::format("{}{} x{}", names.empty() ? "" : ", ", n, c);
          sum.warnings.push_back(fmt::format("{} op(s) per step ({:.1f} us) fit no role of the --config layer and keep "
                                             "their measured us as `other`: {}", kept, kept_us, names));
        }
      }
    }
    t.steps.push_back(std::move(step));
  }
  for (auto& [key, row] : rows) sum.kernels.push_back(row);

  // Warnings: everything that was lost or estimated.
  if (!r0.trace.record_shapes && matched.empty() && !graph_mode)
    sum.warnings.push_back(fmt::format("{}: recorded without record_shapes: GEMM, attention and norm shapes are "
                                       "unknown, so those ops are imported as `other` with their measured us and "
                                       "cannot be re-priced by a cost model; profile with record_shapes=True",
                                       r0.trace.file));
  if (!matched.empty()) missing_shape.clear();
  for (const auto& [kind, n] : missing_shape)
    sum.warnings.push_back(fmt::format("{} {} op(s) per step had no CPU op with a usable shape: imported as "
                                       "`other` (measured us only)", n, kind));
  if (any_shapeless && !opt.layer_shape && graph_mode)
    sum.warnings.push_back(fmt::format("{}: the kernels replayed from CUDA graphs carry no shapes: pass --config, "
                                       "--tokens and --kv-len to type them and number the layers", r0.trace.file));
  if (unrecognised_ops > 0)
    sum.warnings.push_back(fmt::format("{} op(s) per step ({:.1f} us) from unrecognised kernels: imported as "
                                       "`other` with their measured us", unrecognised_ops, unrecognised_us));
  if (!alignment && r0.collectives > 0)
    sum.warnings.push_back("one rank file: collective us are the raw kernel durations, which include waiting for "
                           "the slowest rank: an UPPER BOUND on the collective cost; give every rank's file to "
                           "align them");
  if (alignment && alignment->clamped > 0)
    sum.warnings.push_back(fmt::format("{} collective(s) had no common window across ranks after clock "
                                       "alignment; their cost is the shortest rank's duration", alignment->clamped));
  if (r0.split.unassigned_ops > 0)
    sum.warnings.push_back(fmt::format("{} op(s) launched outside every ProfilerStep range were dropped",
                                       r0.split.unassigned_ops));

  // Meta.
  t.meta.model = opt.model.empty() ? default_model_name(files[0]) : opt.model;
  t.meta.tp = tp;
  t.meta.tokens = static_cast<int>(mode_of<std::int64_t>(gemm_m, 1));
  t.meta.dtype = DType::bf16;
  for (const auto& op : t.steps.front().ops)
    if (op.kind == OpKind::allreduce) { t.meta.dtype = op.dtype; break; }
  if (!gemm_dtype.empty()) t.meta.weight_dtype = mode_of<DType>(gemm_dtype, DType::bf16);
  if (kv_len > 0) t.meta.kv_len = kv_len;
  if (!matched.empty()) {
    t.meta.tokens = static_cast<int>(run.tokens);
    if (run.batch > 1) t.meta.batch = static_cast<int>(run.batch);
  }
  t.meta.source = "imported";

  std::string notes = fmt::format("Imported from {} Kineto trace(s) ", files.size());
  for (std::size_t i = 0; i < ranks.size(); ++i)
    notes += fmt::format("{}{}", i ? ", " : "(", ranks[i].trace.file.substr(ranks[i].trace.file.find_last_of('/') + 1));
  notes += fmt::format(")");
  if (!r0.trace.device_name.empty()) notes += " recorded on " + r0.trace.device_name;
  notes += fmt::format(". Steps: {}; imported step(s) {} of {} found. ", r0.split.method,
                       fmt::join(selected, ","), r0.split.steps.size());
  if (graph_mode)
    notes += "Op us = the op's kernel durations plus the kernel boundaries inside the CUDA graph before and "
             "between them (mean over ranks). ";
  else
    notes += "Op us = sum of the op's kernel durations (mean over ranks); CPU launch gaps between kernels are "
             "dropped, so the step is priced as if launched back to back (CUDA graph). ";
  if (alignment) {
    std::string offs;
    for (std::size_t r = 1; r < alignment->clock_offset_us.size(); ++r)
      offs += fmt::format("{}{:.2f}", offs.empty() ? "" : ", ", alignment->clock_offset_us[r]);
    notes += fmt::format("Collective us: aligned across {} ranks (latest start to earliest end; clock offsets vs "
                         "rank 0: {} us), plus input copies folded into the allreduce. ", ranks.size(), offs);
  } else if (r0.collectives > 0) {
    notes += "Collective us: raw kernel durations of ONE rank, an UPPER BOUND (they include waiting for the "
             "slowest rank). ";
  }
  if (!sum.shape_source.empty()) notes += "Shapes " + sum.shape_source + ". ";
  for (const auto& p : sum.allreduce_paths) notes += "Recorded allreduce path: " + p + ". ";
  for (const auto& n : step_notes) notes += n + ". ";
  for (const auto& w : sum.warnings) notes += w + ". ";
  t.meta.notes = notes;
  return result;
}

Trace import_kineto(const std::vector<std::string>& rank_files, const KinetoImportOptions& options) {
  return import_kineto_with_summary(rank_files, options).trace;
}

}  // namespace eaglesim
