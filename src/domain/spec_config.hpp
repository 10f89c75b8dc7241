#pragma once
// The speculative configuration of an EAGLE engine, in SGLang's terms: the draft runs num_steps
// forwards, keeps eagle_topk candidates per expanded node, and the verify step checks
// num_draft_tokens tokens (the last verified token, the root, plus num_draft_tokens - 1 draft
// tokens). A chain of N draft tokens is num_steps N, eagle_topk 1, num_draft_tokens N + 1.
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

// Draft tokens SGLang scores in one cycle, from which it keeps D - 1: the K children of the
// root, then K x K children of the K best nodes at each further step, K + (S - 1) K^2.
long long candidate_count(const SpecConfig& c);

// The most tokens one cycle can emit: the longest accepted path (at most S deep, at most
// D - 1 nodes) plus the token the verify step always yields, 1 + min(S, D - 1).
int max_tokens_per_cycle(const SpecConfig& c);

// "num_steps 3, eagle_topk 1, num_draft_tokens 4"
std::string describe(const SpecConfig& c);

// What is wrong with a configuration an engine would run: the field ("num_steps",
// "eagle_topk", "num_draft_tokens") and "expected ..., got ...".
struct SpecConfigProblem {
  std::string field;
  std::string message;
};
// SGLang's limits on the three flags: num_steps and eagle_topk at least 1, num_draft_tokens =
// num_steps + 1 at eagle_topk 1 (python/sglang/srt/server_args.py adjusts it so), and
// otherwise at least 2 and no more than the candidates the draft scores plus the root
// (python/sglang/srt/speculative/build_eagle_tree.py takes the top num_draft_tokens - 1).
std::optional<SpecConfigProblem> engine_config_problem(const SpecConfig& c);

}  // namespace eaglesim
