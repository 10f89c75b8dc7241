#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "domain/cycle_parts.hpp"
#include "domain/ranking.hpp"
#include "domain/roofline.hpp"
#include "comm/strategy_facts.hpp"
#include "domain/speculation_verdict.hpp"
#include "report/printers.hpp"
#include "report/strategy_notes.hpp"

namespace eaglesim {

namespace {

std::string scenario_line(const Scenario& sc) {
  return fmt::format("scenario: {} (tp={}, {} ranks, batch {}) on {}, backend {}, trace {}\nacceptance: {}",
                     sc.model, sc.tp, sc.ranks, sc.batch, sc.topology, sc.backend, sc.trace_file,
                     sc.acceptance.describe(sc.draft_tokens));
}

std::string breakeven_cell(const StrategyResult& r) {
  if (r.decode_us <= 0) return "n/a";
  if (!r.breakeven_accept_rate) return "none";
  return fmt::format("{:.2f}", *r.breakeven_accept_rate);
}

// The header, a rule and the rows, each column as wide as its widest cell: names (the first
// `text_columns` columns) left-aligned, numbers right-aligned.
std::string aligned_columns(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                            std::size_t text_columns = 1) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) s += "  ";
      s += c < text_columns ? fmt::format("{:<{}}", cells[c], width[c]) : fmt::format("{:>{}}", cells[c], width[c]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header);
  std::size_t total = 0;
  for (std::size_t w : width) total += w;
  out += std::string(total + 2 * (width.size() - 1), '-') + "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

// A roofline row's split by op size: the large ops' count and share of their floor, the small
// ops' count and µs over their floor per op ("-" where there is none).
std::vector<std::string> by_size_cells(const RooflineRow& row) {
  if (!row.by_size) return {"-", "-", "-", "-"};
  const std::optional<double>& pct = row.large.pct_of_floor;
  const std::optional<double>& excess = row.small.excess_us_per_op;
  return {fmt::format("{}", row.large.ops), pct ? fmt::format("{:.1f}", *pct) : "-", fmt::format("{}", row.small.ops),
          excess ? fmt::format("{:.2f}", *excess) : "-"};
}

// Per strategy and op kind of the verify step, how far the measured time is from the device's
// floor, and for the kind's ops of >= 16 MB and the smaller ones apart; nothing when no result
// carries its device's ceilings (the simulator).
std::string roofline_block(const Report& report) {
  const DeviceCeilings* ceilings = nullptr;
  std::vector<std::vector<std::string>> rows;
  for (const StrategyResult& r : report.results) {
    if (!r.supported || !r.verify.ceilings) continue;
    if (!ceilings) ceilings = &*r.verify.ceilings;
    for (const RooflineRow& row : roofline_rows(r.verify)) {
      std::vector<std::string> cells{r.strategy, to_string(row.kind), fmt::format("{:.1f}", row.us),
                                     fmt::format("{:.3f}", row.bytes / 1e6), fmt::format("{:.3f}", row.flops / 1e9),
                                     fmt::format("{:.0f}", row.gbps), fmt::format("{:.1f}", row.tflops),
                                     fmt::format("{:.1f}", row.floor_us), fmt::format("{:.1f}", row.pct_of_floor)};
      for (std::string& c : by_size_cells(row)) cells.push_back(std::move(c));
      rows.push_back(std::move(cells));
    }
  }
  if (!ceilings) return "";
  std::string out = fmt::format(
      "\nroofline (verify step, op kinds with >= {:.0f}% of it; {}: read {:.0f} GB/s, bf16 {:.0f} TFLOP/s; "
      "floor = max(bytes / read, FLOPs / bf16); ops moving >= {:.0f} MB each by their share of their floor, "
      "smaller ones by their us over it per op):\n",
      100.0 * kRooflineMinShare, ceilings->device, ceilings->read_gbps, ceilings->bf16_tflops,
      kRooflineLargeOpBytes / 1e6);
  const std::string mb = fmt::format("{:.0f}MB", kRooflineLargeOpBytes / 1e6);
  out += aligned_columns({"strategy", "kind", "us", "MB", "GFLOP", "GB/s", "TFLOP/s", "floor us", "% of floor",
                          ">=" + mb + " ops", ">=" + mb + " % of floor", "<" + mb + " ops",
                          "<" + mb + " us over floor/op"},
                         rows, 2);
  return out;
}

// "43008" -> "42 KiB": whole KiB and MiB as such, else bytes.
std::string bytes_text(std::int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1 << 10) && b % (1 << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

// The engine strategies' paths for the verify step's allreduces, one line per group; nothing when
// no result has any.
std::string dispatch_block(const Report& report) {
  std::string out;
  for (const StrategyResult& r : report.results) {
    if (!r.supported) continue;
    for (const DispatchGroup& g : r.verify.dispatch) {
      if (out.empty()) out = "\nengine dispatch, verify step (the path each allreduce takes there, and why):\n";
      out += fmt::format("  {}: {} x {}{} -> {} [{}]{}: {}\n", r.strategy, g.count, bytes_text(g.bytes),
                         g.fuses ? " + residual add + RMSNorm" : "", g.path, g.model,
                         g.us > 0 ? fmt::format(", {:.2f} us each", g.us) : "", g.reason);
    }
  }
  return out;
}

// What each part of the cycle costs, per strategy, for a trace of the engine's cycle (a
// draft-extend step or per-cycle ops); nothing for a trace of the forwards alone, whose parts are
// the draft and verify columns already.
std::string cycle_parts_block(const Report& report) {
  bool any = false;
  int forwards = 0;
  for (const StrategyResult& r : report.results)
    if (has_engine_cycle(r)) {
      any = true;
      forwards = r.draft ? r.draft_forwards : 0;
    }
  if (!any) return "";
  const std::vector<std::string> header{"strategy",   "draft-extend", fmt::format("{} x draft fwd", forwards),
                                        "top-k",      "tree build",   "verify fwd",
                                        "sampling",   "host sync",    "cycle us"};
  std::vector<std::vector<std::string>> rows;
  for (const StrategyResult& r : report.results) {
    if (!r.supported) continue;
    const CycleParts p = cycle_parts(r);
    auto us = [](double v) { return fmt::format("{:.1f}", v); };
    rows.push_back({r.strategy, us(p.draft_extend_us), us(p.draft_forwards * p.draft_forward_us), us(p.topk_select_us),
                    us(p.tree_build_us), us(p.verify_forward_us), us(p.sampling_us), us(p.host_sync_us),
                    us(p.total_us())});
  }
  std::string out = "\ncycle parts (us per cycle; forwards without the per-cycle ops in their steps):\n";
  out += aligned_columns(header, rows);
  if (const StrategyResult* best = best_result(report); best && best->cycle_us > 0) {
    const CycleParts p = cycle_parts(*best);
    auto pct = [&](double v) { return 100.0 * v / best->cycle_us; };
    out += fmt::format("  {}: verify forward {:.0f}%, draft-extend and draft forwards {:.0f}%, per-cycle ops "
                       "(top-k, tree, sampling, host sync) {:.0f}% of the {:.1f} us cycle\n",
                       best->strategy, pct(p.verify_forward_us),
                       pct(p.draft_extend_us + p.draft_forwards * p.draft_forward_us), pct(p.per_cycle_ops_us()),
                       best->cycle_us);
  }
  return out;
}

// The verify step by op kind on its critical rank, per strategy: the kinds that take at least 1 %
// of some strategy's step (the rest summed as "other").
std::string kind_block(const Report& report) {
  std::vector<int> kinds;
  for (int k = 0; k < kOpKindCount; ++k)
    for (const StrategyResult& r : report.results)
      if (r.supported && r.verify_us > 0 && r.verify.kind_us[static_cast<std::size_t>(k)] >= 0.01 * r.verify_us) {
        kinds.push_back(k);
        break;
      }
  if (kinds.empty()) return "";
  std::vector<std::string> header{"strategy"};
  for (int k : kinds) header.push_back(to_string(static_cast<OpKind>(k)));
  header.push_back("other");
  std::vector<std::vector<std::string>> rows;
  for (const StrategyResult& r : report.results) {
    if (!r.supported) continue;
    std::vector<std::string> row{r.strategy};
    double shown = 0;
    for (int k : kinds) {
      const double us = r.verify.kind_us[static_cast<std::size_t>(k)];
      shown += us;
      row.push_back(fmt::format("{:.1f}", us));
    }
    row.push_back(fmt::format("{:.1f}", std::max(0.0, r.verify_us - shown)));
    rows.push_back(std::move(row));
  }
  return "\nverify step by op kind (us, the critical rank):\n" + aligned_columns(header, rows);
}

// Which strategies SGLang or vLLM run on this machine (and with which flag), which need eaglesim's
// kernel or an engine patch, and which are lossy: the split a recommendation has to respect.
std::string deployment_block(const Report& report) {
  std::vector<std::string> deployable, needs_kernel, lossy;
  for (const StrategyResult& r : report.results) {
    if (!r.supported || !r.deployable) continue;  // unknown, or nothing to deploy (ideal, an engine's dispatch)
    if (!is_exact(r.strategy)) lossy.push_back(r.strategy);
    else if (*r.deployable) deployable.push_back(fmt::format("{} ({})", r.strategy, r.deployment));
    else needs_kernel.push_back(r.strategy);
  }
  if (deployable.empty() && needs_kernel.empty() && lossy.empty()) return "";
  std::string out = "\nin SGLang / vLLM on this machine (engine-dispatch.md):\n";
  if (!deployable.empty()) out += fmt::format("  deployable: {}\n", fmt::join(deployable, "; "));
  if (!needs_kernel.empty())
    out += fmt::format("  eaglesim's kernel or an engine patch: {}\n", fmt::join(needs_kernel, ", "));
  if (!lossy.empty()) out += fmt::format("  lossy (changes the numbers): {}\n", fmt::join(lossy, ", "));
  return out;
}

}  // namespace

std::string report_to_table(const Report& report, bool verbose) {
  const Scenario& sc = report.scenario;
  const StrategyResult* ref = reference_result(report);
  const std::string vs_ref = ref ? "vs " + ref->strategy : "vs first";
  const std::vector<std::string> steps_header{"strategy", "ok",         "verify us", "compute us", "comm us",  "comm %",
                                              "#AR",      "AR mean us", "draft us",  "cycle us",   "decode us"};
  const std::vector<std::string> rate_header{"strategy",  "tok/cycle", "tok/s/req", "tok/s total", "tok/s/GPU",
                                             "plain/req", "plain total", "vs plain", "break-even a", "break-even E",
                                             vs_ref};
  std::vector<std::vector<std::string>> steps_rows, rate_rows;
  for (const StrategyResult& r : report.results) {
    if (!r.supported) {
      std::vector<std::string> row(steps_header.size(), "-");
      row[0] = r.strategy;
      row[1] = "no";
      steps_rows.push_back(row);
      row.assign(rate_header.size(), "-");
      row[0] = r.strategy;
      rate_rows.push_back(row);
      continue;
    }
    const bool dec = r.decode_us > 0;
    steps_rows.push_back({r.strategy,
                          "yes",
                          fmt::format("{:.1f}", r.verify_us),
                          fmt::format("{:.1f}", r.compute_us),
                          fmt::format("{:.1f}", r.comm_us),
                          fmt::format("{:.1f}", 100.0 * r.comm_fraction),
                          fmt::format("{}", r.allreduce_count),
                          fmt::format("{:.2f}", r.allreduce_mean_us),
                          fmt::format("{:.1f}", r.draft_us),
                          fmt::format("{:.1f}", r.cycle_us),
                          dec ? fmt::format("{:.1f}", r.decode_us) : "n/a"});
    rate_rows.push_back({r.strategy,
                         fmt::format("{:.2f}", r.tokens_per_cycle),
                         fmt::format("{:.1f}", r.tokens_per_s),
                         fmt::format("{:.1f}", r.total_tokens_per_s),
                         fmt::format("{:.1f}", r.tokens_per_s_per_gpu),
                         dec ? fmt::format("{:.1f}", r.decode_tokens_per_s) : "n/a",
                         dec ? fmt::format("{:.1f}", r.decode_total_tokens_per_s) : "n/a",
                         dec ? fmt::format("{:.2f}x", r.speedup_vs_decode) : "n/a",
                         breakeven_cell(r),
                         dec ? fmt::format("{:.2f}", r.breakeven_accept_len) : "n/a",
                         fmt::format("{:.2f}x", speedup_vs_reference(report, r))});
  }
  std::string out = scenario_line(sc) + "\n";
  // The caveats that change what the numbers mean come first (memory, a missing draft step, MoE
  // experts, eager launches, the engine's host work).
  if (!sc.notes.empty()) {
    out += "caveats:\n";
    for (const std::string& n : sc.notes) out += "  - " + n + "\n";
  }
  out += "\n";
  out += aligned_columns(steps_header, steps_rows);
  out += fmt::format("\nthroughput at batch {} on {} GPU{} (tok/s per request, in all and per GPU; plain decoding "
                     "at the same batch{}):\n",
                     sc.batch, sc.tp, sc.tp == 1 ? "" : "s",
                     sc.plain_baseline.empty()
                         ? std::string()
                         : fmt::format("; vs plain and break-even against the fastest plain decoding deployable here, "
                                       "{} at {:.1f} tok/s per request",
                                       sc.plain_baseline, sc.plain_baseline_tokens_per_s));
  out += aligned_columns(rate_header, rate_rows);
  out += kind_block(report);
  out += cycle_parts_block(report);
  out += roofline_block(report);

  bool any_unsupported = false;
  for (const StrategyResult& r : report.results)
    if (!r.supported) {
      if (!any_unsupported) out += "\nunsupported:\n";
      any_unsupported = true;
      out += fmt::format("  {}: {}\n", r.strategy, r.reason);
    }

  // A note several strategies share (a fusion count, a calibration caveat) is printed once with
  // their names, so the notes that tell strategies apart are not buried under copies.
  std::vector<std::string> notes;
  std::vector<std::string> texts;               // distinct notes, in order of first appearance
  std::vector<std::vector<std::string>> owners;  // the strategies that have each
  std::size_t supported = 0;
  for (const StrategyResult& r : report.results) {
    if (!r.supported) continue;
    ++supported;
    for (const std::string& n : strategy_notes(r)) {
      const auto it = std::find(texts.begin(), texts.end(), n);
      if (it == texts.end()) {
        texts.push_back(n);
        owners.push_back({r.strategy});
      } else if (owners[it - texts.begin()].back() != r.strategy) {
        owners[it - texts.begin()].push_back(r.strategy);
      }
    }
  }
  // Brief by default: the engines' notes (how SGLang or vLLM set themselves up on this machine)
  // are shown, the rest (fusion counts, kernels, timing method, skew) with --verbose.
  std::size_t hidden = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const bool everyone = supported > 1 && owners[i].size() == supported;
    const bool engine = std::any_of(owners[i].begin(), owners[i].end(),
                                    [](const std::string& o) { return is_engine_dispatch(o); });
    if (!verbose && !engine) {
      ++hidden;
      continue;
    }
    notes.push_back((everyone ? std::string("every strategy") : fmt::format("{}", fmt::join(owners[i], ", "))) + ": " +
                    texts[i]);
  }
  if (!notes.empty()) {
    out += "\nnotes:\n";
    for (const std::string& n : notes) out += "  - " + n + "\n";
  }
  if (hidden > 0)
    out += fmt::format("{}notes: {} more on fusion, kernels and timing per strategy (--verbose shows them)\n",
                       notes.empty() ? "\n" : "", hidden);
  {
    const StrategyResult* b = best_result(report);
    if (!b || b->allreduce_count > 0 || sc.tp == 1) out += deployment_block(report);
  }
  out += dispatch_block(report);

  out += "\n";
  const StrategyResult* best = best_result(report);
  if (!best) {
    out += "best: none (no strategy can run on this topology)\n";
    return out;
  }
  auto headline = [&](const StrategyResult& r) {
    return fmt::format("{} ({:.1f} tok/s per request, {:.1f} in all, cycle {:.1f} us, verify {:.1f} us, {:.2f}x {})",
                       r.strategy, r.tokens_per_s, r.total_tokens_per_s, r.cycle_us, r.verify_us,
                       speedup_vs_reference(report, r), ref->strategy);
  };
  out += "best: " + headline(*best) + "\n";
  // A step without allreduces (data-parallel attention: the MoE by all-to-all) runs the same under
  // every allreduce strategy; which one an engine would pick says nothing there.
  const bool allreduces = best->allreduce_count > 0 || sc.tp == 1;
  if (!allreduces)
    out += "  the verify step has no allreduces (its communication is the MoE's all-to-all): the allreduce "
           "strategies do not differ here\n";
  if (allreduces && !best->deployment.empty()) out += "  in SGLang / vLLM: " + best->deployment + "\n";
  // What the user can run today, when the fastest needs eaglesim's kernel or a patch.
  const StrategyResult* deployable = deployable_best_result(report);
  if (deployable && deployable != best)
    out += "deployable: " + headline(*deployable) + "\n" +
           (deployable->deployment.empty() || !allreduces ? "" : "  in SGLang / vLLM: " + deployable->deployment + "\n");
  if (const StrategyResult* lossy = lossy_left_out(report))
    out += fmt::format("left out: {} ({:.1f} tok/s) is lossy (changes the numbers the model computes); --allow-lossy "
                       "counts it\n",
                       lossy->strategy, lossy->tokens_per_s);
  const StrategyResult* verdict = verdict_result(report);
  const bool engine_path = is_engine_dispatch(verdict->strategy);
  out += fmt::format("verdict ({}): {}\n",
                     engine_path ? fmt::format("what {} runs here", verdict->strategy)
                                 : verdict == best ? verdict->strategy : verdict->strategy + ", deployable",
                     speculation_verdict(sc, *verdict).text());
  if (const StrategyResult* bound = ideal_result(report); bound && bound != best && bound->tokens_per_s > 0)
    out += fmt::format("reference: {} (free allreduces, norms as the trace has them) {:.1f} tok/s; {} reaches {:.0f}% "
                       "of it\n",
                       bound->strategy, bound->tokens_per_s, best->strategy,
                       100.0 * best->tokens_per_s / bound->tokens_per_s);
  return out;
}

}  // namespace eaglesim
