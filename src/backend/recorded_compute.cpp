#include "backend/recorded_compute.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

void require_recorded_us(const Step& step, std::size_t i) {
  const Op& op = step.ops[i];
  if (!op.us)
    throw InputError(fmt::format("{0} measured: step {1} op {2} ('{3}', {4}) has no recorded 'us'; use {0} auto or model",
                                 setting_name(Setting::op_times), step.name, i, op.name, to_string(op.kind)));
}

bool replay_runs_recorded_compute(const Step& step, OpTimes op_times, bool trace_imported) {
  switch (op_times) {
    case OpTimes::model: return false;
    case OpTimes::automatic: return trace_imported;
    case OpTimes::measured:
      for (std::size_t i = 0; i < step.ops.size(); ++i)
        if (!step.ops[i].is_comm()) require_recorded_us(step, i);
      return true;
  }
  return false;
}

}  // namespace eaglesim
