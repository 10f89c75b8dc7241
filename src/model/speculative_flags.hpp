#pragma once
// SGLang's three speculative settings (speculative_num_steps, speculative_eagle_topk,
// speculative_num_draft_tokens; gen's flags of the same names) turned into the configuration a trace
// describes, by the rules SGLang's python/sglang/srt/server_args.py applies to them
// (docs/trace-format.md lists them). Problems are SettingErrors naming the setting.
#include <optional>
#include <string>
#include <vector>

#include "core/setting.hpp"
#include "trace/speculative.hpp"

namespace eaglesim {

struct SpeculativeFlags {
  std::optional<int> num_steps;
  std::optional<int> eagle_topk;
  std::optional<int> num_draft_tokens;
  bool any() const { return num_steps || eagle_topk || num_draft_tokens; }
};

struct ResolvedSpeculative {
  SpeculativeConfig config;         // an EAGLE-3 config; topk > 1 with its derived verify tree
  std::vector<std::string> notes;   // what was adjusted as SGLang adjusts it
};

// Without eagle_topk the topk is 1; without num_draft_tokens at topk 1 the draft tokens are
// steps + 1. num_steps is required with either of the others (SGLang picks all three itself only when none is given). At topk 1 a draft-token count
// other than steps + 1 is set to steps + 1, with a note, as SGLang does.
ResolvedSpeculative resolve_speculative_flags(const SpeculativeFlags& flags);

Setting speculative_setting(SpecField field);
// SettingError "SETTING: expected X, got Y" for the first rule `config` breaks.
void throw_if_speculative_problem(const SpeculativeConfig& config);

}  // namespace eaglesim
