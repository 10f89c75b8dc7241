#pragma once
// A serving engine's per-iteration host work in a run: the trace's engine's profile
// (cost/engine_profile.hpp) with the run's `--engine-option` overrides, and its host costs added
// to the steps of a result whose trace describes the engine's cycle (gen --engine-cycle: the
// verify and decode steps end in a host synchronisation). The costs show as host sync in the
// cycle parts.
#include <optional>
#include <string>

#include "comm/engine_options.hpp"
#include "cost/engine_profile.hpp"
#include "domain/report.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

// The profile of `engine` with the options given for it (ENGINE.OPTION) and for every engine
// (OPTION); the latter first, so that an engine's own wins.
EngineProfile engine_profile(ServingEngine engine, const ServingEngineOptions& options);

// The serving engine whose kernels a generated trace lists (meta.engine); none for imported
// traces, whose recording holds what the engine did.
std::optional<ServingEngine> generated_engine(const Trace& trace);

// The engine whose host costs a run of `trace` adds: generated_engine for a trace with the
// engine's cycle; none for traces without the cycle's host synchronisation.
std::optional<ServingEngine> host_cost_engine(const Trace& trace);

// Adds the profile's host work to `r`'s verify (per cycle, with `draft_forwards` draft steps)
// and decode (per plain forward; only what the forward does not cover when the engine overlaps
// it) steps, as host sync time. Returns the note a report carries about it.
std::string add_engine_host_costs(StrategyResult& r, const EngineProfile& profile, int draft_forwards);

// The engine's eager forwards (cost/cuda_graph_limit.hpp): each step of `trace` (a generated
// engine trace) that the engine does not replay as a CUDA graph at `tp` on GPUs of `gpu_mem_gb`
// takes at least its kernels' host launches; what that adds beyond the step's GPU time shows as
// host time. Returns the note a report carries (empty when every step is a graph).
std::string add_eager_launch_costs(StrategyResult& r, const Trace& trace, const EngineProfile& profile, int tp,
                                   double gpu_mem_gb);

}  // namespace eaglesim
