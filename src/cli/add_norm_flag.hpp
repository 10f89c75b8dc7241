#pragma once
// --no-fused-add-norm, shared by run, sweep, fidelity and calibrate so that each says the same
// about it: by default a residual_add followed by an rmsnorm of the same shape runs as one fused
// kernel, as SGLang and vLLM run it (fused_add_rmsnorm); the flag runs them as two.
#include <CLI/CLI.hpp>

namespace eaglesim::cli {

// Adds the flag to `cmd`; `no_fused` becomes true when it is given (RunOptions::fuse_add_norm = !no_fused).
void add_no_fused_add_norm_flag(CLI::App* cmd, bool& no_fused);

}  // namespace eaglesim::cli
