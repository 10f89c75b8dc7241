// The notes printed per strategy: verify's first, the other steps' only where new, marked with
// their step, each once.
#include <gtest/gtest.h>

#include "report/strategy_notes.hpp"

using namespace eaglesim;

TEST(StrategyNotes, OtherStepsAddOnlyTheirOwnNotesMarkedWithTheStep) {
  StrategyResult r;
  r.verify.notes = {"multi-process replay: 2 MPI ranks", "self-check: 16384 bf16", "multi-process replay: 2 MPI ranks"};
  r.draft = StepResult{};
  r.draft->notes = {"multi-process replay: 2 MPI ranks", "self-check: 4096 bf16"};
  r.decode = StepResult{};
  r.decode->notes = {"self-check: 4096 bf16", "multi-process replay: 2 MPI ranks", "decode: 8 allreduces fused"};
  const std::vector<std::string> want{"multi-process replay: 2 MPI ranks", "self-check: 16384 bf16",
                                      "draft step: self-check: 4096 bf16", "decode step: self-check: 4096 bf16",
                                      "decode: 8 allreduces fused"};
  EXPECT_EQ(strategy_notes(r), want);
}

TEST(StrategyNotes, VerifyOnlyResultKeepsItsNotesInOrder) {
  StrategyResult r;
  r.verify.notes = {"b", "a"};
  EXPECT_EQ(strategy_notes(r), (std::vector<std::string>{"b", "a"}));
}
