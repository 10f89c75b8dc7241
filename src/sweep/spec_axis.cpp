#include "sweep/spec_axis.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.hpp"
#include "trace/speculative.hpp"

namespace eaglesim {

namespace {

bool config_less(const SpecConfig& a, const SpecConfig& b) {
  return std::tie(a.num_steps, a.eagle_topk, a.num_draft_tokens) < std::tie(b.num_steps, b.eagle_topk, b.num_draft_tokens);
}

// SGLang's rules, then the trace format's bounds (beyond them a configuration is absurd).
std::optional<std::string> problem(const SpecConfig& c) {
  if (auto p = engine_config_problem(c)) return p->field + ": " + p->message;
  if (c.num_steps > kMaxSpecSteps) return fmt::format("num_steps: expected at most {}, got {}", kMaxSpecSteps, c.num_steps);
  if (c.num_draft_tokens > kMaxSpecDraftTokens)
    return fmt::format("num_draft_tokens: expected at most {}, got {}", kMaxSpecDraftTokens, c.num_draft_tokens);
  return std::nullopt;
}

}  // namespace

SpecAxis build_spec_axis(const SpecAxisLists& in) {
  if (in.num_steps.empty() && (!in.eagle_topk.empty() || !in.num_draft_tokens.empty()))
    throw SettingError(Setting::speculative_num_steps,
                       fmt::format("required with {} (the draft forwards per cycle)",
                                   setting_name(in.eagle_topk.empty() ? Setting::speculative_num_draft_tokens
                                                                      : Setting::speculative_eagle_topk)));
  const std::vector<int> topks = in.eagle_topk.empty() ? std::vector<int>{1} : in.eagle_topk;
  if (in.num_draft_tokens.empty() && !in.num_steps.empty())
    for (int k : topks)
      if (k > 1)
        throw SettingError(Setting::speculative_num_draft_tokens,
                           fmt::format("required with {} {} (the tokens of the tree each request verifies)",
                                       setting_name(Setting::speculative_eagle_topk), k));
  SpecAxis axis;
  std::vector<SpecConfig> all;
  for (int n : in.chain_draft_tokens) all.push_back(chain_config(n));
  for (int s : in.num_steps)
    for (int k : topks) {
      if (in.num_draft_tokens.empty()) {
        all.push_back({s, k, s + 1});
        continue;
      }
      // At topk 1 SGLang runs the chain whatever the draft-token count says (it sets it to
      // steps + 1); the other counts are listed as skipped.
      if (k == 1) all.push_back({s, 1, s + 1});
      for (int d : in.num_draft_tokens)
        if (k != 1 || d != s + 1) all.push_back({s, k, d});
    }
  for (const SpecConfig& c : all) {
    if (auto why = problem(c)) {
      axis.skipped.push_back({c, *why});
      continue;
    }
    axis.configs.push_back(c);
  }
  std::sort(axis.configs.begin(), axis.configs.end(), config_less);
  axis.configs.erase(std::unique(axis.configs.begin(), axis.configs.end()), axis.configs.end());
  if (axis.configs.empty()) {
    std::vector<std::string> first;
    for (std::size_t i = 0; i < axis.skipped.size() && i < 3; ++i)
      first.push_back(fmt::format("({}) {}", short_spec(axis.skipped[i].config), axis.skipped[i].reason));
    throw SettingError(Setting::speculative_num_draft_tokens,
                       fmt::format("no valid (num_steps, eagle_topk, num_draft_tokens) among the {} combinations of "
                                   "the lists: {}{}",
                                   axis.skipped.size(), fmt::join(first, "; "), axis.skipped.size() > 3 ? "; ..." : ""));
  }
  return axis;
}

std::string short_spec(const SpecConfig& c) {
  return fmt::format("{}/{}/{}", c.num_steps, c.eagle_topk, c.num_draft_tokens);
}

}  // namespace eaglesim
