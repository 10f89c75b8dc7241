#pragma once
// The notes of one strategy's result as the printers show them: the verify step's, then the
// draft and decode steps' ones the verify step does not already have, each once and marked with
// its step ("draft step: ...", unless the note starts with "draft:" already), since the same
// caveat (a fusion count, the multi-process replay, the allreduce self-check) is often repeated
// by all three.
#include <string>
#include <vector>

#include "domain/report.hpp"

namespace eaglesim {

std::vector<std::string> strategy_notes(const StrategyResult& r);

}  // namespace eaglesim
