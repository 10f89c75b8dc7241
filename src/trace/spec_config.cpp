#include "trace/spec_config.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "trace/eagle_tree.hpp"

namespace eaglesim {

bool operator==(const SpecConfig& a, const SpecConfig& b) {
  return a.num_steps == b.num_steps && a.eagle_topk == b.eagle_topk && a.num_draft_tokens == b.num_draft_tokens;
}

SpecConfig chain_config(int draft_tokens) { return {draft_tokens, 1, draft_tokens + 1}; }

bool is_chain(const SpecConfig& c) { return c.eagle_topk == 1 && c.num_draft_tokens == c.num_steps + 1; }

int max_tokens_per_cycle(const SpecConfig& c) { return 1 + std::max(0, std::min(c.num_steps, c.num_draft_tokens - 1)); }

std::string describe(const SpecConfig& c) {
  return fmt::format("num_steps {}, eagle_topk {}, num_draft_tokens {}", c.num_steps, c.eagle_topk, c.num_draft_tokens);
}

const char* spec_rule_field(SpecRule rule) {
  switch (rule) {
    case SpecRule::num_steps: return "num_steps";
    case SpecRule::eagle_topk: return "eagle_topk";
    case SpecRule::chain_num_draft_tokens:
    case SpecRule::tree_num_draft_tokens: return "num_draft_tokens";
  }
  return "num_draft_tokens";
}

std::optional<BrokenSpecRule> find_broken_spec_rule(const SpecConfig& c, const SpecBounds& bounds) {
  // SGLang's draft loop (eagle_worker.py draft_forward) scores at least one level.
  if (c.num_steps < 1 || c.num_steps > bounds.max_steps)
    return BrokenSpecRule{SpecRule::num_steps, 1, bounds.max_steps, c.num_steps};
  // Each draft level keeps at least one branch per request.
  if (c.eagle_topk < 1 || c.eagle_topk > bounds.max_topk)
    return BrokenSpecRule{SpecRule::eagle_topk, 1, bounds.max_topk, c.eagle_topk};
  if (c.eagle_topk == 1) {
    // server_args.py: speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when
    // speculative_eagle_topk == 1.
    const std::int64_t chain = static_cast<std::int64_t>(c.num_steps) + 1;
    if (c.num_draft_tokens != chain)
      return BrokenSpecRule{SpecRule::chain_num_draft_tokens, chain, chain, c.num_draft_tokens};
    return std::nullopt;
  }
  // eagle_utils.py organize_draft_results: torch.topk over the candidates' scores picks
  // num_draft_tokens - 1 of them, and fails past the candidates. At least one: a tree of the
  // root alone verifies no draft (SGLang's top-k of none runs plain decoding behind a wasted draft).
  const std::int64_t most = std::min(bounds.max_draft_tokens, 1 + draft_candidates(c.num_steps, c.eagle_topk));
  if (c.num_draft_tokens < 2 || c.num_draft_tokens > most)
    return BrokenSpecRule{SpecRule::tree_num_draft_tokens, 2, most, c.num_draft_tokens};
  return std::nullopt;
}

namespace {

std::string engine_rule_message(const BrokenSpecRule& b, const SpecConfig& c) {
  switch (b.rule) {
    case SpecRule::num_steps:
    case SpecRule::eagle_topk: return fmt::format("expected at least {}, got {}", b.least, b.got);
    case SpecRule::chain_num_draft_tokens:
      return fmt::format("expected num_steps + 1 = {} at eagle_topk 1 (SGLang sets it so), got {}", b.most, b.got);
    case SpecRule::tree_num_draft_tokens: break;
  }
  return fmt::format("expected {} to 1 + K + (S-1)K^2 = {} (the draft tokens SGLang scores for num_steps {}, eagle_topk "
                     "{}, plus the root), got {}",
                     b.least, b.most, c.num_steps, c.eagle_topk, b.got);
}

}  // namespace

std::optional<SpecConfigProblem> engine_config_problem(const SpecConfig& c) {
  const std::optional<BrokenSpecRule> broken = find_broken_spec_rule(c);
  if (!broken) return std::nullopt;
  return SpecConfigProblem{spec_rule_field(broken->rule), engine_rule_message(*broken, c)};
}

}  // namespace eaglesim
