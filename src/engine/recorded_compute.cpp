#include "engine/recorded_compute.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

bool replay_runs_recorded_compute(const Step& step, OpTimes op_times, bool trace_imported) {
  switch (op_times) {
    case OpTimes::model: return false;
    case OpTimes::automatic: return trace_imported;
    case OpTimes::measured:
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        const Op& op = step.ops[i];
        if (!op.is_comm() && !op.us)
          throw InputError(fmt::format("--op-times measured: step {} op {} ('{}', {}) has no recorded 'us' to replay; "
                                       "use --op-times auto or model",
                                       step.name, i, op.name, to_string(op.kind)));
      }
      return true;
  }
  return false;
}

}  // namespace eaglesim
