#pragma once
// What each part of one speculative cycle costs, as the engine runs it: the draft-extend pass,
// the draft forwards, the top-k selections, building the verify tree, the verify forward, the
// acceptance sampling and the host synchronisation. The forwards are their steps without the
// per-cycle ops in them (which a version-2 trace of the engine's cycle places inside the draft,
// draft-extend and verify steps, docs/trace-format.md), so that the parts add up to the cycle.
#include "domain/report.hpp"

namespace eaglesim {

struct CycleParts {
  double draft_extend_us = 0;   // the draft-extend pass once, without its top-k selection
  int draft_forwards = 0;       // draft forwards per cycle (CycleMetrics::draft_forwards)
  double draft_forward_us = 0;  // one draft forward, without its top-k selection
  double topk_select_us = 0;    // every top-k selection of the cycle (draft-extend and each forward)
  double tree_build_us = 0;
  double verify_forward_us = 0;  // the verify step without its tree building, sampling and host sync
  double sampling_us = 0;
  double host_sync_us = 0;
  // The cycle's time, draft_us + verify_us of the result the parts came from.
  double total_us() const;
  // The per-cycle ops together (top-k, tree, sampling, host sync): what does not shrink with the
  // forwards.
  double per_cycle_ops_us() const;
};

// The parts of `r`'s cycle from its steps' per-kind times; all zero for an unsupported result.
CycleParts cycle_parts(const StrategyResult& r);

// Plain decoding's step split the same way: the forward, and the sampling and host sync after it.
struct DecodeParts {
  double forward_us = 0;
  double sampling_us = 0;
  double host_sync_us = 0;
};
DecodeParts decode_parts(const StrategyResult& r);  // zeros without a decode step

// Whether any part besides the forwards costs anything: the trace describes the engine's cycle
// (a draft-extend step or per-cycle ops), so a report shows the parts.
bool has_engine_cycle(const StrategyResult& r);

}  // namespace eaglesim
