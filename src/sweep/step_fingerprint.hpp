#pragma once
// Identity of a step's content, so the sweep prices each distinct step once per topology and
// strategy. The draft and decode steps do not depend on the number of draft tokens, so across a
// draft-token axis of 8 values they are simulated once instead of 8 times; identical verify
// steps (e.g. the same model listed twice) are shared too.
#include <cstdint>

#include "trace/trace.hpp"

namespace eaglesim {

// A 64-bit hash of the step name and every op field the cost models read.
std::uint64_t step_fingerprint(const Step& step);
// Field-by-field equality of the same fields (guards against hash collisions).
bool same_step_content(const Step& a, const Step& b);

}  // namespace eaglesim
