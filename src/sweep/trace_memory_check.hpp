#pragma once
// Does the model a generated trace stands for fit where `run` is asked to price it? The trace
// names its model (and EAGLE-3 head); their configs are found as presets are (models/llm), and
// memory_check.hpp's arithmetic runs at the trace's TP, weight formats, batch and KV lengths on
// one GPU of the topology. `sweep` answers the same question per combination.
#include <optional>
#include <string>

#include "sweep/memory_check.hpp"
#include "topology/topology.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct TraceMemoryCheck {
  std::optional<MemoryVerdict> verdict;  // none: not checked
  std::string unchecked_why;             // when not checked, in words
};

// Imported traces are not checked (they were recorded where they ran), nor generated ones whose
// model config is not among the presets (unchecked_why says so).
TraceMemoryCheck check_trace_memory(const Trace& trace, const Topology& topo, double gpu_mem_util);

}  // namespace eaglesim
