#pragma once
// Where the simulator takes a compute op's duration from (RunOptions::op_times), and what the
// CUDA backend runs for it.
#include <optional>
#include <string_view>

namespace eaglesim {

//   automatic: the op's measured `us` if the trace was imported (recorded), the cost model otherwise
//   model:     always the cost model
//   measured:  always the op's `us` (InputError if an op has none); the CUDA backend runs each
//              compute op as a kernel of its recorded duration
enum class OpTimes { automatic, model, measured };

const char* to_string(OpTimes t);  // "auto", "model", "measured"
// The choice of that name; nullopt for any other.
std::optional<OpTimes> op_times_named(std::string_view name);

}  // namespace eaglesim
