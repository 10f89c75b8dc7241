#include "trace/speculative.hpp"

#include <fmt/format.h>

#include "trace/eagle_tree.hpp"

namespace eaglesim {

const std::vector<std::string>& spec_method_names() {
  static const std::vector<std::string> names{"eagle3", "eagle", "none"};
  return names;
}

const char* to_string(SpecMethod m) { return spec_method_names()[static_cast<int>(m)].c_str(); }
const char* to_string(VerifyMask m) { return m == VerifyMask::tree ? "tree" : "chain"; }

namespace {

SpecProblem problem(SpecField field, std::string expected, std::string got) {
  SpecProblem p;
  p.field = field;
  p.expected = std::move(expected);
  p.got = std::move(got);
  return p;
}

}  // namespace

std::optional<SpecProblem> find_speculative_problem(const SpeculativeConfig& c) {
  if (c.method == SpecMethod::none) {
    if (c.num_steps != 0) return problem(SpecField::num_steps, "no num_steps with method none", std::to_string(c.num_steps));
    if (c.eagle_topk != 0) return problem(SpecField::eagle_topk, "no eagle_topk with method none", std::to_string(c.eagle_topk));
    if (c.num_draft_tokens != 0)
      return problem(SpecField::num_draft_tokens, "no num_draft_tokens with method none", std::to_string(c.num_draft_tokens));
    if (c.mask == VerifyMask::tree) return problem(SpecField::mask, "no tree with method none", "tree");
    return std::nullopt;
  }
  // SGLang's draft loop (eagle_worker.py draft_forward) scores at least one level.
  if (c.num_steps < 1 || c.num_steps > kMaxSpecSteps)
    return problem(SpecField::num_steps, fmt::format("an integer in [1, {}]", kMaxSpecSteps), std::to_string(c.num_steps));
  // Each draft level keeps at least one branch per request.
  if (c.eagle_topk < 1 || c.eagle_topk > kMaxSpecTopk)
    return problem(SpecField::eagle_topk, fmt::format("an integer in [1, {}]", kMaxSpecTopk), std::to_string(c.eagle_topk));
  if (c.eagle_topk == 1) {
    // server_args.py: speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when
    // speculative_eagle_topk == 1.
    if (c.num_draft_tokens != c.num_steps + 1)
      return problem(SpecField::num_draft_tokens,
                     fmt::format("num_steps + 1 = {} (SGLang verifies the chain of num_steps drafts and the root when "
                                 "eagle_topk is 1)",
                                 c.num_steps + 1),
                     std::to_string(c.num_draft_tokens));
  } else {
    // eagle_utils.py organize_draft_results: torch.topk over the candidates' scores picks
    // num_draft_tokens - 1 of them.
    const std::int64_t candidates = draft_candidates(c.num_steps, c.eagle_topk);
    const std::int64_t most = std::min<std::int64_t>(kMaxSpecDraftTokens, 1 + candidates);
    if (c.num_draft_tokens < 1 || c.num_draft_tokens > most)
      return problem(SpecField::num_draft_tokens,
                     fmt::format("an integer in [1, {}] (the root and at most the {} candidates that {} steps of top-{} "
                                 "drafting score{})",
                                 most, candidates, c.num_steps, c.eagle_topk,
                                 most < 1 + candidates ? fmt::format(", at most {}", kMaxSpecDraftTokens) : ""),
                     std::to_string(c.num_draft_tokens));
    if (c.mask != VerifyMask::tree)
      return problem(SpecField::mask, "tree (eagle_topk > 1 drafts a tree)", to_string(c.mask));
  }
  if (c.mask == VerifyMask::tree) {
    if (auto t = find_tree_problem(c.parents, c.num_steps, c.eagle_topk, c.num_draft_tokens)) {
      SpecProblem p = problem(SpecField::parents, t->expected, t->got);
      p.index = t->index;
      return p;
    }
  } else if (!c.parents.empty()) {
    return problem(SpecField::parents, "no parent list with the chain mask", fmt::format("{} parents", c.parents.size()));
  }
  return std::nullopt;
}

}  // namespace eaglesim
