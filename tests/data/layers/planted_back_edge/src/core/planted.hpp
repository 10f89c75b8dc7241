#pragma once
// A planted back edge: core may include nothing above it.
#include "cli/commands.hpp"
