#include "sweep/trace_memory_check.hpp"

#include <vector>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "sweep/sweep_inputs.hpp"

namespace eaglesim {

namespace {
std::optional<ModelConfig> preset_model(const std::string& name) {
  if (name.empty()) return std::nullopt;
  try {
    return read_model_config(resolve_model_path("model", name));
  } catch (const InputError&) {
    return std::nullopt;
  }
}
}  // namespace

TraceMemoryCheck check_trace_memory(const Trace& trace, const Topology& topo, double gpu_mem_util) {
  TraceMemoryCheck out;
  if (trace.meta.source != "generated") {
    out.unchecked_why = "an imported trace ran where it was recorded";
    return out;
  }
  const std::optional<ModelConfig> target = preset_model(trace.meta.model);
  if (!target) {
    out.unchecked_why = fmt::format("no model config named {} in models/llm", trace.meta.model);
    return out;
  }
  const std::optional<ModelConfig> draft = preset_model(trace.meta.draft_model);
  // The formats gen laid the trace out in: the checkpoint's when the trace's weight dtype is the
  // one gen summarises them by, else every linear layer in the trace's dtype.
  const DType dtype = trace.meta.weight_dtype.value_or(DType::bf16);
  LinearFormats formats = LinearFormats::all(dtype);
  if (const auto& q = target->quantization)
    if (q->formats.summary(target->is_moe()) == dtype) formats = q->formats;
  std::vector<std::int64_t> kv_lens = trace.meta.kv_lens;
  if (kv_lens.empty())
    kv_lens.assign(static_cast<std::size_t>(trace.meta.batch_size()), trace.meta.kv_len.value_or(0));
  // A trace with all-to-alls has data-parallel attention (gen --dp-attention): a rank holds its
  // ceil(batch / tp) requests' KV at attention TP 1, everything but the routed experts unsharded.
  bool dp_attention = false;
  for (const Step& s : trace.steps)
    for (const Op& op : s.ops) dp_attention = dp_attention || op.kind == OpKind::all_to_all;
  const bool mtp = drafts_with_mtp(trace.meta);
  const MemoryNeed need = memory_needed(*target, mtp ? nullptr : (draft ? &*draft : nullptr),
                                        RankHolding{trace.meta.tp, dp_attention, mtp}, formats, std::move(kv_lens));
  out.verdict = check_memory(need, topo.gpu, gpu_mem_util);
  return out;
}

}  // namespace eaglesim
