#include "model/speculative_flags.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "trace/eagle_tree.hpp"

namespace eaglesim {

Setting speculative_setting(SpecField field) {
  switch (field) {
    case SpecField::num_steps: return Setting::speculative_num_steps;
    case SpecField::eagle_topk: return Setting::speculative_eagle_topk;
    case SpecField::num_draft_tokens: return Setting::speculative_num_draft_tokens;
    case SpecField::method:
    case SpecField::mask:
    case SpecField::parents: break;
  }
  return Setting::speculative_eagle_topk;  // the method is always EAGLE-3 and the tree follows from topk
}

void throw_if_speculative_problem(const SpeculativeConfig& c) {
  if (auto p = find_speculative_problem(c))
    throw SettingError(speculative_setting(p->field), fmt::format("expected {}, got {}", p->expected, p->got));
}

ResolvedSpeculative resolve_speculative_flags(const SpeculativeFlags& f) {
  ResolvedSpeculative r;
  SpeculativeConfig& c = r.config;
  if (!f.num_steps)
    throw SettingError(Setting::speculative_num_steps,
                       fmt::format("required with {} (SGLang chooses the three itself only when none of them is given)",
                                   setting_name(f.eagle_topk ? Setting::speculative_eagle_topk
                                                             : Setting::speculative_num_draft_tokens)));
  c.method = SpecMethod::eagle3;
  c.num_steps = *f.num_steps;
  c.eagle_topk = f.eagle_topk.value_or(1);
  if (c.eagle_topk == 1) {
    c.num_draft_tokens = c.num_steps + 1;
    if (f.num_draft_tokens && *f.num_draft_tokens != c.num_draft_tokens)
      r.notes.push_back(fmt::format("{} {} adjusted to {} + 1 = {}: with {} 1 SGLang verifies the chain of num_steps "
                                    "drafts and the root, and sets it so (server_args.py)",
                                    setting_name(Setting::speculative_num_draft_tokens), *f.num_draft_tokens,
                                    setting_name(Setting::speculative_num_steps), c.num_draft_tokens,
                                    setting_name(Setting::speculative_eagle_topk)));
  } else {
    if (!f.num_draft_tokens && c.eagle_topk > 1)
      throw SettingError(Setting::speculative_num_draft_tokens,
                         fmt::format("required with {} {} (the tokens of the tree each request verifies)",
                                     setting_name(Setting::speculative_eagle_topk), c.eagle_topk));
    c.num_draft_tokens = f.num_draft_tokens.value_or(0);
    c.mask = VerifyMask::tree;
  }
  // The ranges first, so that a tree is only derived for a valid configuration.
  SpeculativeConfig ranges = c;
  ranges.mask = VerifyMask::chain;
  if (c.mask == VerifyMask::tree) ranges.parents.clear();
  if (auto p = find_speculative_problem(ranges); p && p->field != SpecField::mask) throw_if_speculative_problem(ranges);
  if (c.mask == VerifyMask::tree) c.parents = derive_eagle_tree(c.num_steps, c.eagle_topk, c.num_draft_tokens);
  throw_if_speculative_problem(c);
  return r;
}

}  // namespace eaglesim
