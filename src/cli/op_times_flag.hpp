#pragma once
// --op-times of run and fidelity: the flag's value as the library's OpTimes.
#include <string>

#include "backend/op_times.hpp"

namespace eaglesim {

// InputError naming the flag and the choices for any other value.
OpTimes op_times_flag(const std::string& value);

}  // namespace eaglesim
