#pragma once
// What an import recognised and what it did not, for the user to check: per op kind, the
// kernels that made it up (short name, count, raw µs), taken from the first rank over the
// imported steps; plus how steps were found and the warnings about what was lost.
#include <map>
#include <string>
#include <vector>

namespace eaglesim {

struct ImportSummaryRow {
  std::string kind;        // op kind it ended up in (gemm, allreduce, ..., other)
  std::string what;        // for `other`: what the kernel was taken for (copy, memset, unrecognised, gemm without shape)
  std::string family;      // implementation (NCCL, cuBLAS nvjet, cuDNN SDPA, ...)
  std::string kernel;      // short kernel name
  int count = 0;
  double us = 0;           // sum of raw kernel durations
};

struct ImportSummary {
  std::vector<std::string> files;  // in rank order
  int tp = 1;
  std::string step_method;
  int steps_found = 0;
  int complete_steps = 0;
  std::vector<int> steps_imported;  // indices among all steps found
  std::vector<ImportSummaryRow> kernels;
  std::map<std::string, int> ops_by_kind;  // per imported step (the first one)
  double op_us_per_step = 0;               // sum of op us of the first imported step
  double collective_us_per_step = 0;       // part of it that is collectives
  std::string shape_source;                // how shapes were found, when not from CPU ops (model config)
  std::vector<std::string> allreduce_paths;  // what the engine's allreduces ran as, per kernel
  std::vector<std::string> warnings;  // not part of summary_to_text: callers log them
};

std::string summary_to_text(const ImportSummary& summary);

}  // namespace eaglesim
