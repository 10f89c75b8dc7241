#include "trace/trace.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

std::string mtp_draft_name(const std::string& target) { return target + " (MTP layer)"; }

bool drafts_with_mtp(const TraceMeta& meta) {
  return !meta.model.empty() && meta.draft_model == mtp_draft_name(meta.model);
}

const char* speculation_method(const TraceMeta& meta) { return drafts_with_mtp(meta) ? "MTP" : "EAGLE-3"; }

const std::vector<std::string>& step_names() {
  static const std::vector<std::string> names{"verify", "draft", "decode", "draft_extend"};
  return names;
}

const std::vector<std::string>& version1_step_names() {
  static const std::vector<std::string> names{"verify", "draft", "decode"};
  return names;
}

const Op* Step::first(OpKind kind) const {
  for (const Op& op : ops)
    if (op.kind == kind) return &op;
  return nullptr;
}

const Step* Trace::find_step(const std::string& name) const {
  for (const auto& s : steps)
    if (s.name == name) return &s;
  return nullptr;
}

const Step& Trace::verify() const {
  const Step* s = find_step("verify");
  if (!s) throw InputError("trace has no \"verify\" step");
  return *s;
}

std::string first_version2_content(const Trace& t) {
  if (t.meta.batch) return "meta.batch";
  if (!t.meta.kv_lens.empty()) return "meta.kv_lens";
  if (t.meta.speculative) return "meta.speculative";
  if (t.meta.engine) return "meta.engine";
  const auto& v1_steps = version1_step_names();
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const Step& s = t.steps[i];
    if (std::find(v1_steps.begin(), v1_steps.end(), s.name) == v1_steps.end())
      return fmt::format("steps[{}] ({})", i, s.name);
    for (std::size_t j = 0; j < s.ops.size(); ++j)
      if (s.ops[j].has_version2_fields()) return fmt::format("steps[{}].ops[{}] ({})", i, j, s.ops[j].name);
  }
  return "";
}

int required_version(const Trace& t) { return first_version2_content(t).empty() ? kTraceVersion1 : kTraceVersionLatest; }

int draft_forwards_per_cycle(const Trace& t) {
  if (t.find_step("draft_extend") && t.meta.speculative) return std::max(0, t.meta.speculative->num_steps - 1);
  if (t.meta.draft_tokens) return *t.meta.draft_tokens;
  return std::max(0, t.meta.tokens - 1);
}

}  // namespace eaglesim
