#pragma once
// The speculative-decoding configuration a version-2 trace describes, under SGLang's names
// (--speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens), and the
// rules SGLang holds them to. The trace reader and `gen` both check a configuration here, each
// naming the problem its own way (a JSON path, a flag).
#include <optional>
#include <string>
#include <vector>

#include "trace/spec_config.hpp"

namespace eaglesim {

enum class SpecMethod { eagle3, eagle, none };
const char* to_string(SpecMethod m);
const std::vector<std::string>& spec_method_names();

// The verify attention's mask between a request's draft tokens.
enum class VerifyMask { chain, tree };
const char* to_string(VerifyMask m);

// SGLang's three numbers (num_steps: draft levels per cycle, the draft-extend pass + num_steps - 1
// draft forwards; eagle_topk: branches each draft forward extends per request; num_draft_tokens:
// tokens a request verifies, the root included), with the method and the verify tree around them.
// The three are 0 for method none (no drafts: the verify step is plain decoding).
struct SpeculativeConfig : SpecConfig {
  SpecMethod method = SpecMethod::eagle3;
  VerifyMask mask = VerifyMask::chain;
  std::vector<int> parents;  // mask tree: the verify tree (trace/eagle_tree.hpp); empty for chain
};

// Limits past which a configuration is rejected as absurd (the trace format's SpecBounds).
constexpr int kMaxSpecSteps = 256;
constexpr int kMaxSpecTopk = 256;
constexpr int kMaxSpecDraftTokens = 4096;

enum class SpecField { method, num_steps, eagle_topk, num_draft_tokens, mask, parents };

struct SpecProblem {
  SpecField field = SpecField::method;
  int index = -1;  // parents: the element at fault; -1: the field as a whole
  std::string expected;
  std::string got;
};

// The first rule the configuration breaks, or nullopt. The rules (SGLang's, see
// docs/trace-format.md "Speculative configuration" for the source of each):
//   - method none carries no steps, topk, draft tokens or tree;
//   - the three numbers follow find_broken_spec_rule (trace/spec_config.hpp) within the limits
//     above: num_steps in [1, kMaxSpecSteps], eagle_topk in [1, kMaxSpecTopk]; at eagle_topk 1
//     num_draft_tokens = num_steps + 1 (SGLang sets it so, with a warning; a trace that says
//     otherwise is rejected, gen applies SGLang's adjustment before this check); at eagle_topk > 1
//     num_draft_tokens in [2, 1 + draft_candidates(num_steps, eagle_topk)] (SGLang's top-k over
//     the candidates fails past that), at most kMaxSpecDraftTokens;
//   - eagle_topk > 1 verifies a tree, never a chain; a tree is a parent list find_tree_problem accepts.
std::optional<SpecProblem> find_speculative_problem(const SpeculativeConfig& c);

}  // namespace eaglesim
