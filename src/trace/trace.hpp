#pragma once
// A trace: the ops of one verify step per rank, optionally with the draft-head step (run N
// times per cycle) and the plain-decode step (the baseline without speculation).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "trace/op.hpp"

namespace eaglesim {

constexpr const char* kTraceFormat = "eaglesim-trace";
constexpr int kTraceVersion = 1;

struct TraceMeta {
  std::string model;          // e.g. "kimi-k2-instruct"
  int tp = 1;                 // tensor-parallel ranks the trace was made for
  int tokens = 1;             // tokens in the verify step (1 + draft tokens)
  DType dtype = DType::bf16;  // activation dtype
  std::string source = "generated";  // generated | imported
  std::string notes;
  // Optional, filled by the generator/importer.
  std::optional<int> draft_tokens;       // N: the draft step runs N times per cycle
  std::optional<std::int64_t> kv_len;    // context length the attention ops were priced at
  std::optional<DType> weight_dtype;
  std::string draft_model;
};

struct Step {
  std::string name;  // verify | draft | decode
  std::vector<Op> ops;
  std::optional<double> measured_us;  // measured wall time of the whole step, when known
};

struct Trace {
  TraceMeta meta;
  std::vector<Step> steps;

  const Step* find_step(const std::string& name) const;  // first step with this name
  const Step& verify() const;                             // throws InputError if absent
};

const std::vector<std::string>& step_names();  // verify, draft, decode

}  // namespace eaglesim
