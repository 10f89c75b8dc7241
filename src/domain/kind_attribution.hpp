#pragma once
// The per-op split of a replayed step. The CUDA backend times each op in a separate replay with
// an event node after every op; each node costs a few µs of serialisation, so those spans sum to
// more than the step the plain graph takes. This turns the spans into per-op times that add up to
// the measured step.
#include <vector>

namespace eaglesim {

// `span_us[i]`: op i's span in the attributed replay; `absorbed[i]`: op i launched no kernel of
// its own (the rmsnorm of a fused add + RMSNorm, run by the kernel before it), so its span is an
// event node's cost alone; `step_us`: the step without events. Absorbed ops get 0 and leave the
// sum; the excess of the rest over the step comes off every kernel op in equal shares (the
// overhead is per node, not proportional to the op, and an op is never taken below 0); what is
// left is scaled to add up to the step. Spans that already sum to no more than the step are kept
// as they are (absorbed ops still 0). `absorbed` may be shorter than `span_us` (the missing ops
// launched kernels).
std::vector<double> fit_spans_to_step(std::vector<double> span_us, const std::vector<bool>& absorbed, double step_us);

}  // namespace eaglesim
