#include "cli/replay_flags.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim::cli {

void add_replay_flags(CLI::App* cmd, ReplayFlags& flags) {
  cmd->add_option("--iters", flags.iters, "cuda: timed CUDA-graph replays per strategy (the median is reported)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--warmup", flags.warmup, "cuda: untimed replays before them")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--timeout", flags.timeout_s, "cuda: seconds before a stuck allreduce aborts the run (exit 3)")
      ->check(CLI::Range(0.001, kMaxTimeoutS))
      ->capture_default_str();
  cmd->add_flag("--no-nccl-prime", flags.no_nccl_prime,
                "cuda: measure an NCCL step without first replaying it once, untimed (NCCL's first run in a "
                "process is faster than every later one; the primed state is the one calibrate measures)");
}

void apply_replay_flags(const ReplayFlags& flags, RunOptions& opts) {
  opts.iters = flags.iters;
  opts.warmup = flags.warmup;
  opts.timeout_s = flags.timeout_s;
  opts.nccl_prime = !flags.no_nccl_prime;
}

void check_timeout_flag(double seconds) {
  if (!(seconds > 0) || seconds > kMaxTimeoutS)
    throw InputError(fmt::format("--timeout: expected seconds in (0, {}], got {}", kMaxTimeoutS, seconds));
}

}  // namespace eaglesim::cli
