#pragma once
// The CUDA replay's flags (--iters, --warmup, --timeout, --no-nccl-prime), shared by `run` and
// `fidelity` so that both accept and refuse the same values with the same message: a warm-up of a
// billion replays or a timeout of 1e30 s is a typo, not a request.
#include <CLI/CLI.hpp>

#include "backend/backend.hpp"

namespace eaglesim::cli {

// The longest --timeout any GPU command takes: a day. No measured graph needs more, and a stuck
// rank should be found well before it.
inline constexpr double kMaxTimeoutS = 86400;

struct ReplayFlags {
  int iters = 20;
  int warmup = 5;
  double timeout_s = 30;
  bool no_nccl_prime = false;
};

// Adds the four options to `cmd`, range-checked by CLI11 (exit 2 naming the flag).
void add_replay_flags(CLI::App* cmd, ReplayFlags& flags);
// Copies them into the options the backends read.
void apply_replay_flags(const ReplayFlags& flags, RunOptions& opts);
// The same --timeout bound for the commands that parse their flags themselves (calibrate,
// bench-comm): InputError unless 0 < seconds <= kMaxTimeoutS.
void check_timeout_flag(double seconds);

}  // namespace eaglesim::cli
