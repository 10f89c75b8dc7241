// eaglesim-cuda-replay: the CUDA replay backend on its own, without the report layer of
// `eaglesim run`: replays one step of a trace per strategy and prints one JSON line per
// strategy (step time, spread, per-kind split, notes). For measuring the backend and for
// `mpirun -np N eaglesim-cuda-replay TRACE` (only rank 0 prints).
// Exit codes as eaglesim (cli/exit_code.hpp): 2 bad input, 3 device failure or collective timeout.
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/add_norm_flag.hpp"
#include "cli/exit_code.hpp"
#include "cli/stderr_logger.hpp"
#include "comm/strategy_facts.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "cuda/replay/cuda_backend.hpp"
#include "report/printers.hpp"
#include "trace/trace_json.hpp"

int main(int argc, char** argv) {
  using namespace eaglesim;
  cli::install_stderr_logger();  // stdout carries only the JSON lines
  CLI::App app{"eaglesim-cuda-replay: replay a trace step on this machine's GPUs and print JSON lines"};
  std::string trace_path, strategies = nccl_strategy(), step_name = "verify";
  RunOptions opts;
  bool no_nccl_prime = false;
  bool no_fused_add_norm = false;
  app.add_option("trace", trace_path, "Trace file (native format)")->required();
  app.add_option("--strategy,-s", strategies, "Comma-separated strategies (nccl, ideal, custom ones when built)");
  app.add_option("--step", step_name, "Step to replay: verify, draft or decode");
  app.add_option("--ranks", opts.ranks, "GPUs to replay on (default: the trace's tp)")->check(CLI::Range(1, 1024));
  app.add_option("--iters", opts.iters, "Timed graph replays")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", opts.warmup, "Warm-up graph replays")->check(CLI::Range(0, 100000));
  app.add_option("--timeout", opts.timeout_s, "Seconds before a stuck allreduce aborts the run")->check(CLI::PositiveNumber);
  app.add_flag("--no-nccl-prime", no_nccl_prime, "Measure an NCCL step without replaying it once, untimed, first");
  cli::add_no_fused_add_norm_flag(&app, no_fused_add_norm);
  return cli::run_with_exit_code(app, [&] {
    app.parse(argc, argv);
    opts.nccl_prime = !no_nccl_prime;
    opts.fuse_add_norm = !no_fused_add_norm;
    const Trace trace = read_trace(trace_path);
    const Step* step = trace.find_step(step_name);
    if (!step) throw InputError(trace_path + ": no step named \"" + step_name + "\"");
    auto backend = cuda::make_cuda_backend();
    for (const std::string& strategy : split_comma_list("--strategy", strategies)) {
      const StepResult r = backend->run_step(trace, *step, strategy, nullptr, opts);
      const nlohmann::ordered_json j = {{"strategy", strategy},
                                        {"step", r.step},
                                        {"step_us", r.step_us},
                                        {"step_us_min", r.step_us_min},
                                        {"step_us_max", r.step_us_max},
                                        {"samples", r.samples},
                                        {"comm_us", r.comm_us},
                                        {"compute_us", r.compute_us},
                                        {"allreduce_count", r.allreduce_count},
                                        {"allreduce_mean_us", r.allreduce_mean_us},
                                        {"kind_us", kind_us_json(r)},
                                        {"notes", r.notes}};
      std::cout << j.dump() << std::endl;
    }
  });
}
