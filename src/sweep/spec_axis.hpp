#pragma once
// The sweep's speculative-configuration axis: every (num_steps, eagle_topk, num_draft_tokens)
// the SGLang flags' comma lists combine to, plus the chains of --draft-tokens, each held to
// SGLang's rules (engine_config_problem, trace/spec_config.hpp). A combination SGLang would
// not run is skipped and kept with its reason, so the output can say what was left out; only a
// list of which no combination is valid is an error.
#include <optional>
#include <string>
#include <vector>

#include "trace/spec_config.hpp"

namespace eaglesim {

struct SkippedSpecConfig {
  SpecConfig config;
  std::string reason;  // "num_draft_tokens: expected ..., got ..."
};

struct SpecAxis {
  std::vector<SpecConfig> configs;         // valid, sorted by (steps, topk, draft tokens), no duplicates
  std::vector<SkippedSpecConfig> skipped;  // in the order the lists combine
};

struct SpecAxisLists {
  std::vector<int> chain_draft_tokens;        // --draft-tokens N: (N, 1, N + 1)
  std::vector<int> num_steps;                 // --speculative-num-steps
  std::vector<int> eagle_topk;                // --speculative-eagle-topk (empty: 1)
  std::vector<int> num_draft_tokens;          // --speculative-num-draft-tokens (empty: steps + 1 at topk 1)
};

// InputError naming the flag when --speculative-eagle-topk or --speculative-num-draft-tokens is
// given without --speculative-num-steps, when a topk above 1 has no draft-token list, or when
// no combination is valid (the message lists why the first ones were skipped).
SpecAxis build_spec_axis(const SpecAxisLists& lists);

// "3/1/4": steps/topk/draft tokens, as tables show a configuration.
std::string short_spec(const SpecConfig& c);

}  // namespace eaglesim
