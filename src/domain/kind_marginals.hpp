#pragma once
// The marginal cost of an op kind in a step: the step's time minus the time of the same step with
// that kind's ops left out, the kernels around them then following each other directly. Unlike a
// split from events between ops (kind_attribution), it keeps every overlap the step has — a kernel
// that starts before the one ahead of it ends (programmatic dependent launch), the launch gaps, the
// cache state the neighbours leave — which is what a small op costs in a real step, and both
// backends measure it the same way: the replay by timing a second graph without those ops, the
// simulator by pricing the step without them (its transitions then those of the new neighbours).
// The marginals of a step's kinds need not add up to the step.
#include <array>
#include <optional>
#include <vector>

#include "trace/op.hpp"

namespace eaglesim {

using KindMarginals = std::array<std::optional<double>, kOpKindCount>;

// Kinds that get a marginal: compute kinds. Not allreduces (an A/B of strategies is already the
// replay's own question) and not host_sync (the host's wait splits the step's graphs).
bool has_marginal(OpKind kind);

// `reported[i]`: the kind op i's time is reported under (a fused residual add + RMSNorm reports
// as rmsnorm); `absorbed[i]`: op i launches nothing, the kernel of the op before it runs it (the
// norm of a fused add + RMSNorm, or the add and norm a fused allreduce takes in). The ops to
// leave out for `kind`: every kernel op reported as `kind`, and the ops it absorbed; an op
// absorbed into a kernel of another kind stays (its kernel does). Vectors of equal length.
std::vector<bool> ops_left_out(const std::vector<OpKind>& reported, const std::vector<bool>& absorbed, OpKind kind);

// The kinds of `reported` with a marginal and at least one kernel op, in kind order.
std::vector<OpKind> marginal_kinds(const std::vector<OpKind>& reported, const std::vector<bool>& absorbed);

}  // namespace eaglesim
