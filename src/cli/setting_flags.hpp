#pragma once
// The command line's spelling of each library setting (core/setting.hpp): the namer
// run_with_exit_code installs, so the library's messages name the flag the user typed.
#include <string>

#include "core/setting.hpp"

namespace eaglesim::cli {

std::string flag_of(Setting s);

}  // namespace eaglesim::cli
