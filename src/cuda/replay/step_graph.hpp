#pragma once
// A rank program's step as CUDA graphs: one graph per run of device ops, and between them the
// host-side ops (host_sync: the accepted lengths copied to the host and waited for), run from
// the host at launch as an engine's host waits between its graphs. A step without host-side ops
// is one graph. Timed from the step's first event to its last, a host synchronisation costs
// what it costs an engine: the copy, the host noticing it, and the launch of the next graph
// while the GPU idles.
#include <cstddef>
#include <optional>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/runtime/cuda_graph.hpp"
#include "cuda/replay/rank_program.hpp"

namespace eaglesim::cuda {

class StepGraph {
 public:
  // events: empty, or program.size() + 1 events, recorded before the first op and after each
  // (external event nodes in the graphs, eager records around host-side ops): the attribution
  // replay. Nothing when a capture fails with events (the caller falls back to eager launches);
  // without events a failure throws DeviceError. `left_out` (empty, or one flag per op; only
  // without events): device ops captured as if absent, for the step without them
  // (domain/kind_marginals.hpp); host-side ops always run.
  static std::optional<StepGraph> capture(const RankProgram& program, cudaStream_t stream,
                                          const std::vector<cudaEvent_t>& events = {},
                                          const std::vector<bool>& left_out = {});
  void launch(cudaStream_t stream) const;
  std::size_t graphs() const { return parts_.size(); }

 private:
  struct Part {
    std::optional<CudaGraph> graph;  // device ops; or, without it, the host-side op `host_op`
    std::size_t host_op = 0;
  };
  const RankProgram* program_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::vector<Part> parts_;
};

}  // namespace eaglesim::cuda
