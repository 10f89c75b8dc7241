#include "backend/op_times.hpp"

namespace eaglesim {

const char* to_string(OpTimes t) {
  switch (t) {
    case OpTimes::automatic: return "auto";
    case OpTimes::model: return "model";
    case OpTimes::measured: return "measured";
  }
  return "?";
}

std::optional<OpTimes> op_times_named(std::string_view name) {
  for (OpTimes t : {OpTimes::automatic, OpTimes::model, OpTimes::measured})
    if (name == to_string(t)) return t;
  return std::nullopt;
}

}  // namespace eaglesim
