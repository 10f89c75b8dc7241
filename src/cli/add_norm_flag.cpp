#include "cli/add_norm_flag.hpp"

namespace eaglesim::cli {

void add_no_fused_add_norm_flag(CLI::App* cmd, bool& no_fused) {
  cmd->add_flag("--no-fused-add-norm", no_fused,
                "Run every residual_add and rmsnorm as its own kernel; by default a residual_add followed by an "
                "rmsnorm of the same shape runs as one fused kernel (residual = x + residual; out = rmsnorm(residual) "
                "* w), as SGLang and vLLM run it (where a fused allreduce does not absorb both)");
}

}  // namespace eaglesim::cli
