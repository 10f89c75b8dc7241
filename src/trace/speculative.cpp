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

// Method none: no drafts, so none of the three numbers and no tree.
std::optional<SpecProblem> find_no_drafts_problem(const SpeculativeConfig& c) {
  if (c.num_steps != 0) return problem(SpecField::num_steps, "no num_steps with method none", std::to_string(c.num_steps));
  if (c.eagle_topk != 0) return problem(SpecField::eagle_topk, "no eagle_topk with method none", std::to_string(c.eagle_topk));
  if (c.num_draft_tokens != 0)
    return problem(SpecField::num_draft_tokens, "no num_draft_tokens with method none", std::to_string(c.num_draft_tokens));
  if (c.mask == VerifyMask::tree) return problem(SpecField::mask, "no tree with method none", "tree");
  return std::nullopt;
}

// A rule of the three numbers, worded as the trace reader and gen name it.
SpecProblem broken_rule_problem(const BrokenSpecRule& b, const SpeculativeConfig& c) {
  const std::string got = std::to_string(b.got);
  switch (b.rule) {
    case SpecRule::num_steps:
      return problem(SpecField::num_steps, fmt::format("an integer in [{}, {}]", b.least, b.most), got);
    case SpecRule::eagle_topk:
      return problem(SpecField::eagle_topk, fmt::format("an integer in [{}, {}]", b.least, b.most), got);
    case SpecRule::chain_num_draft_tokens:
      return problem(SpecField::num_draft_tokens,
                     fmt::format("num_steps + 1 = {} (SGLang verifies the chain of num_steps drafts and the root when "
                                 "eagle_topk is 1)",
                                 b.most),
                     got);
    case SpecRule::tree_num_draft_tokens: break;
  }
  const std::int64_t candidates = draft_candidates(c.num_steps, c.eagle_topk);
  return problem(SpecField::num_draft_tokens,
                 fmt::format("an integer in [{}, {}] (the root and at most the {} candidates that {} steps of top-{} "
                             "drafting score{})",
                             b.least, b.most, candidates, c.num_steps, c.eagle_topk,
                             b.most < 1 + candidates ? fmt::format(", at most {}", kMaxSpecDraftTokens) : ""),
                 got);
}

// The mask and parent list the (valid) three numbers call for.
std::optional<SpecProblem> find_verify_tree_problem(const SpeculativeConfig& c) {
  if (c.eagle_topk > 1 && c.mask != VerifyMask::tree)
    return problem(SpecField::mask, "tree (eagle_topk > 1 drafts a tree)", to_string(c.mask));
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

}  // namespace

std::optional<SpecProblem> find_speculative_problem(const SpeculativeConfig& c) {
  if (c.method == SpecMethod::none) return find_no_drafts_problem(c);
  if (auto broken = find_broken_spec_rule(c, SpecBounds{kMaxSpecSteps, kMaxSpecTopk, kMaxSpecDraftTokens}))
    return broken_rule_problem(*broken, c);
  return find_verify_tree_problem(c);
}

}  // namespace eaglesim
