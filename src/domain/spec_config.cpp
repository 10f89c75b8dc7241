#include "domain/spec_config.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace eaglesim {

bool operator==(const SpecConfig& a, const SpecConfig& b) {
  return a.num_steps == b.num_steps && a.eagle_topk == b.eagle_topk && a.num_draft_tokens == b.num_draft_tokens;
}

SpecConfig chain_config(int draft_tokens) { return {draft_tokens, 1, draft_tokens + 1}; }

bool is_chain(const SpecConfig& c) { return c.eagle_topk == 1 && c.num_draft_tokens == c.num_steps + 1; }

long long candidate_count(const SpecConfig& c) {
  if (c.num_steps < 1 || c.eagle_topk < 1) return 0;
  const long long k = c.eagle_topk;
  return k + (c.num_steps - 1) * k * k;
}

int max_tokens_per_cycle(const SpecConfig& c) { return 1 + std::max(0, std::min(c.num_steps, c.num_draft_tokens - 1)); }

std::string describe(const SpecConfig& c) {
  return fmt::format("num_steps {}, eagle_topk {}, num_draft_tokens {}", c.num_steps, c.eagle_topk, c.num_draft_tokens);
}

std::optional<SpecConfigProblem> engine_config_problem(const SpecConfig& c) {
  if (c.num_steps < 1) return SpecConfigProblem{"num_steps", fmt::format("expected at least 1, got {}", c.num_steps)};
  if (c.eagle_topk < 1) return SpecConfigProblem{"eagle_topk", fmt::format("expected at least 1, got {}", c.eagle_topk)};
  if (c.eagle_topk == 1 && c.num_draft_tokens != c.num_steps + 1)
    return SpecConfigProblem{"num_draft_tokens",
                             fmt::format("expected num_steps + 1 = {} at eagle_topk 1 (SGLang sets it so), got {}",
                                         c.num_steps + 1, c.num_draft_tokens)};
  const long long most = 1 + candidate_count(c);
  if (c.num_draft_tokens < 2 || c.num_draft_tokens > most)
    return SpecConfigProblem{"num_draft_tokens",
                             fmt::format("expected 2 to 1 + K + (S-1)K^2 = {} (the draft tokens SGLang scores for "
                                         "num_steps {}, eagle_topk {}, plus the root), got {}",
                                         most, c.num_steps, c.eagle_topk, c.num_draft_tokens)};
  return std::nullopt;
}

}  // namespace eaglesim
