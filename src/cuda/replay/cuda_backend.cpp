#include "cuda/replay/cuda_backend.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "comm/engine_dispatch.hpp"
#include "cuda/measure/device_ceilings.hpp"
#include "cuda/replay/machine_probe.hpp"
#include "cuda/runtime/mpi_world.hpp"
#include "cuda/replay/step_replay.hpp"
#include "backend/allreduce_routes.hpp"
#include "backend/recorded_compute.hpp"

namespace eaglesim::cuda {

namespace {

int visible_gpus() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || (err == cudaSuccess && count == 0)) {
    (void)cudaGetLastError();
    throw DeviceError(fmt::format("{0} cuda: no CUDA GPU is visible on this machine (check nvidia-smi and "
                                  "CUDA_VISIBLE_DEVICES), or use {0} sim",
                                  setting_name(Setting::backend)));
  }
  if (err != cudaSuccess)
    throw DeviceError(fmt::format("{} cuda: cannot query GPUs: {} ({})", setting_name(Setting::backend),
                                  cudaGetErrorName(err), cudaGetErrorString(err)));
  return count;
}

// Under mpirun every process drives one GPU. Two processes of a node on one GPU (more processes
// than GPUs, or a launcher that shows each process the same device) would share its SMs and
// time each other; NCCL refuses such a communicator only while building it, and nothing stops
// our own strategies mapping one GPU twice. So every process publishes its GPU's UUID first and
// all refuse the same pair, for every strategy, before any communicator exists.
void require_distinct_gpus(int device, int visible) {
  cudaDeviceProp prop{};
  const cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess)
    throw DeviceError(fmt::format("{} cuda: cannot query GPU {}: {}", setting_name(Setting::backend), device,
                                  cudaGetErrorString(err)));
  auto& world = MpiWorld::get();
  const std::vector<char> all = world.allgather_bytes(&prop.uuid, sizeof(prop.uuid));
  for (int a = 0; a < world.size(); ++a)
    for (int b = a + 1; b < world.size(); ++b)
      if (std::memcmp(&all[a * sizeof(prop.uuid)], &all[b * sizeof(prop.uuid)], sizeof(prop.uuid)) == 0)
        throw InputError(fmt::format("mpirun -np {}: MPI ranks {} and {} would drive the same GPU ({} processes share this "
                                     "node, which shows each of them {} GPU(s)): start at most one process per GPU",
                                     world.size(), a, b, world.local_size(), visible));
}

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }

  StepResult run_step(const Trace& trace, const Step& step, const std::string& strategy, const Topology*,
                      const RunOptions& opts) override {
    for (const Op& op : step.ops)
      if (op.kind == OpKind::all_to_all)
        throw InputError(fmt::format("step {}: op '{}' is an expert-parallel all-to-all; the CUDA replay runs "
                                     "allreduces only (no DeepEP or NCCL all-to-all kernels): price this trace with "
                                     "--backend sim",
                                     step.name, op.name));
    const int gpus = visible_gpus();
    const int tp = trace.meta.tp;
    ReplayConfig config;
    config.strategy = strategy;
    config.opts = opts;
    config.batch = trace.meta.batch_size();
    config.speculative = trace.meta.speculative;
    config.recorded_compute =
        replay_runs_recorded_compute(step, opts.op_times, trace.meta.source == "imported");
    std::vector<std::string> notes;

    if (launched_by_mpi()) {
      if (!mpi_built())
        throw InputError(fmt::format("started under mpirun, but this eaglesim was built without MPI: rebuild with an "
                                     "MPI library installed, or run a single process with {} K",
                                     setting_name(Setting::ranks)));
      auto& world = MpiWorld::get();
      if (opts.ranks > 0 && opts.ranks != world.size())
        throw InputError(fmt::format("{} {} does not match the {} MPI processes (mpirun -np)",
                                     setting_name(Setting::ranks), opts.ranks, world.size()));
      config.mpi = true;
      config.devices = {world.local_rank() % gpus};
      if (!placement_checked_) {  // a process's GPU cannot change between its steps
        require_distinct_gpus(config.devices[0], gpus);
        placement_checked_ = true;
      }
      if (world.size() != tp)
        notes.push_back(fmt::format("replayed the tp={} per-rank shapes on {} MPI ranks: allreduces span {} ranks, "
                                    "not {}", tp, world.size(), world.size(), tp));
      notes.push_back(fmt::format("multi-process replay: {} MPI ranks, one GPU each", world.size()));
    } else {
      int ranks = opts.ranks;
      if (ranks <= 0) {
        if (tp > gpus)
          throw InputError(fmt::format("the trace is for tp={} but this machine has {} GPU(s): pass {} K "
                                       "(K <= {}) to replay the per-rank shapes with allreduces over K GPUs, or "
                                       "use {} sim",
                                       tp, gpus, setting_name(Setting::ranks), gpus, setting_name(Setting::backend)));
        ranks = tp;
      } else if (ranks > gpus) {
        throw InputError(fmt::format("{} {}: this machine has only {} GPU(s)", setting_name(Setting::ranks), ranks, gpus));
      }
      config.devices.resize(ranks);
      std::iota(config.devices.begin(), config.devices.end(), 0);
      if (ranks != tp)
        notes.push_back(fmt::format("replayed the tp={} per-rank shapes on {} GPU(s): allreduces span {} rank(s), "
                                    "not {}, so their cost is not tp={}'s",
                                    tp, ranks, ranks, tp, tp));
    }
    const bool several_ranks = config.mpi ? MpiWorld::get().size() > 1 : config.devices.size() > 1;
    // An engine strategy: each allreduce runs as the strategy its path maps to, as the engine would
    // pick on this machine (the facts probed on the GPUs the replay drives).
    std::vector<DispatchGroup> dispatch;
    if (is_engine_dispatch(strategy)) {
      if (config.mpi)
        throw StrategyUnsupported(strategy + ": its per-allreduce paths replay in one process (not under mpirun)");
      const MachineFacts machine = probe_machine(config.devices);
      const int ranks = static_cast<int>(config.devices.size());
      AllreduceRoutes routes = route_allreduces(step, strategy, machine, ranks, &opts.engine);
      config.op_strategy = std::move(routes.op_strategy);
      dispatch = std::move(routes.groups);
      notes.push_back(engine_setup(strategy, machine, ranks, &opts.engine));
    }
    const bool runs_nccl = is_nccl(strategy) || std::any_of(config.op_strategy.begin(), config.op_strategy.end(),
                                                            [](const std::string& s) { return is_nccl(s); });
    // An NCCL step is replayed once, untimed, right before its measured replay (--no-nccl-prime:
    // not). NCCL's first run of a step in a process is faster than every later one, so without it
    // the measured figure, and A/B signs against our kernels, would depend on the order of the
    // strategies and traces on the command line (docs/fidelity.md, "NCCL primed"). The primed
    // state is the one calibrate measures NCCL in, and likely the one a serving process sees (it
    // captures a graph per batch size). Our own kernels show no such effect, so only NCCL pays
    // the extra replay. Every MPI rank primes alike (the options are the same on every rank).
    if (runs_nccl && several_ranks && opts.nccl_prime) {
      ReplayConfig prime = config;
      prime.opts.iters = 1;
      prime.opts.warmup = 1;
      (void)replay_step(step, prime);
      notes.push_back(fmt::format("NCCL: the step was replayed once, untimed, before the measured replay ({}: not)",
                                  setting_name(Setting::no_nccl_prime)));
    }
    StepResult r = replay_step(step, config);
    // The critical rank's GPU (under MPI, this process's: the ranks' GPUs are alike), measured
    // once per process after the timed replays.
    const std::size_t local = config.mpi ? 0 : static_cast<std::size_t>(r.critical_rank);
    r.ceilings = device_ceilings(config.devices[std::min(local, config.devices.size() - 1)]);
    r.notes.insert(r.notes.begin(), notes.begin(), notes.end());
    r.dispatch = std::move(dispatch);
    return r;
  }

 private:
  bool placement_checked_ = false;  // require_distinct_gpus passed (every rank checks its first step)
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

void register_cuda_backend() {
  register_backend("cuda", [] { return make_cuda_backend(); });
}

}  // namespace eaglesim::cuda
