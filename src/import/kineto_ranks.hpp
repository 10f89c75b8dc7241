#pragma once
// The rank files of one profiled run side by side: each file read, put in rank order, its
// kernels grouped into ops and cut into steps; the run's tensor-parallel size; the checks that
// the files are the ranks of one run (same collectives, steps and kernels); and the collectives'
// cost aligned across the ranks.
#include <optional>
#include <string>
#include <vector>

#include "import/collective_aligner.hpp"
#include "import/imported_op.hpp"
#include "import/kineto_reader.hpp"
#include "import/step_splitter.hpp"

namespace eaglesim {

struct RankOps {
  RankTrace trace;
  std::vector<ImportedOp> ops;
  StepSplit split;
  std::vector<int> collective_ordinal;  // per op, -1 for non-collectives
  int collectives = 0;
};

// One RankOps per file, its trace read. Rank order: distributedInfo.rank when every file has
// it, else the order given. Throws InputError when two files are the same rank.
std::vector<RankOps> read_ranks_in_rank_order(const std::vector<std::string>& files);

// The run's tp: `requested` (--tp) when given, else distributedInfo.world_size, else the number
// of files. Throws InputError when the files disagree on world_size, when there are more files
// than world_size, or when `requested` contradicts either.
int resolve_tp(const std::vector<RankOps>& ranks, std::optional<int> requested);

// Per rank: its kernels grouped into ops, the ops cut into steps, its collectives numbered.
void cut_ranks_into_steps(std::vector<RankOps>& ranks, std::optional<int> layers_per_step);

// Same number of collectives and of steps on every rank; throws InputError naming the file.
void check_rank_steps_match(const std::vector<RankOps>& ranks);

// Same kind and shape at every position of the imported steps (after the shapes are known);
// throws InputError naming the file, step and op.
void check_rank_ops_match(const std::vector<RankOps>& ranks, const std::vector<int>& selected);

// The collectives' cost aligned across ranks; empty with a single rank (no window to align).
std::optional<CollectiveAlignment> align_rank_collectives(const std::vector<RankOps>& ranks);

}  // namespace eaglesim
