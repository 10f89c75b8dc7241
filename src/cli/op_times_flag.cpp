#include "cli/op_times_flag.hpp"

#include "core/errors.hpp"

namespace eaglesim {

OpTimes op_times_flag(const std::string& value) {
  if (const std::optional<OpTimes> t = op_times_named(value)) return *t;
  throw InputError("--op-times: expected model, auto or measured, got '" + value + "'");
}

}  // namespace eaglesim
