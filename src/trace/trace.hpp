#pragma once
// A trace: the ops of one verify step per rank, optionally with the draft-head step (run N
// times per cycle) and the plain-decode step (the baseline without speculation). Version 2
// adds the batch of concurrent requests, their KV lengths, the speculative configuration with
// the verify tree, the draft-extend step and the per-cycle ops (docs/trace-format.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "trace/op.hpp"
#include "trace/serving_engine.hpp"
#include "trace/speculative.hpp"

namespace eaglesim {

constexpr const char* kTraceFormat = "eaglesim-trace";
constexpr int kTraceVersion1 = 1;
constexpr int kTraceVersionLatest = 2;

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
  // Version 2.
  std::optional<int> batch;                     // concurrent requests; absent: 1
  std::vector<std::int64_t> kv_lens;            // per request, when they differ (kv_len is then absent)
  std::optional<SpeculativeConfig> speculative;
  std::optional<ServingEngine> engine;          // whose kernels a generated step lists (gen --engine)

  int batch_size() const { return batch.value_or(1); }
};

struct Step {
  std::string name;  // verify | draft | decode | draft_extend (version 2)
  std::vector<Op> ops;
  std::optional<double> measured_us;  // measured wall time of the whole step, when known

  const Op* first(OpKind kind) const;  // the step's first op of this kind, or null
};

struct Trace {
  TraceMeta meta;
  std::vector<Step> steps;

  const Step* find_step(const std::string& name) const;  // first step with this name
  const Step& verify() const;                             // throws InputError if absent
};

// The draft_model of a trace whose draft is the target's own multi-token-prediction layer (gen
// --draft mtp): the target's name and a suffix, so readers of the trace (run's memory check, the
// verdict's wording) know the draft is that layer, not an EAGLE-3 head.
std::string mtp_draft_name(const std::string& target);
bool drafts_with_mtp(const TraceMeta& meta);
// What drafts the trace's tokens, for messages: "MTP" or "EAGLE-3".
const char* speculation_method(const TraceMeta& meta);

const std::vector<std::string>& step_names();           // every step name: version 1's, then draft_extend
const std::vector<std::string>& version1_step_names();  // verify, draft, decode

// What in the trace needs version 2 ("meta.batch", "steps[1] (draft_extend)", ...), or empty when
// version 1 describes it all; the writer writes the lowest version that holds the trace.
std::string first_version2_content(const Trace& trace);
int required_version(const Trace& trace);

// How many times the draft step runs per cycle: version 1 and traces without a draft-extend
// step run it meta.draft_tokens times (default tokens - 1), the first forward standing for the
// pass that follows the verify; with a draft_extend step (run once) it runs num_steps - 1 times.
int draft_forwards_per_cycle(const Trace& trace);

}  // namespace eaglesim
