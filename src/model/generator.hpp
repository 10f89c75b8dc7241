#pragma once
// The trace generator: the ops one tensor-parallel rank runs in one forward pass of a model,
// derived from its config.json. It lays out each decoder layer as SGLang runs it under TP
// (column-parallel QKV / gate-up, row-parallel O / down followed by an allreduce, vocab-parallel
// embedding and lm_head, TP-MoE with every expert's width split across ranks). The rules and
// assumptions are spelled out in docs/trace-format.md, "Generated traces".
#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.hpp"
#include "model/model_config.hpp"
#include "trace/speculative.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct GenOptions {
  int tp = 1;
  int tokens = 1;                    // verify-step tokens per request, without `speculative`: 1 + chain drafts
  std::int64_t kv_len = 4096;        // context length every attention op attends over
  DType weight_dtype = DType::bf16;  // bf16, fp8 or int4 (weight-only) for the target's linear layers
  std::optional<ModelConfig> draft;  // EAGLE-3 head: adds the "draft" step (and "draft_extend")
  // Version 2 (docs/trace-format.md). A trace that needs none of it is written as version 1.
  int batch = 1;                          // concurrent requests
  std::vector<std::int64_t> kv_lens;      // per request (one per request); empty: kv_len for every one
  std::optional<SpeculativeConfig> speculative;  // SGLang's config (speculative_flags.hpp); absent:
                                                 // the chain of tokens - 1 drafts
  // The cycle as SGLang's EAGLE worker runs it: the draft-extend step, draft forwards without
  // the fc of the target's features, top-k selection, tree building, sampling and the host
  // synchronisation. Without it: the verify, the draft forward (run num_steps times) and decode.
  bool engine_cycle = false;
};

// Limits gen accepts (beyond them a verify step is not a verify step any more).
constexpr int kMaxGenTokens = 16384;
constexpr int kMaxGenBatch = 4096;

// Experts a MoE layer reads weights of when `tokens` tokens each pick `top_k` of `experts`:
// min(experts, tokens * top_k), i.e. no two tokens share an expert. This is an upper bound on
// the expected count under uniform routing, E * (1 - (1 - k/E)^T), and within a few percent of it
// while T * k is small against E (Kimi-K2, T = 4: 32 against 30.8).
std::int64_t experts_touched(std::int64_t experts, std::int64_t top_k, std::int64_t tokens);

// Throws InputError on options the model cannot be laid out with (tp not dividing heads, ...).
Trace generate_trace(const ModelConfig& model, const GenOptions& options);

}  // namespace eaglesim
