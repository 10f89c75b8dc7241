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
  std::int64_t kv_len = 4096;        // context length the attention ops attend over (within each layer's reach)
  DType weight_dtype = DType::bf16;  // bf16, fp8 or int4 (weight-only) for the target's linear layers
  // Per class of linear layer (a checkpoint's quantization_config, model/checkpoint_quantization.hpp):
  // when set, instead of weight_dtype.
  std::optional<LinearFormats> formats;
  // The KV cache's format (bf16 or fp8, SGLang's and vLLM's --kv-cache-dtype): the attention's
  // KV bytes.
  DType kv_cache_dtype = DType::bf16;
  std::optional<ModelConfig> draft;  // EAGLE-3 head: adds the "draft" step (and "draft_extend")
  // The draft is the target's own multi-token-prediction layer (ModelConfig::mtp_layers; SGLang's
  // NEXTN under --speculative-algorithm EAGLE): instead of `draft`.
  bool mtp_draft = false;
  // Version 2 (docs/trace-format.md). A trace that needs none of it is written as version 1.
  int batch = 1;                          // concurrent requests
  std::vector<std::int64_t> kv_lens;      // per request (one per request); empty: kv_len for every one
  std::optional<SpeculativeConfig> speculative;  // SGLang's config (speculative_flags.hpp); absent:
                                                 // the chain of tokens - 1 drafts
  // The cycle as SGLang's EAGLE worker runs it: the draft-extend step, draft forwards without
  // the fc of the target's features, top-k selection, tree building, sampling and the host
  // synchronisation. Without it: the verify, the draft forward (run num_steps times) and decode.
  bool engine_cycle = false;
  // Whose kernels the steps list (docs/engine-steps.md): the GEMMs, attention, norms and
  // allreduces every engine runs, plus that engine's own small kernels (RoPE, KV-cache store, MoE
  // routing and sorting, activation quantisation, EAGLE-3's captured hidden states). `torch` is the
  // PyTorch reference step: one GPU, bf16, no draft.
  ServingEngine engine = ServingEngine::sglang;
  // Expert parallelism (SGLang --ep-size, vLLM --enable-expert-parallel): the routed experts split
  // over `ep` groups of tp / ep ranks, each expert's width over a group's ranks; 1: TP-MoE. It
  // divides tp and the routed experts.
  int ep = 1;
  // Data-parallel attention (SGLang --enable-dp-attention with --dp = tp): every rank runs
  // attention, the dense layers and lm_head unsharded on its own ceil(batch / tp) requests, and
  // the MoE exchanges tokens by all-to-all dispatch and combine (DeepEP) over all tp ranks; needs
  // ep = tp.
  bool dp_attention = false;
};

// Limits gen accepts (beyond them a verify step is not a verify step any more).
constexpr int kMaxGenTokens = 16384;
constexpr int kMaxGenBatch = 4096;

// Experts a MoE layer reads weights of when `tokens` tokens each pick `top_k` distinct experts of
// `experts`: the expected number of distinct experts under balanced routing (what MoE training
// drives the router to with auxiliary losses or bias balancing),
//   E * (1 - (1 - k/E)^T),
// since one token misses a given expert with probability 1 - k/E. Rounded to the nearest integer
// and kept within [k, min(E, T * k)] for T >= 1; 0 for T = 0 or a dense layer. The bound
// min(E, T * k) assumes no two tokens share an expert and overstates mid-sized steps the most
// (Kimi-K2, E = 384, k = 8: T = 4 gives 31 against 32, T = 32 gives 188 against 256), which
// would inflate a verify's expert-weight reads against a decode's.
std::int64_t experts_touched(std::int64_t experts, std::int64_t top_k, std::int64_t tokens);
// The experts of one rank's experts / ep that `tokens` tokens touch: (E / ep) x (1 - (1 - k/E)^T),
// rounded, at least 1; experts_touched for ep 1.
std::int64_t local_experts_touched(std::int64_t experts, std::int64_t top_k, std::int64_t tokens, int ep);

// Routed rows on the busiest of `ranks` expert-parallel ranks when `copies` token copies (tokens x
// top-k) land on ranks drawn uniformly (balanced routing): the expected maximum of the ranks'
// loads, each Poisson with mean copies / ranks, E[max] = sum_m (1 - F(m)^ranks), rounded up. The
// MoE layer waits for its busiest rank (the combine, or the allreduce after it), so that rank's
// rows price the grouped GEMMs. Top-8 routing of 32 tokens over EP16: 16 rows a rank on average,
// 24 on the busiest; of 4096 tokens 2048 against 2129. At least ceil(copies / ranks), at most
// `copies`; `copies` for ranks <= 1.
std::int64_t busiest_rank_rows(std::int64_t copies, int ranks);

// Throws InputError on options the model cannot be laid out with (tp not dividing heads, ...).
Trace generate_trace(const ModelConfig& model, const GenOptions& options);

}  // namespace eaglesim
