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
#include "import/kernel_classifier.hpp"
#include "import/kineto_ranks.hpp"
#include "import/layer_assigner.hpp"
#include "import/recorded_strategy.hpp"
#include "import/step_splitter.hpp"

namespace eaglesim {

namespace {

// A GPU that is busy at least this share of a step's span is not waiting on the CPU, so the
// span is a real step time; below it (eager mode: launch-bound) the span says more about
// Python than about the GPU and is only reported in the notes.
constexpr double kGpuBoundBusyShare = 0.9;

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

void check_options(const std::vector<std::string>& files, const KinetoImportOptions& opt) {
  if (files.empty()) throw InputError("import kineto: no trace files given (one Chrome-trace JSON per rank)");
  if (opt.like && opt.layer_shape)
    throw InputError(fmt::format("import kineto: {} and a generated trace to take shapes from exclude each other",
                                 setting_name(Setting::config)));
  if (opt.step && opt.all_steps) throw InputError(fmt::format("import kineto: {} and {} exclude each other", setting_name(Setting::step),
                                                          setting_name(Setting::all_steps)));
  if (opt.step && *opt.step < 0) throw InputError(fmt::format("{} {}: expected a step index >= 0", setting_name(Setting::step), *opt.step));
  if (opt.layers_per_step && *opt.layers_per_step <= 0)
    throw InputError(
        fmt::format("{} {}: expected a positive number of layers", setting_name(Setting::layers), *opt.layers_per_step));
}

std::vector<int> select_steps(const RankOps& r0, const KinetoImportOptions& opt) {
  const StepSplit& sp = r0.split;
  std::vector<int> complete;
  for (std::size_t i = 0; i < sp.steps.size(); ++i)
    if (sp.complete[i]) complete.push_back(static_cast<int>(i));
  const std::string list = fmt::format("{}", fmt::join(complete, ", "));
  if (complete.empty())
    throw InputError(fmt::format("{}: no complete step among the {} found ({})", r0.trace.file, sp.steps.size(), sp.method));
  if (opt.all_steps) return complete;
  if (opt.step) {
    if (std::find(complete.begin(), complete.end(), *opt.step) == complete.end())
      throw InputError(fmt::format("{} {}: not a complete step of {} (complete steps: {})", setting_name(Setting::step),
                                   *opt.step, r0.trace.file, list));
    return {*opt.step};
  }
  // Default: the last complete step. The first steps of a profile carry one-time costs (cuBLAS
  // heuristics, allocator growth, lazy initialisation, the profiler's own buffer setup: the
  // first collective of these fixtures is 30x the others), so the latest full step is the
  // closest to steady state.
  return {complete.back()};
}

// Where the shapes of kernels without one came from.
struct ConfigShapes {
  std::map<int, ConfigMatch> matched;  // by step, from rank 0; empty when no config was matched
  bool any_shapeless = false;          // an imported step of rank 0 has kernels without shapes
  bool graph_mode = false;             // rank 0 replays CUDA graphs
  RecordedRun run;
  std::optional<RankLayerShape> layer;
};

// Kernels without shapes take them from the model config, on every rank, before the ranks
// are compared (their signatures hold the shapes).
ConfigShapes match_shapeless_kernels(std::vector<RankOps>& ranks, const std::vector<int>& selected, int tp,
                                     const KinetoImportOptions& opt) {
  RankOps& r0 = ranks[0];
  const auto shapeless = [&](const RankOps& r, int s) {
    const auto& idx = r.split.steps[static_cast<std::size_t>(s)];
    return std::count_if(idx.begin(), idx.end(), [&](std::size_t i) { return r.ops[i].shape_missing; });
  };
  ConfigShapes c;
  c.any_shapeless = std::any_of(selected.begin(), selected.end(), [&](int s) { return shapeless(r0, s) > 0; });
  c.graph_mode = std::any_of(r0.ops.begin(), r0.ops.end(), [](const ImportedOp& o) { return o.graph_launch >= 0; });
  if (!c.any_shapeless || !opt.layer_shape) return c;
  const std::string why = fmt::format("{} has kernels without shapes{}, which take theirs from {}", r0.trace.file,
                                      c.graph_mode ? " (CUDA graph replays)" : "", setting_name(Setting::config));
  if (!opt.tokens)
    throw SettingError(Setting::tokens, fmt::format("required: {}; give the query tokens per request of the recorded "
                                                    "step (1 + draft tokens for a verify step)", why));
  if (!opt.kv_len)
    throw SettingError(Setting::kv_len, fmt::format("required: {}; give the KV length each request attended over", why));
  c.run.tp = tp;
  c.run.tokens = *opt.tokens;
  c.run.batch = opt.batch.value_or(1);
  c.run.kv_len = *opt.kv_len;
  c.layer = opt.layer_shape(tp);
  for (auto& r : ranks)
    for (int s : selected) {
      ConfigMatch m = match_config_shapes(r.ops, r.split.steps[static_cast<std::size_t>(s)], *c.layer, c.run, r.trace.file);
      if (&r == &r0) c.matched[s] = m;
      // What the config gave no role keeps its measured us; it was recognised, not shapeless.
      for (std::size_t i : r.split.steps[static_cast<std::size_t>(s)]) r.ops[i].shape_missing = false;
    }
  return c;
}

// The ranks of the run, read, checked against each other and ready to become trace steps.
struct RankedRun {
  std::vector<RankOps> ranks;
  int tp = 1;
  std::vector<int> selected;  // indices of the steps to import
  ConfigShapes config;
  std::optional<CollectiveAlignment> alignment;  // empty with one rank
  const RankOps& r0() const { return ranks[0]; }
  const std::vector<std::size_t>& r0_step(int s) const { return ranks[0].split.steps[static_cast<std::size_t>(s)]; }
};

// What the summary and the meta count over the kernels of the first imported step (rank 0).
struct KernelTally {
  std::map<std::string, ImportSummaryRow> rows;
  std::map<std::string, int> missing_shape;  // recognised kind -> ops without shape
  int unrecognised_ops = 0;
  double unrecognised_us = 0;
  std::vector<std::int64_t> gemm_m;
  std::vector<DType> gemm_dtype;
  std::int64_t kv_len = 0;
};

void tally_kernels(KernelTally& tally, const RankOps& r0, const std::vector<std::size_t>& idx0) {
  for (std::size_t j = 0; j < idx0.size(); ++j) {
    const ImportedOp& io = r0.ops[idx0[j]];
    for (const auto& k : io.kernels) {
      std::string what;
      if (io.op.kind == OpKind::other)
        what = io.shape_missing ? io.recognised_as + " without shape"
               : io.recognised_as == "other" ? "unrecognised" : io.recognised_as;
      auto& row = tally.rows[std::string(to_string(io.op.kind)) + "|" + what + "|" + k.name];
      row.kind = to_string(io.op.kind);
      row.what = what;
      row.family = k.family;
      row.kernel = k.name;
      ++row.count;
      row.us += k.us;
    }
    if (io.shape_missing) ++tally.missing_shape[io.recognised_as];
    if (io.op.kind == OpKind::other && !io.shape_missing && io.recognised_as == "other") {
      ++tally.unrecognised_ops;
      tally.unrecognised_us += io.kernel_us;
    }
    if (io.op.kind == OpKind::gemm) { tally.gemm_m.push_back(io.op.m); tally.gemm_dtype.push_back(io.op.dtype); }
    if (io.op.kind == OpKind::attention) tally.kv_len = std::max(tally.kv_len, io.op.kv_len);
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

// Op j of step s, mean over ranks.
struct OpMeans {
  double kernel = 0, copy = 0, gap = 0;
};

OpMeans op_means_over_ranks(const std::vector<RankOps>& ranks, int s, std::size_t j) {
  OpMeans mean;
  for (const auto& r : ranks) {
    const ImportedOp& o = r.ops[r.split.steps[static_cast<std::size_t>(s)][j]];
    mean.kernel += o.kernel_us + graph_gaps_inside(o);
    mean.copy += o.folded_copy_us;
    mean.gap += graph_gap_before(r, s, j);
  }
  mean.kernel /= static_cast<double>(ranks.size());
  mean.copy /= static_cast<double>(ranks.size());
  mean.gap /= static_cast<double>(ranks.size());
  return mean;
}

// One imported step and the figures its notes and the summary need.
struct BuiltStep {
  Step step;
  double span = 0;           // GPU time from the first op's start to the last op's end (rank 0)
  double busy = 0;           // sum of the ops' us
  double collective_us = 0;  // part of `busy` that is collectives
  double graph_gap_us = 0;   // kernel boundaries inside CUDA graphs added to the ops
  int layers = 0;
};

// Layers numbered from the allreduces, or from the config's repetition when it was matched.
int number_layers(std::vector<Op>& ops, const ConfigShapes& config, int s) {
  auto match = config.matched.find(s);
  if (match == config.matched.end()) return assign_layers(ops);
  if (!match->second.shapes) name_layer_roles(ops);
  return match->second.layers;
}

BuiltStep build_step(const RankedRun& in, int s) {
  BuiltStep b;
  Step& step = b.step;
  step.name = "verify";
  double span_start = 1e300, span_end = -1e300;
  const RankOps& r0 = in.r0();
  const auto& idx0 = in.r0_step(s);
  for (std::size_t j = 0; j < idx0.size(); ++j) {
    const ImportedOp& io = r0.ops[idx0[j]];
    Op op = io.op;
    const OpMeans mean = op_means_over_ranks(in.ranks, s, j);
    b.graph_gap_us += mean.gap;
    if (io.collective) {
      if (in.alignment) {
        op.us = in.alignment->cost_us[static_cast<std::size_t>(r0.collective_ordinal[idx0[j]])] + mean.copy;
        op.us_source = UsSource::aligned;
      } else {
        op.us = io.kernel_us + io.folded_copy_us;  // upper bound: includes waiting (see notes)
      }
      b.collective_us += *op.us;
      // The boundary before a collective goes to the op before it, so that it stays when a
      // replay swaps the allreduce for another strategy's.
      if (!step.ops.empty() && !step.ops.back().is_comm()) *step.ops.back().us += mean.gap;
    } else {
      op.us = mean.kernel + mean.gap;  // compute ops: any rank is a measurement; the mean halves the noise
    }
    span_start = std::min(span_start, io.start);
    span_end = std::max(span_end, io.end);
    step.ops.push_back(std::move(op));
  }
  b.layers = number_layers(step.ops, in.config, s);
  for (const auto& op : step.ops) b.busy += *op.us;
  b.span = span_end - span_start;
  return b;
}

// The span is the step's measured_us only when the GPU was kept busy through it; the notes say
// which and why.
void record_step_span(BuiltStep& b, int s, bool aligned, std::vector<std::string>& step_notes) {
  const double span = b.span, busy = b.busy;
  if (!aligned && b.collective_us > 0) {
    // One rank: its collective kernels mix work with waiting for the others, so whether the
    // GPU was kept busy cannot be told.
    step_notes.push_back(fmt::format("step {}: GPU span {:.1f} us on one rank with collectives whose waiting "
                                     "cannot be separated from work: not recorded as measured_us", s, span));
  } else if (span > 0 && busy >= kGpuBoundBusyShare * span) {
    b.step.measured_us = span;
    step_notes.push_back(fmt::format("step {}: GPU span {:.1f} us, busy {:.0f} %: GPU-bound, recorded as measured_us",
                                     s, span, 100.0 * busy / span));
  } else {
    step_notes.push_back(fmt::format("step {}: GPU span {:.1f} us but the GPU was busy only {:.0f} % of it "
                                     "(launch/CPU-bound, eager mode?): not recorded as measured_us",
                                     s, span, span > 0 ? 100.0 * busy / span : 0.0));
  }
  if (b.graph_gap_us > 0)
    step_notes.push_back(fmt::format("step {}: {:.1f} us of kernel boundaries inside CUDA graphs added to the ops "
                                     "that follow them", s, b.graph_gap_us));
}

// How the config typed the step, and the recognised ops it gave no role.
void summarise_config_match(ImportSummary& sum, const std::vector<Op>& ops, const RankedRun& in, int s,
                            const ConfigMatch& m) {
  const auto& idx0 = in.r0_step(s);
  const RecordedRun& run = in.config.run;
  const RankLayerShape& layer = *in.config.layer;
  int kept = 0;
  double kept_us = 0;
  std::map<std::string, int> kept_names;
  // Unrecognised kernels have their own warning; these are the recognised ones without a role.
  for (std::size_t j = 0; j < idx0.size(); ++j) {
    const Op& op = ops[j];
    if (op.kind != OpKind::other || in.r0().ops[idx0[j]].recognised_as == "other") continue;
    ++kept;
    kept_us += *op.us;
    ++kept_names[op.name];
  }
  sum.shape_source = fmt::format(
      "from {} {} ({}, tp {}, {} token(s) x {} request(s), kv {}): {} layers of {} ops from op {}, {} ops "
      "typed{}", setting_name(Setting::config), layer.model_name, layer.model_type, run.tp, run.tokens, run.batch, run.kv_len, m.layers,
      m.period, m.first, m.typed, m.shapes ? "" : " (no layer template for this architecture: layers numbered, ops measured)");
  if (kept > 0) {
    std::string names;
    for (const auto& [n, c] : kept_names) names += fmt::format("{}{} x{}", names.empty() ? "" : ", ", n, c);
    sum.warnings.push_back(fmt::format("{} op(s) per step ({:.1f} us) fit no role of the {} layer and keep "
                                       "their measured us as `other`: {}",
                                       kept, kept_us, setting_name(Setting::config), names));
  }
}

// The per-step figures of the summary, from the first imported step.
void summarise_first_step(ImportSummary& sum, const BuiltStep& b, const RankedRun& in, int s) {
  const auto& idx0 = in.r0_step(s);
  for (const auto& op : b.step.ops) ++sum.ops_by_kind[to_string(op.kind)];
  sum.op_us_per_step = b.busy;
  sum.collective_us_per_step = b.collective_us;
  if (b.layers == 0) sum.warnings.push_back("no allreduces in the step: layers are not numbered (layer -1)");
  std::vector<const ImportedOp*> step_io;
  std::vector<double> step_us;
  for (std::size_t j = 0; j < idx0.size(); ++j) {
    step_io.push_back(&in.r0().ops[idx0[j]]);
    step_us.push_back(*b.step.ops[j].us);
  }
  for (const auto& path : recorded_allreduce_paths(step_io, step_us)) sum.allreduce_paths.push_back(describe(path));
  if (auto match = in.config.matched.find(s); match != in.config.matched.end())
    summarise_config_match(sum, b.step.ops, in, s, match->second);
}

// What the summary says about the run before any step is built.
void summarise_run(ImportSummary& sum, const RankedRun& in) {
  const RankOps& r0 = in.r0();
  for (const auto& r : in.ranks) sum.files.push_back(r.trace.file);
  sum.tp = in.tp;
  sum.step_method = r0.split.method;
  sum.steps_found = static_cast<int>(r0.split.steps.size());
  sum.complete_steps = static_cast<int>(std::count(r0.split.complete.begin(), r0.split.complete.end(), true));
  sum.steps_imported = in.selected;
}

// The selected steps as trace steps; the first one also fills the summary's per-step figures
// and the kernel tally. Returns the steps' notes.
std::vector<std::string> build_steps(const RankedRun& in, KinetoImport& result, KernelTally& tally) {
  std::vector<std::string> step_notes;
  for (int s : in.selected) {
    BuiltStep b = build_step(in, s);
    record_step_span(b, s, in.alignment.has_value(), step_notes);
    if (s == in.selected.front()) {
      tally_kernels(tally, in.r0(), in.r0_step(s));
      summarise_first_step(result.summary, b, in, s);
    }
    result.trace.steps.push_back(std::move(b.step));
  }
  for (auto& [key, row] : tally.rows) result.summary.kernels.push_back(row);
  return step_notes;
}

// Warnings: everything that was lost or estimated.
void add_import_warnings(ImportSummary& sum, const RankedRun& in, const KernelTally& tally,
                         const KinetoImportOptions& opt) {
  const RankOps& r0 = in.r0();
  const ConfigShapes& config = in.config;
  if (!r0.trace.record_shapes && config.matched.empty() && !config.graph_mode && !opt.like)
    sum.warnings.push_back(fmt::format("{}: recorded without record_shapes: GEMM, attention and norm shapes are "
                                       "unknown, so those ops are imported as `other` with their measured us and "
                                       "cannot be re-priced by a cost model; profile with record_shapes=True",
                                       r0.trace.file));
  if (config.matched.empty() && !opt.like)
    for (const auto& [kind, n] : tally.missing_shape)
      sum.warnings.push_back(fmt::format("{} {} op(s) per step had no CPU op with a usable shape: imported as "
                                         "`other` (measured us only)", n, kind));
  if (config.any_shapeless && !opt.layer_shape && !opt.like && config.graph_mode)
    sum.warnings.push_back(fmt::format("{}: the kernels replayed from CUDA graphs carry no shapes: pass {}, {} and {} "
                                       "to type them and number the layers",
                                       r0.trace.file, setting_name(Setting::config), setting_name(Setting::tokens),
                                       setting_name(Setting::kv_len)));
  if (tally.unrecognised_ops > 0)
    sum.warnings.push_back(fmt::format("{} op(s) per step ({:.1f} us) from unrecognised kernels: imported as "
                                       "`other` with their measured us", tally.unrecognised_ops, tally.unrecognised_us));
  if (!in.alignment && r0.collectives > 0)
    sum.warnings.push_back("one rank file: collective us are the raw kernel durations, which include waiting for "
                           "the slowest rank: an UPPER BOUND on the collective cost; give every rank's file to "
                           "align them");
  if (in.alignment && in.alignment->clamped > 0)
    sum.warnings.push_back(fmt::format("{} collective(s) had no common window across ranks after clock "
                                       "alignment; their cost is the shortest rank's duration", in.alignment->clamped));
  if (r0.split.unassigned_ops > 0)
    sum.warnings.push_back(fmt::format("{} op(s) launched outside every ProfilerStep range were dropped",
                                       r0.split.unassigned_ops));
}

void fill_meta(Trace& t, const std::vector<std::string>& files, const KinetoImportOptions& opt, const RankedRun& in,
               const KernelTally& tally) {
  t.meta.model = opt.model.empty() ? default_model_name(files[0]) : opt.model;
  t.meta.tp = in.tp;
  t.meta.tokens = static_cast<int>(mode_of<std::int64_t>(tally.gemm_m, 1));
  t.meta.dtype = DType::bf16;
  for (const auto& op : t.steps.front().ops)
    if (op.kind == OpKind::allreduce) { t.meta.dtype = op.dtype; break; }
  if (!tally.gemm_dtype.empty()) t.meta.weight_dtype = mode_of<DType>(tally.gemm_dtype, DType::bf16);
  if (tally.kv_len > 0) t.meta.kv_len = tally.kv_len;
  if (!in.config.matched.empty()) {
    t.meta.tokens = static_cast<int>(in.config.run.tokens);
    if (in.config.run.batch > 1) t.meta.batch = static_cast<int>(in.config.run.batch);
  }
  t.meta.source = "imported";
}

std::string import_notes(const std::vector<std::string>& files, const RankedRun& in, const ImportSummary& sum,
                         const std::vector<std::string>& step_notes) {
  const RankOps& r0 = in.r0();
  const auto& ranks = in.ranks;
  std::string notes = fmt::format("Imported from {} Kineto trace(s) ", files.size());
  for (std::size_t i = 0; i < ranks.size(); ++i)
    notes += fmt::format("{}{}", i ? ", " : "(", ranks[i].trace.file.substr(ranks[i].trace.file.find_last_of('/') + 1));
  notes += fmt::format(")");
  if (!r0.trace.device_name.empty()) notes += " recorded on " + r0.trace.device_name;
  notes += fmt::format(". Steps: {}; imported step(s) {} of {} found. ", r0.split.method,
                       fmt::join(in.selected, ","), r0.split.steps.size());
  if (in.config.graph_mode)
    notes += "Op us = the op's kernel durations plus the kernel boundaries inside the CUDA graph before and "
             "between them (mean over ranks). ";
  else
    notes += "Op us = sum of the op's kernel durations (mean over ranks); CPU launch gaps between kernels are "
             "dropped, so the step is priced as if launched back to back (CUDA graph). ";
  if (in.alignment) {
    std::string offs;
    for (std::size_t r = 1; r < in.alignment->clock_offset_us.size(); ++r)
      offs += fmt::format("{}{:.2f}", offs.empty() ? "" : ", ", in.alignment->clock_offset_us[r]);
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
  return notes;
}


// Whether a recorded op (what its kernels were recognised as) can be the generated op: GEMMs meet
// GEMMs, attention attention, collectives allreduces, and every other kernel any other op.
bool same_role(const ImportedOp& io, const Op& generated) {
  const bool recorded_gemm = io.recognised_as == to_string(KernelClass::gemm) || io.op.is_matmul();
  const bool recorded_attention = io.recognised_as == to_string(KernelClass::attention) || io.op.kind == OpKind::attention;
  if (generated.is_matmul()) return recorded_gemm;
  if (generated.kind == OpKind::attention) return recorded_attention;
  if (generated.is_comm()) return io.collective;
  return !recorded_gemm && !recorded_attention && !io.collective;
}

// A residual add and the RMSNorm of the same rows after it, which the engines run as one kernel.
bool add_norm_pair(const std::vector<Op>& ops, std::size_t j) {
  return j + 1 < ops.size() && ops[j].kind == OpKind::residual_add && ops[j + 1].kind == OpKind::rmsnorm &&
         ops[j].tokens == ops[j + 1].tokens && ops[j].hidden == ops[j + 1].hidden;
}

[[noreturn]] void inventory_mismatch(const std::string& where, const std::string& what, const std::string& like_file) {
  throw InputError(fmt::format("{}: {}: the generated engine's inventory ({}) is not what was recorded", where, what,
                               like_file));
}

// KinetoImportOptions::like: every imported step's ops take the generated verify step's kinds,
// shapes, names and layers, place by place, and keep their measured us. A recorded fused add +
// RMSNorm kernel meets the generated pair: the add gets 0 us, the norm the kernel's (the
// simulator prices such a pair as one kernel at the add's place).
void take_generated_shapes(KinetoImport& result, const RankedRun& in, const KinetoImportOptions& opt) {
  const std::vector<Op>& gen = opt.like->verify().ops;
  for (std::size_t k = 0; k < in.selected.size(); ++k) {
    const int s = in.selected[k];
    Step& step = result.trace.steps[k];
    const auto& idx0 = in.r0_step(s);
    const std::string where = fmt::format("{}: step {}", in.r0().trace.file, s);
    std::vector<Op> typed;
    std::size_t j = 0;
    for (std::size_t r = 0; r < step.ops.size(); ++r) {
      const ImportedOp& io = in.r0().ops[idx0[r]];
      const std::string recorded =
          fmt::format("{} ({})", io.recognised_as, io.kernels.empty() ? std::string() : io.kernels.front().name);
      if (j >= gen.size())
        inventory_mismatch(where, fmt::format("op {} is {}, past the generated step's {} ops", r, recorded, gen.size()),
                           opt.like_file);
      if (add_norm_pair(gen, j) && io.recognised_as == to_string(KernelClass::fused_add_norm)) {
        Op add = gen[j], norm = gen[j + 1];
        add.us = 0.0;
        norm.us = step.ops[r].us;
        typed.push_back(std::move(add));
        typed.push_back(std::move(norm));
        j += 2;
        continue;
      }
      // Kernels the importer grouped into one op (PyTorch's SiLU then multiply, in one replay)
      // that the generated step lists one by one: each kernel its op, the group's us shared in
      // proportion to the kernels' durations.
      if (io.kernels.size() > 1 && gen[j].kind == OpKind::elementwise && same_role(io, gen[j]) &&
          j + io.kernels.size() <= gen.size()) {
        const std::size_t n = io.kernels.size();
        bool small = true;
        for (std::size_t q = j; q < j + n; ++q)
          small = small && !gen[q].is_matmul() && gen[q].kind != OpKind::attention && !gen[q].is_comm();
        double kernel_sum = 0;
        for (const auto& kern : io.kernels) kernel_sum += kern.us;
        if (small && kernel_sum > 0) {
          for (std::size_t q = 0; q < n; ++q) {
            Op op = gen[j + q];
            op.us = *step.ops[r].us * io.kernels[q].us / kernel_sum;
            typed.push_back(std::move(op));
          }
          j += n;
          continue;
        }
      }
      if (!same_role(io, gen[j]))
        inventory_mismatch(where,
                           fmt::format("op {} is {} where the generated step has {} '{}' (op {}, layer {})", r, recorded,
                                       to_string(gen[j].kind), gen[j].name, j, gen[j].layer),
                           opt.like_file);
      Op op = gen[j++];
      op.us = step.ops[r].us;
      op.us_source = step.ops[r].us_source;
      typed.push_back(std::move(op));
    }
    if (j != gen.size())
      inventory_mismatch(where,
                         fmt::format("{} recorded ops end at the generated step's op {} of {} ('{}', layer {})",
                                     step.ops.size(), j, gen.size(), gen[j].name, gen[j].layer),
                         opt.like_file);
    step.ops = std::move(typed);
  }
  const TraceMeta& g = opt.like->meta;
  TraceMeta& m = result.trace.meta;
  m.tokens = g.tokens;
  m.batch = g.batch;
  m.kv_len = g.kv_len;
  m.kv_lens = g.kv_lens;
  m.weight_dtype = g.weight_dtype;
  m.engine = g.engine;
  if (g.speculative) m.speculative = g.speculative;
  if (opt.model.empty()) m.model = g.model;
  m.notes += fmt::format("Kinds and shapes from the generated trace {} (place by place). ", opt.like_file);
}

}  // namespace

KinetoImport import_kineto_with_summary(const std::vector<std::string>& files, const KinetoImportOptions& opt) {
  check_options(files, opt);
  RankedRun in;
  in.ranks = read_ranks_in_rank_order(files);
  in.tp = resolve_tp(in.ranks, opt.tp);
  cut_ranks_into_steps(in.ranks, opt.layers_per_step);
  in.selected = select_steps(in.r0(), opt);
  check_rank_steps_match(in.ranks);
  in.config = match_shapeless_kernels(in.ranks, in.selected, in.tp, opt);
  check_rank_ops_match(in.ranks, in.selected);
  // Collective cost: aligned across ranks when there are several, else the raw duration.
  in.alignment = align_rank_collectives(in.ranks);

  KinetoImport result;
  summarise_run(result.summary, in);
  KernelTally tally;
  const std::vector<std::string> step_notes = build_steps(in, result, tally);
  add_import_warnings(result.summary, in, tally, opt);
  fill_meta(result.trace, files, opt, in, tally);
  result.trace.meta.notes = import_notes(files, in, result.summary, step_notes);
  if (opt.like) take_generated_shapes(result, in, opt);
  return result;
}

Trace import_kineto(const std::vector<std::string>& rank_files, const KinetoImportOptions& options) {
  return import_kineto_with_summary(rank_files, options).trace;
}

}  // namespace eaglesim
