#include "cuda/replay/step_graph.hpp"

#include <stdexcept>

#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

std::optional<StepGraph> StepGraph::capture(const RankProgram& program, cudaStream_t stream,
                                            const std::vector<cudaEvent_t>& events,
                                            const std::vector<bool>& left_out) {
  StepGraph g;
  g.program_ = &program;
  g.events_ = events;
  const bool with_events = !events.empty();
  const std::size_t n = program.size();
  if (!left_out.empty() && (with_events || left_out.size() != n))
    throw std::logic_error("StepGraph::capture: left_out needs one flag per op and no events");
  const auto kept = [&](std::size_t k) { return left_out.empty() || !left_out[k]; };
  std::size_t i = 0;
  while (i < n || (i == 0 && n == 0)) {
    if (i < n && program.host_side(i)) {
      g.parts_.push_back({std::nullopt, i});
      ++i;
      continue;
    }
    const std::size_t begin = i;
    std::size_t end = begin;
    while (end < n && !program.host_side(end)) ++end;
    if (!with_events) {
      g.parts_.push_back({CudaGraph::capture(stream, [&](cudaStream_t s) {
                            for (std::size_t k = begin; k < end; ++k)
                              if (kept(k)) program.enqueue(k, s);
                          }),
                          0});
    } else {
      GraphCapture capture(stream, cudaStreamCaptureModeThreadLocal);
      bool ok = begin != 0 || cudaEventRecordWithFlags(events[0], stream, cudaEventRecordExternal) == cudaSuccess;
      for (std::size_t k = begin; ok && k < end; ++k) {
        program.enqueue(k, stream);
        ok = cudaEventRecordWithFlags(events[k + 1], stream, cudaEventRecordExternal) == cudaSuccess;
      }
      std::optional<CudaGraph> graph;
      if (ok) graph = capture.try_finish();
      else capture.discard();
      if (!graph) return std::nullopt;
      g.parts_.push_back({std::move(graph), 0});
    }
    i = end;
    if (n == 0) break;
  }
  return g;
}

void StepGraph::launch(cudaStream_t stream) const {
  for (const Part& p : parts_) {
    if (p.graph) {
      p.graph->launch(stream);
      continue;
    }
    if (!events_.empty() && p.host_op == 0) EAGLESIM_CUDA_CHECK(cudaEventRecord(events_[0], stream));
    program_->enqueue(p.host_op, stream);
    if (!events_.empty()) EAGLESIM_CUDA_CHECK(cudaEventRecord(events_[p.host_op + 1], stream));
  }
}

}  // namespace eaglesim::cuda
