#pragma once
// A backend executes one step of a trace with one allreduce strategy and reports a StepResult.
// "sim" prices ops with the cost models on a virtual clock; "cuda" (optional build) runs them
// on real GPUs. Backends register by name; the CLI looks them up.
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/op_times.hpp"
#include "comm/cost_model.hpp"
#include "domain/step_result.hpp"
#include "topology/topology.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct RunOptions {
  int ranks = 0;                     // 0: the trace's tp
  NcclOptions nccl;
  // The strategy of a MoE layer's all-to-all dispatch and combine (expert parallelism; --a2a):
  // nccl, deepep_ll, deepep_normal, auto or ideal (comm/all_to_all.hpp).
  std::string a2a = "auto";
  ServingEngineOptions engine;              // the engine strategies' options (--engine-option) and the model's architecture
  std::vector<double> rank_skew_us;  // sim: per-rank start offset
  std::vector<double> rank_compute_scale;  // sim: per-rank compute slowdown factor (empty: all 1)
  OpTimes op_times = OpTimes::automatic;  // where compute-op times come from (backend/op_times.hpp)
  bool fuse_add_norm = true;         // residual_add + rmsnorm as one kernel, as SGLang/vLLM run them
                                     // (--no-fused-add-norm runs them as two)
  int iters = 20;                    // cuda: timed graph replays
  int warmup = 5;
  double timeout_s = 30;             // cuda: an allreduce not done by then aborts the run (exit 3)
  bool nccl_prime = true;            // cuda: replay an NCCL step once, untimed, before measuring it
  bool want_timeline = false;
  // sim: price eaglesim's replay kernels (what `fidelity` compares a calibration with), not the
  // kernels of the trace's serving engine (meta.engine; cost/compute_model.hpp).
  bool replay_kernels = false;
  bool kind_marginals = false;       // also time the step without each compute kind's ops
                                     // (StepResult::kind_marginal_us; fidelity's per-kind comparison)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // topo may be null for the cuda backend (the real machine is the topology).
  virtual StepResult run_step(const Trace& trace, const Step& step, const std::string& strategy,
                              const Topology* topo, const RunOptions& opts) = 0;
};

// A backend throws this from run_step when the strategy cannot run there (world size, no P2P,
// message too large, kernel not built). The report lists the strategy as unsupported with
// what(), instead of failing the run.
class StrategyUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;
void register_backend(const std::string& name, BackendFactory factory);
// InputError for unknown names; DeviceError ("built without CUDA") for "cuda" when absent.
std::unique_ptr<Backend> make_backend(const std::string& name);
// Registers the backends built into the host library ("sim"). Static initialisers in a static
// library are dropped by the linker, so commands call this explicitly (idempotent).
void register_builtin_backends();

}  // namespace eaglesim
