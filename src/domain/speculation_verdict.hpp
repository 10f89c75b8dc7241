#pragma once
// Whether EAGLE-3 beats plain decoding at the run's batch, in the words every printer shows: the
// speed-up at that batch, and the accept length that would break even against the one given, so
// that a loss is said plainly ("EAGLE-3 is slower than plain decoding at batch 8: 0.83x; break-even
// needs accept length 3.10, given 2.50").
#include <string>

#include "domain/report.hpp"

namespace eaglesim {

struct SpeculationVerdict {
  enum class State { faster, slower, unknown };  // unknown: the trace has no decode step
  State state = State::unknown;
  std::string headline;  // "EAGLE-3 is slower than plain decoding at batch 8: 0.83x"
  std::string detail;    // the break-even against the given acceptance
  std::string text() const;  // headline; detail
};
const char* to_string(SpeculationVerdict::State s);  // faster, slower, unknown

// The verdict on `best` (the report's best result) in `sc`'s batch and acceptance.
SpeculationVerdict speculation_verdict(const Scenario& sc, const StrategyResult& best);

}  // namespace eaglesim
