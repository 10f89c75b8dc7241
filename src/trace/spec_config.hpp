#pragma once
// The speculative configuration of an EAGLE engine, in SGLang's terms: the draft runs num_steps
// forwards, keeps eagle_topk candidates per expanded node, and the verify step checks
// num_draft_tokens tokens (the last verified token, the root, plus num_draft_tokens - 1 draft
// tokens). A chain of N draft tokens is num_steps N, eagle_topk 1, num_draft_tokens N + 1.
// Also the one check of SGLang's rules on the three numbers: the trace reader, gen, the sweep
// and the acceptance table all ask it, each wording the problem its own way.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace eaglesim {

struct SpecConfig {
  int num_steps = 0;         // S: draft forwards per cycle, the deepest a draft token can be
  int eagle_topk = 1;        // K: candidates kept per expanded node
  int num_draft_tokens = 1;  // D: tokens in the verify step, the root included
};

bool operator==(const SpecConfig& a, const SpecConfig& b);

// The chain of N draft tokens: S = N, K = 1, D = N + 1.
SpecConfig chain_config(int draft_tokens);
bool is_chain(const SpecConfig& c);  // K = 1 and D = S + 1

// The most tokens one cycle can emit: the longest accepted path (at most S deep, at most
// D - 1 nodes) plus the token the verify step always yields, 1 + min(S, D - 1).
int max_tokens_per_cycle(const SpecConfig& c);

// "num_steps 3, eagle_topk 1, num_draft_tokens 4"
std::string describe(const SpecConfig& c);

// SGLang's rules on the three numbers, in the order they are checked (the source of each is
// named where find_broken_spec_rule checks it).
enum class SpecRule {
  num_steps,               // num_steps >= 1
  eagle_topk,              // eagle_topk >= 1
  chain_num_draft_tokens,  // eagle_topk 1: num_draft_tokens = num_steps + 1
  tree_num_draft_tokens,   // eagle_topk > 1: num_draft_tokens from 2 to 1 + draft_candidates (trace/eagle_tree.hpp)
};
const char* spec_rule_field(SpecRule rule);  // "num_steps", "eagle_topk" or "num_draft_tokens"

// Upper bounds a caller adds to SGLang's rules, beyond which it calls a configuration absurd
// (the trace format's, trace/speculative.hpp); none by default.
struct SpecBounds {
  std::int64_t max_steps = std::numeric_limits<std::int64_t>::max();
  std::int64_t max_topk = std::numeric_limits<std::int64_t>::max();
  std::int64_t max_draft_tokens = std::numeric_limits<std::int64_t>::max();
};

// The first rule a configuration breaks: the field's value and the range it must lie in,
// [least, most] (one value for the chain's draft tokens).
struct BrokenSpecRule {
  SpecRule rule = SpecRule::num_steps;
  std::int64_t least = 0;
  std::int64_t most = 0;
  int got = 0;
};
std::optional<BrokenSpecRule> find_broken_spec_rule(const SpecConfig& c, const SpecBounds& bounds = {});

// What is wrong with a configuration an engine would run, as the sweep and the acceptance table
// word it: the field ("num_steps", "eagle_topk", "num_draft_tokens") and "expected ..., got ...".
struct SpecConfigProblem {
  std::string field;
  std::string message;
};
std::optional<SpecConfigProblem> engine_config_problem(const SpecConfig& c);

}  // namespace eaglesim
