#include "model/generator.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "model/speculative_flags.hpp"
#include "trace/eagle_tree.hpp"
#include "trace/trace_json.hpp"

namespace eaglesim {

namespace {

// The requests one step serves and how their attention looks: `batch` requests of
// `tokens_per_request` query tokens each, every request over its KV (kv_len, or kv_lens[r]).
struct Requests {
  std::int64_t batch = 1;
  std::int64_t tokens_per_request = 1;
  std::int64_t kv_len = 0;
  const std::vector<std::int64_t>* kv_lens = nullptr;  // ragged; nullptr: kv_len for every request
  AttentionMask mask = AttentionMask::causal;
  // The model whose layers' reach (sliding window, attention chunk) bounds the KV each attention op
  // reads; nullptr: every layer over the whole context.
  const ModelConfig* reach = nullptr;
  std::int64_t rows() const { return batch * tokens_per_request; }
};

// Appends the ops of one step for one rank. GEMMs, norms, activations and allreduces see the
// step's rows (every request's tokens together); attention sees the requests.
class StepBuilder {
 public:
  StepBuilder(int tp, const Requests& requests, ServingEngine engine, DType kv_dtype)
      : tp_(tp), engine_(engine), kv_dtype_(kv_dtype), req_(requests), t_(requests.rows()) {}

  std::vector<Op> take() { return std::move(ops_); }
  int tp() const { return tp_; }
  // Expert parallelism: the experts over `ep` groups; with `a2a` the tokens of all `world` ranks
  // reach them by all-to-all (data-parallel attention, tp() 1), else through the TP allreduce.
  void set_expert_parallel(int ep, bool a2a, int world) { ep_ = ep; a2a_ = a2a; world_ = world; }
  int ep() const { return ep_; }
  bool a2a() const { return a2a_; }
  int world() const { return world_; }
  ServingEngine engine() const { return engine_; }
  std::int64_t tokens_per_request() const { return req_.tokens_per_request; }
  std::int64_t kv_len() const { return req_.kv_len; }
  bool is(ServingEngine e) const { return engine_ == e; }
  std::int64_t tokens() const { return t_; }

  void gemm(const std::string& name, int layer, std::int64_t n, std::int64_t k, DType dtype,
            OpKind kind = OpKind::gemm, std::int64_t rows = 0) {
    Op op = make(kind, name, layer);
    op.m = rows > 0 ? rows : t_; op.n = n; op.k = k; op.dtype = dtype;
    ops_.push_back(op);
  }
  void grouped_gemm(const std::string& name, int layer, std::int64_t rows, std::int64_t experts,
                    std::int64_t n, std::int64_t k, DType dtype) {
    Op op = make(OpKind::grouped_gemm, name, layer);
    op.tokens = rows; op.experts = experts; op.n = n; op.k = k; op.dtype = dtype;
    ops_.push_back(op);
  }
  void rowwise(OpKind kind, const std::string& name, int layer, std::int64_t rows, std::int64_t width) {
    Op op = make(kind, name, layer);
    op.tokens = rows; op.hidden = width;
    ops_.push_back(op);
  }
  void attention_gqa(int layer, std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim) {
    Op op = attention(layer);
    op.heads = heads; op.kv_heads = kv_heads; op.head_dim = head_dim;
    op.variant = AttentionVariant::gqa; op.dtype = kv_dtype_;
    ops_.push_back(op);
  }
  void attention_mla(int layer, std::int64_t heads, std::int64_t kv_lora_rank, std::int64_t rope_dim) {
    // Absorbed MLA (as decode and verify run it): every head attends over one shared latent KV
    // "head" of width kv_lora_rank + rope_dim.
    Op op = attention(layer);
    op.heads = heads; op.kv_heads = 1;
    op.head_dim = kv_lora_rank + rope_dim;
    op.variant = AttentionVariant::mla; op.kv_lora_rank = kv_lora_rank; op.rope_dim = rope_dim; op.dtype = kv_dtype_;
    ops_.push_back(op);
  }
  // One of an engine's small kernels: reads and writes `operands` bf16 tensors of rows x width.
  void elementwise(const std::string& name, int layer, std::int64_t rows, std::int64_t width, int operands) {
    Op op = make(OpKind::elementwise, name, layer);
    op.tokens = rows; op.hidden = width; op.operands = operands;
    ops_.push_back(op);
  }
  // The allreduce that ends a row-parallel block: the partial sums of rows x hidden bf16
  // activations. None at TP=1.
  void allreduce(const std::string& name, int layer, std::int64_t hidden, const char* site) {
    if (tp_ == 1) return;
    Op op = make(OpKind::allreduce, name, layer);
    op.bytes = t_ * hidden * 2;
    op.dtype = DType::bf16;
    op.site = site;
    ops_.push_back(op);
  }
  // The per-cycle ops (docs/trace-format.md, "The cycle").
  void topk_select(std::int64_t rows, std::int64_t vocab, std::int64_t topk) {
    Op op = make(OpKind::topk_select, "topk_select", -1);
    op.rows = rows; op.vocab = vocab; op.topk = topk;
    ops_.push_back(op);
  }
  void tree_build(std::int64_t candidates) {
    Op op = make(OpKind::tree_build, "tree_build", -1);
    op.batch = req_.batch; op.candidates = candidates; op.tokens = req_.tokens_per_request;
    ops_.push_back(op);
  }
  void sampling(std::int64_t vocab) {
    Op op = make(OpKind::sampling, "sampling", -1);
    op.rows = t_; op.vocab = vocab;
    ops_.push_back(op);
  }
  void host_sync() { ops_.push_back(make(OpKind::host_sync, "host_sync", -1)); }
  // A MoE layer's dispatch (this rank's tokens to their experts' ranks) or combine.
  void all_to_all(const std::string& name, int layer, bool combine, std::int64_t hidden, std::int64_t top_k,
                  std::int64_t experts, DType payload) {
    Op op = make(OpKind::all_to_all, name, layer);
    op.combine = combine;
    op.tokens = t_; op.hidden = hidden; op.topk = static_cast<std::int32_t>(top_k); op.experts = experts;
    op.dtype = payload;
    op.site = combine ? "moe_combine" : "moe_dispatch";
    ops_.push_back(op);
  }

 private:
  static Op make(OpKind kind, const std::string& name, int layer) {
    Op op;
    op.kind = kind;
    op.name = name;
    op.layer = layer;
    return op;
  }
  Op attention(int layer) const {
    Op op = make(OpKind::attention, "attn", layer);
    op.q_tokens = req_.tokens_per_request;
    op.batch = req_.batch;
    op.kv_len = req_.kv_len;
    if (req_.kv_lens) op.kv_lens = *req_.kv_lens;
    if (req_.reach) {
      const std::int64_t q = req_.tokens_per_request;
      op.kv_len = attended_kv(*req_.reach, layer, op.kv_len, q);
      for (std::int64_t& kv : op.kv_lens) kv = attended_kv(*req_.reach, layer, kv, q);
      if (!op.kv_lens.empty()) op.kv_len = *std::max_element(op.kv_lens.begin(), op.kv_lens.end());
    }
    op.mask = req_.mask;
    return op;
  }
  int tp_;
  int ep_ = 1, world_ = 1;
  bool a2a_ = false;
  ServingEngine engine_;
  DType kv_dtype_;  // the KV cache's format, on every attention op
  Requests req_;
  std::int64_t t_;
  std::vector<Op> ops_;
};

// An engine's kernels around the GEMMs and attention (docs/engine-steps.md gives each rule's
// source). Facts read from the engines' public source:
//   SGLang  rotary_embedding/base.py RotaryEmbedding.forward_cuda: one RoPE launch rotates q and k
//           in place; mem_cache/memory_pool.py set_kv_buffer: one store_cache launch writes K and
//           V; models/qwen3_moe.py apply_qk_norm_rope: the KV store folded into the RoPE kernel.
//   vLLM    rotary_embedding custom op: one launch for q and k; v1/attention/backends
//           flash_attn.py: reshape_and_cache_flash writes K and V in one launch.
//   TRT-LLM the attention op's preprocessing kernel (unfusedAttentionKernels,
//           applyBiasRopeUpdateKVCache) applies RoPE and writes the KV cache in one launch.
//   torch   the reference step (tools/torch-steps.tsv), as recorded on an H100: rotate-half RoPE
//           as seven element-wise kernels each for q and k, the K-cache write as one copy_, and
//           SDPA's conversion of the boolean mask.

// Rotate-half RoPE as PyTorch runs `cat([a*c - b*s, b*c + a*s])` over half-width views: a*c,
// b*s, the subtraction, b*c, a*s, the addition (each over the half width), then the concatenation
// (both halves read, the full width written).
void torch_rope(StepBuilder& b, const char* which, int layer, std::int64_t heads, std::int64_t head_dim) {
  const std::int64_t half = heads * head_dim / 2;
  const std::string n = std::string("rope_") + which;
  b.elementwise(n + ".a_cos", layer, b.tokens(), half, 2);
  b.elementwise(n + ".b_sin", layer, b.tokens(), half, 2);
  b.elementwise(n + ".sub", layer, b.tokens(), half, 3);
  b.elementwise(n + ".b_cos", layer, b.tokens(), half, 2);
  b.elementwise(n + ".a_sin", layer, b.tokens(), half, 2);
  b.elementwise(n + ".add", layer, b.tokens(), half, 3);
  b.elementwise(n + ".cat", layer, b.tokens(), half, 4);
}

// RoPE on q and k and the KV-cache store of the new tokens' K and V, as each engine launches them.
// A layer without RoPE (Llama-4's NoPE layers) stores K and V only.
void rope_and_kv_store(StepBuilder& b, const ModelConfig& m, int layer, std::int64_t hq, std::int64_t hkv,
                       std::int64_t d) {
  const std::int64_t T = b.tokens();
  if (!m.layer_uses_rope(layer) && !b.is(ServingEngine::torch) && !b.is(ServingEngine::trtllm)) {
    b.elementwise(b.is(ServingEngine::vllm) ? "reshape_and_cache_flash" : "set_kv_buffer", layer, T, 2 * hkv * d, 2);
    return;
  }
  switch (b.engine()) {
    case ServingEngine::torch:
      torch_rope(b, "q", layer, hq, d);
      torch_rope(b, "k", layer, hkv, d);
      b.elementwise("k_cache_copy", layer, T, hkv * d, 2);  // the reference step writes K only
      // SDPA turns the boolean verify mask into an additive one on every call: two scalar fills
      // and a where over the T x KV mask.
      b.elementwise("attn_mask.fill", layer, 1, 1, 1);
      b.elementwise("attn_mask.fill", layer, 1, 1, 1);
      b.elementwise("attn_mask.where", layer, b.tokens_per_request(), b.kv_len(), 2);
      return;
    case ServingEngine::trtllm:
      // RoPE reads and writes q and k; the same kernel writes K and V to the cache.
      b.elementwise("rope_kv_cache_update", layer, T, (hq + 2 * hkv) * d, 2);
      return;
    case ServingEngine::sglang:
      if (m.arch == Architecture::qwen3_moe) {
        b.elementwise("rope_set_kv_buffer", layer, T, (hq + 2 * hkv) * d, 2);
        return;
      }
      [[fallthrough]];
    case ServingEngine::vllm:
      b.elementwise("rotary_emb", layer, T, (hq + hkv) * d, 2);
      b.elementwise(b.is(ServingEngine::vllm) ? "reshape_and_cache_flash" : "set_kv_buffer", layer, T, 2 * hkv * d, 2);
      return;
  }
}

// The activation quantisation an engine runs before each fp8 GEMM: SGLang's per-token-group
// quant (quantization/fp8_utils.py) and vLLM's dynamic per-token scaled_fp8_quant read the bf16
// input and write fp8 values and scales. TensorRT-LLM fuses it into the kernel before.
void activation_quant(StepBuilder& b, int layer, std::int64_t rows, std::int64_t width, DType w) {
  if (w != DType::fp8 || b.is(ServingEngine::trtllm) || b.is(ServingEngine::torch)) return;
  b.elementwise("act_quant_fp8", layer, rows, width, 2);
}

// A linear layer of the target: its activation quantisation (fp8), then the GEMM.
void linear(StepBuilder& b, const std::string& name, int layer, std::int64_t n, std::int64_t k, DType w) {
  activation_quant(b, layer, b.tokens(), k, w);
  b.gemm(name, layer, n, k, w);
}

// Column-parallel QKV (+ per-head q/k norm), RoPE and the KV store, attention, row-parallel O.
// `in_width` is what the QKV projection reads: hidden, or 2 x hidden in an EAGLE-3 head
// ([embedding, fused feature]).
void gqa_block(StepBuilder& b, const ModelConfig& m, int layer, std::int64_t in_width, DType w) {
  const std::int64_t hq = heads_per_rank(m, b.tp()), hkv = kv_heads_per_rank(m, b.tp()), d = m.head_dim;
  linear(b, "qkv_proj", layer, (hq + 2 * hkv) * d, in_width, w);
  if (m.layer_has_qk_norm(layer)) {
    if (b.is(ServingEngine::torch)) {  // F.rms_norm on q, then on k, each a strided view of qkv copied first
      b.elementwise("q_contiguous", layer, b.tokens(), hq * d, 2);
      b.rowwise(OpKind::rmsnorm, "q_norm", layer, b.tokens() * hq, d);
      b.elementwise("k_contiguous", layer, b.tokens(), hkv * d, 2);
      b.rowwise(OpKind::rmsnorm, "k_norm", layer, b.tokens() * hkv, d);
    } else {
      b.rowwise(OpKind::rmsnorm, "qk_norm", layer, b.tokens() * (hq + hkv), d);
    }
  }
  rope_and_kv_store(b, m, layer, hq, hkv, d);
  b.attention_gqa(layer, hq, hkv, d);
  linear(b, "o_proj", layer, m.hidden, hq * d, w);
}

// Multi-head latent attention, absorbed form. The query and KV down-projections are small and
// replicated on every rank; with a query LoRA they read the same input, and SGLang and vLLM run
// them as one GEMM (`fused_qkv_a_proj_with_mqa`, n = q_lora_rank + kv_lora_rank + rope), whose
// output is split into the query latent and the KV latent, each normed. q_b_proj is
// column-parallel over heads. kv_b_proj is applied as its two absorbed halves: the key half maps
// q_nope into the latent space before attention, the value half maps the attention output back
// out; each is written as a GEMM with the same FLOPs and weight bytes as the per-head batched
// matmul. RoPE rotates q_pe and k_pe (one launch) and the latent row [c_kv, k_pe] is stored in the
// MLA pool (SGLang's set_mla_kv_buffer, vLLM's concat_and_cache_mla: one launch).
void mla_block(StepBuilder& b, const ModelConfig& m, int layer, DType w) {  // w: the attention's format
  const std::int64_t hq = heads_per_rank(m, b.tp());
  const std::int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  const std::int64_t kv_a = m.kv_lora_rank + m.qk_rope_head_dim;
  if (m.q_lora_rank > 0) {
    linear(b, "fused_qkv_a_proj", layer, m.q_lora_rank + kv_a, m.hidden, w);
    b.rowwise(OpKind::rmsnorm, "q_a_layernorm", layer, b.tokens(), m.q_lora_rank);
    b.rowwise(OpKind::rmsnorm, "kv_a_layernorm", layer, b.tokens(), m.kv_lora_rank);
    linear(b, "q_b_proj", layer, hq * qk, m.q_lora_rank, w);
  } else {
    linear(b, "q_proj", layer, hq * qk, m.hidden, w);
    linear(b, "kv_a_proj", layer, kv_a, m.hidden, w);
    b.rowwise(OpKind::rmsnorm, "kv_a_layernorm", layer, b.tokens(), m.kv_lora_rank);
  }
  b.gemm("kv_b_proj.k_absorb", layer, hq * m.kv_lora_rank, m.qk_nope_head_dim, w);
  b.elementwise("rope_mla", layer, b.tokens(), (hq + 1) * m.qk_rope_head_dim, 2);
  b.elementwise("mla_kv_store", layer, b.tokens(), kv_a, 2);
  b.attention_mla(layer, hq, m.kv_lora_rank, m.qk_rope_head_dim);
  b.gemm("kv_b_proj.v_up", layer, hq * m.v_head_dim, m.kv_lora_rank, w);
  linear(b, "o_proj", layer, m.hidden, hq * m.v_head_dim, w);
}

// SwiGLU MLP of width `width` (already the per-rank slice): column-parallel gate+up, SiLU*mul,
// row-parallel down. The reference step runs SiLU on the gate half and the multiplication as two
// PyTorch kernels.
void mlp_block(StepBuilder& b, const std::string& prefix, int layer, std::int64_t hidden,
               std::int64_t width, DType w) {
  linear(b, prefix + "gate_up_proj", layer, 2 * width, hidden, w);
  if (b.is(ServingEngine::torch)) {
    b.elementwise(prefix + "silu", layer, b.tokens(), width, 2);
    b.elementwise(prefix + "mul", layer, b.tokens(), width, 3);
  } else {
    b.rowwise(OpKind::act, prefix + "act", layer, b.tokens(), width);
  }
  linear(b, prefix + "down_proj", layer, hidden, width, w);
}

// The routing kernels of a MoE layer besides the router GEMM. SGLang (layers/moe/topk.py,
// fused_moe_triton/moe_align_block_size.py): topk_softmax in one kernel (DeepSeek's biased
// grouped top-k: moe_fused_gate plus the logits' cast to fp32), then moe_align_block_size: a
// memset, the align kernel and count_and_sort (more than 64 experts; one kernel for fewer). vLLM
// (model_executor/layers/fused_moe): topk_softmax or grouped_topk, then moe_align_block_size (the
// align and sort kernels). TensorRT-LLM (CUTLASS fused MoE): the routing kernel and the
// permutation of the input rows.
void moe_routing(StepBuilder& b, const ModelConfig& m, int layer) {
  const std::int64_t T = b.tokens(), E = m.routed_experts, k = m.experts_per_token;
  const bool grouped = m.is_mla();  // DeepSeek-V3 / Kimi-K2: sigmoid scores, bias, expert groups
  b.elementwise(grouped ? "grouped_topk" : "topk_softmax", layer, T, E, 2);
  if (grouped && !b.is(ServingEngine::trtllm)) b.elementwise("router_logits_fp32", layer, T, E, 3);
  if (b.is(ServingEngine::trtllm)) {
    b.elementwise("expand_input_rows", layer, T * k, m.hidden, 2);
    return;
  }
  if (b.is(ServingEngine::sglang) && E > 64) b.elementwise("moe_align.memset", layer, 1, E, 2);
  b.elementwise("moe_align_block_size", layer, T, k, 2);
  b.elementwise("count_and_sort_expert_tokens", layer, T, k, 2);
}

// TP-MoE: the router is replicated; every rank holds a 1/tp slice of every expert's
// intermediate dimension, so each rank runs all T*k routed rows against all touched experts.
// After the down projection the top-k rows of each token are summed (SGLang: torch.sum or
// moe_sum_reduce; vLLM: moe_sum; TensorRT-LLM: finalizeMoeRouting).
//
// Expert parallelism over ep groups: a rank holds E / ep experts, each tp / ep ranks wide (whole
// with all-to-all), and runs the routed rows that land on them: with TP attention its share
// T * k / ep of the step's rows, whose partial sums the layer's allreduce adds up; with
// all-to-all its own tokens' T * k rows on average (balanced routing), dispatched in and combined
// back (the combine sums each token's top-k outputs). The step is the busiest rank's: its rows are
// the expected maximum over the ranks (busiest_rank_rows), not the mean.
void moe_block(StepBuilder& b, const ModelConfig& m, int layer, const LinearFormats& f) {
  const int tp = b.tp(), ep = b.ep();
  const std::int64_t E = m.routed_experts, k = m.experts_per_token;
  b.gemm("router", layer, E, m.hidden, DType::bf16);
  moe_routing(b, m, layer);
  if (m.shared_experts > 0)
    mlp_block(b, "shared_experts.", layer, m.hidden, m.shared_experts * m.moe_intermediate / tp, f.shared_experts);
  const DType w = f.routed_experts;
  // fp8 experts take fp8 activations: the dispatch sends them quantised (DeepEP's fp8 dispatch).
  const DType payload = w == DType::fp8 ? DType::fp8 : DType::bf16;
  const int moe_tp = b.a2a() ? 1 : tp / ep;
  const std::int64_t routed_tokens = b.a2a() ? b.tokens() * b.world() : b.tokens();
  // The busiest rank's rows: the layer waits for it (the combine, or the allreduce after it).
  const std::int64_t rows = b.a2a() ? busiest_rank_rows(routed_tokens * k, ep) : busiest_rank_rows(b.tokens() * k, ep);
  const std::int64_t touched = local_experts_touched(E, k, routed_tokens, ep);
  const std::int64_t width = m.moe_intermediate / moe_tp;
  if (b.a2a()) b.all_to_all("moe_dispatch", layer, false, m.hidden, k, E, payload);
  activation_quant(b, layer, rows, m.hidden, w);
  b.grouped_gemm("experts.gate_up_proj", layer, rows, touched, 2 * width, m.hidden, w);
  b.rowwise(OpKind::act, "experts.act", layer, rows, width);
  activation_quant(b, layer, rows, width, w);
  b.grouped_gemm("experts.down_proj", layer, rows, touched, m.hidden, width, w);
  if (b.a2a()) {
    b.all_to_all("moe_combine", layer, true, m.hidden, k, E, DType::bf16);
    return;
  }
  const int summed = static_cast<int>(std::min<std::int64_t>(k + 1, kMaxElementwiseOperands));
  b.elementwise("moe_sum", layer, b.tokens(), m.hidden, summed);
}

void embedding(StepBuilder& b, std::int64_t hidden) {
  // Vocab-parallel embedding: each rank looks up the rows it owns and zeros the rest, and an
  // allreduce assembles the full embeddings. The reference step starts from given hidden states.
  if (b.is(ServingEngine::torch)) return;
  b.rowwise(OpKind::embedding, "embed_tokens", -1, b.tokens(), hidden);
  b.allreduce("embed_allreduce", -1, hidden, "embed");
}

// The residual add after a block. The serving engines fuse it with the RMSNorm after it (the
// simulator prices the pair as fused_add_rmsnorm); PyTorch runs `x + y` as its own kernel.
void residual(StepBuilder& b, const char* name, int layer, std::int64_t hidden) {
  if (b.is(ServingEngine::torch)) b.elementwise(name, layer, b.tokens(), hidden, 3);
  else b.rowwise(OpKind::residual_add, name, layer, b.tokens(), hidden);
}

// The layers whose output an EAGLE-3 target hands to its draft head (SGLang models/llama.py and
// vLLM's llama.py capture layers 2, L/2 and L-3, each as `hidden_states + residual`: one add kernel
// each in the verify forward).
bool captures_eagle3_state(int layer, int layers) {
  return layer == 2 || layer == layers / 2 || layer == layers - 3;
}

// One decoder layer of the target: norm, attention and its allreduce, residual, norm, MoE or MLP
// and its allreduce, residual. `capture`: the layer hands its state to an EAGLE-3 head.
void decoder_layer(StepBuilder& b, const ModelConfig& m, const LinearFormats& f, int layer, bool capture) {
  const std::int64_t tokens = b.tokens(), H = m.hidden;
  b.rowwise(OpKind::rmsnorm, "input_layernorm", layer, tokens, H);
  // After the layer's fused add + norm, which the add of the captured state does not split.
  if (capture && !b.is(ServingEngine::torch)) b.elementwise("eagle3_aux_hidden_state", layer, tokens, H, 3);
  if (m.is_mla()) mla_block(b, m, layer, f.attention);
  else gqa_block(b, m, layer, H, f.attention);
  b.allreduce("attn_allreduce", layer, H, "attn_out");
  residual(b, "attn_residual", layer, H);
  b.rowwise(OpKind::rmsnorm, "post_attention_layernorm", layer, tokens, H);
  if (m.layer_is_moe(layer)) moe_block(b, m, layer, f);
  else mlp_block(b, "", layer, H, m.intermediate / b.tp(), f.dense_mlp);
  b.allreduce("mlp_allreduce", layer, H, "mlp_out");
  residual(b, "mlp_residual", layer, H);
}

// A target-model forward pass over every request's tokens.
void target_forward(StepBuilder& b, const ModelConfig& m, const LinearFormats& f, bool eagle3_capture) {
  const int tp = b.tp();
  const std::int64_t tokens = b.tokens();
  const std::int64_t H = m.hidden;
  embedding(b, H);
  for (int layer = 0; layer < m.layers; ++layer)
    decoder_layer(b, m, f, layer, eagle3_capture && captures_eagle3_state(layer, m.layers));
  b.rowwise(OpKind::rmsnorm, "final_norm", -1, tokens, H);
  b.gemm("lm_head", -1, vocab_per_rank(m.vocab, tp), H, DType::bf16, OpKind::lm_head);
}

// How one forward of the EAGLE-3 head is shaped. SGLang (python/sglang/srt/models/llama_eagle3.py)
// applies the fc only when its input is the target's three fused features, i.e. in the
// draft-extend pass; a draft forward reads the head's own hidden state.
struct DraftForward {
  bool fc = true;
  std::int64_t logit_rows = 0;  // rows the lm_head sees; 0: all of them
};

// One forward of an EAGLE-3 draft head. The head's weights are bf16 whatever the target's are;
// its fc is a plain (replicated) linear layer.
void draft_forward(StepBuilder& b, const ModelConfig& d, const DraftForward& f) {
  const int tp = b.tp();
  const std::int64_t tokens = b.tokens();
  const std::int64_t H = d.hidden;
  const DType w = DType::bf16;
  embedding(b, H);
  if (f.fc) b.gemm("fc", -1, H, 3 * H, w);
  b.rowwise(OpKind::rmsnorm, "input_layernorm", 0, tokens, H);
  b.rowwise(OpKind::rmsnorm, "hidden_norm", 0, tokens, H);
  gqa_block(b, d, 0, 2 * H, w);
  b.allreduce("attn_allreduce", 0, H, "attn_out");
  residual(b, "attn_residual", 0, H);
  b.rowwise(OpKind::rmsnorm, "post_attention_layernorm", 0, tokens, H);
  mlp_block(b, "", 0, H, d.intermediate / tp, w);
  b.allreduce("mlp_allreduce", 0, H, "mlp_out");
  residual(b, "mlp_residual", 0, H);
  b.rowwise(OpKind::rmsnorm, "final_norm", -1, tokens, H);
  b.gemm("lm_head", -1, vocab_per_rank(d.draft_vocab, tp), H, w, OpKind::lm_head, f.logit_rows);
}

// One forward of the target's multi-token-prediction layer (DeepSeek-V3's and GLM-4.5's NextN, as
// SGLang's deepseek_nextn.py / glm4_moe_nextn.py run it): the token's embedding and the previous
// hidden state each normalised (enorm, hnorm), concatenated and projected back to the hidden size
// by the replicated eh_proj, then one decoder layer of the target's last layer's kind (attention,
// its allreduce, the MoE or MLP and its allreduce), the head's norm and the target's vocab-parallel
// lm_head. The embedding and lm_head are the target's own weights.
void mtp_forward(StepBuilder& b, const ModelConfig& m, const LinearFormats& f, const DraftForward& df) {
  const int tp = b.tp();
  const std::int64_t tokens = b.tokens();
  const std::int64_t H = m.hidden;
  const int layer = m.layers - 1;  // the MTP layer is built like the target's last one
  embedding(b, H);
  b.rowwise(OpKind::rmsnorm, "enorm", layer, tokens, H);
  b.rowwise(OpKind::rmsnorm, "hnorm", layer, tokens, H);
  b.gemm("eh_proj", layer, H, 2 * H, DType::bf16);
  decoder_layer(b, m, f, layer, false);
  b.rowwise(OpKind::rmsnorm, "shared_head.norm", -1, tokens, H);
  b.gemm("lm_head", -1, vocab_per_rank(m.vocab, tp), H, DType::bf16, OpKind::lm_head, df.logit_rows);
}

// The configuration a trace is generated for: SGLang's, or the chain of tokens - 1 drafts the
// --tokens flag describes (no drafts at all for one token).
SpeculativeConfig resolved_speculative(const GenOptions& o) {
  if (o.speculative) return *o.speculative;
  SpeculativeConfig c;
  if (o.tokens < 2) {
    c.method = SpecMethod::none;
    c.num_steps = c.eagle_topk = c.num_draft_tokens = 0;  // no drafts: none of the three
    return c;
  }
  c.num_steps = o.tokens - 1;
  c.eagle_topk = 1;
  c.num_draft_tokens = o.tokens;
  return c;
}

int verify_tokens(const SpeculativeConfig& c) { return c.method == SpecMethod::none ? 1 : c.num_draft_tokens; }

// Per-request KV lengths when they differ; empty when every request has the same.
std::vector<std::int64_t> ragged_kv_lens(const GenOptions& o) {
  for (std::int64_t l : o.kv_lens)
    if (l != o.kv_lens.front()) return o.kv_lens;
  return {};
}

// The formats the target's linear layers are generated in: the per-class formats when given,
// else weight_dtype for all.
LinearFormats gen_formats(const GenOptions& o) { return o.formats ? *o.formats : LinearFormats::all(o.weight_dtype); }

void check_options(const ModelConfig& m, const GenOptions& o) {
  if (o.tp < 1 || o.tp > kMaxTp)
    throw SettingError(Setting::tp, fmt::format("expected an integer in [1, {}], got {}", kMaxTp, o.tp));
  if (!o.speculative && (o.tokens < 1 || o.tokens > kMaxGenTokens))
    throw SettingError(Setting::tokens, fmt::format("expected an integer in [1, {}], got {}", kMaxGenTokens, o.tokens));
  if (o.kv_len < 1 || o.kv_len > kMaxKvLen)
    throw SettingError(Setting::kv_len, fmt::format("expected an integer in [1, {}], got {}", kMaxKvLen, o.kv_len));
  if (o.batch < 1 || o.batch > kMaxGenBatch)
    throw SettingError(Setting::batch, fmt::format("expected an integer in [1, {}] (concurrent requests), got {}",
                                                   kMaxGenBatch, o.batch));
  if (!o.kv_lens.empty()) {
    if (o.kv_lens.size() != static_cast<std::size_t>(o.batch))
      throw SettingError(Setting::kv_lens, fmt::format("expected one KV length per request ({} {}), got {} value{}",
                                                       setting_name(Setting::batch), o.batch, o.kv_lens.size(),
                                                       o.kv_lens.size() == 1 ? "" : "s"));
    for (std::size_t r = 0; r < o.kv_lens.size(); ++r)
      if (o.kv_lens[r] < 1 || o.kv_lens[r] > kMaxKvLen)
        throw SettingError(Setting::kv_lens, fmt::format("expected lengths in [1, {}], got {} (request {})", kMaxKvLen,
                                                         o.kv_lens[r], r));
  }
  if (o.speculative) throw_if_speculative_problem(*o.speculative);
  if (o.ep < 1 || o.ep > o.tp || o.tp % o.ep != 0)
    throw SettingError(Setting::ep, fmt::format("expected a divisor of {} {}, got {}", setting_name(Setting::tp), o.tp,
                                                o.ep));
  if (o.ep > 1 && !m.is_moe())
    throw SettingError(Setting::ep, fmt::format("{} has no routed experts: expert parallelism needs a MoE model", m.name));
  if (o.ep > 1 && m.routed_experts % o.ep != 0)
    throw SettingError(Setting::ep, fmt::format("{} does not divide the {} routed experts of {} (every rank holds as "
                                                "many)", o.ep, m.routed_experts, m.name));
  if (o.dp_attention) {
    if (!m.is_moe() || o.tp < 2 || o.ep != o.tp)
      throw SettingError(Setting::dp_attention,
                         fmt::format("needs a MoE model and {} equal to {} (> 1): the ranks' own tokens reach the "
                                     "experts by all-to-all; got {} {}, {} {}{}",
                                     setting_name(Setting::ep), setting_name(Setting::tp), setting_name(Setting::tp),
                                     o.tp, setting_name(Setting::ep), o.ep, m.is_moe() ? "" : ", and a dense model"));
    if (!o.kv_lens.empty())
      throw SettingError(Setting::dp_attention, fmt::format("per-request {} are not split over the attention ranks; "
                                                            "give one {}", setting_name(Setting::kv_lens),
                                                            setting_name(Setting::kv_len)));
  }
  const std::int64_t rows = static_cast<std::int64_t>(o.batch) * verify_tokens(resolved_speculative(o));
  if (rows > kMaxTokens)
    throw SettingError(Setting::batch, fmt::format("{} requests x {} verify tokens = {} rows per step, expected at most {}",
                                                   o.batch, verify_tokens(resolved_speculative(o)), rows, kMaxTokens));
  if (o.kv_cache_dtype != DType::bf16 && o.kv_cache_dtype != DType::fp8)
    throw SettingError(Setting::kv_cache_dtype, fmt::format("expected bf16 or fp8, got {}", to_string(o.kv_cache_dtype)));
  const LinearFormats formats = gen_formats(o);
  for (DType d : {formats.attention, formats.dense_mlp, formats.shared_experts, formats.routed_experts})
    if (d != DType::bf16 && d != DType::fp8 && d != DType::int4)
      throw SettingError(Setting::weight_dtype, fmt::format("expected bf16, fp8 or int4, got {}", to_string(d)));
  if (m.is_draft())
    throw InputError::at(m.file, "architectures",
                         fmt::format("this is an EAGLE-3 draft head; pass it with {} and give the target model with {}",
                                     setting_name(Setting::draft), setting_name(Setting::model)));
  check_tp(m, o.dp_attention ? 1 : o.tp);
  if (o.engine == ServingEngine::torch) {
    // The reference step (tools/torch-steps.tsv) is one GPU's bf16 target forward, nothing else.
    const std::string why = "the torch reference step is one GPU's bf16 target forward";
    if (o.tp != 1) throw SettingError(Setting::tp, fmt::format("expected 1 with engine torch ({}), got {}", why, o.tp));
    if (o.kv_cache_dtype != DType::bf16)
      throw SettingError(Setting::kv_cache_dtype, fmt::format("expected bf16 with engine torch ({}), got {}", why,
                                                              to_string(o.kv_cache_dtype)));
    if (!(formats == LinearFormats::all(DType::bf16)))
      throw SettingError(Setting::weight_dtype, fmt::format("expected bf16 with engine torch ({}), got {}", why,
                                                            formats.describe(m.is_moe())));
    if (o.draft || o.mtp_draft)
      throw SettingError(Setting::draft, fmt::format("not available with engine torch ({})", why));
    if (o.engine_cycle) throw SettingError(Setting::engine_cycle, fmt::format("not available with engine torch ({})", why));
    if (m.is_moe() || m.is_mla())
      throw InputError::at(m.file, "model_type",
                           fmt::format("expected a dense GQA model with engine torch ({}), got {}", why, m.model_type));
  }
  if (o.mtp_draft) {
    if (o.draft)
      throw SettingError(Setting::draft, "one draft: the model's MTP layer or an EAGLE-3 head, not both");
    if (m.mtp_layers < 1)
      throw SettingError(Setting::draft, fmt::format("mtp: {} ships no multi-token-prediction layer "
                                                     "(num_nextn_predict_layers is {} in {})",
                                                     m.name, m.mtp_layers, m.file));
    if (resolved_speculative(o).method == SpecMethod::none)
      throw SettingError(Setting::tokens, fmt::format("with {} mtp the verify step needs at least 2 tokens (1 + draft "
                                                       "tokens)", setting_name(Setting::draft)));
  }
  if (o.draft) {
    const ModelConfig& d = *o.draft;
    if (!d.is_draft())
      throw InputError::at(d.file, "architectures",
                           fmt::format("expected an EAGLE-3 draft head (e.g. LlamaForCausalLMEagle3) for {}",
                                       setting_name(Setting::draft)));
    if (d.hidden != m.hidden)
      throw InputError::at(d.file, "hidden_size",
                           fmt::format("expected the target's hidden_size ({}), got {}", m.hidden, d.hidden));
    if (resolved_speculative(o).method == SpecMethod::none)
      throw SettingError(Setting::tokens, fmt::format("with {} the verify step needs at least 2 tokens (1 + draft tokens)",
                                                       setting_name(Setting::draft)));
    check_tp(d, o.dp_attention ? 1 : o.tp);
  }
}

// What the notes say of a model whose layers do not all attend over the whole context, and of a
// multimodal checkpoint's vision tower, which gen does not trace.
std::string model_notes(const ModelConfig& m) {
  std::string n;
  int sliding = 0, chunked = 0;
  for (int layer = 0; layer < m.layers; ++layer) {
    sliding += m.reach(layer) == AttentionReach::sliding;
    chunked += m.reach(layer) == AttentionReach::chunked;
  }
  if (sliding > 0)
    n += fmt::format("; {} of {} layers attend within a sliding window of {} positions", sliding, m.layers,
                     m.sliding_window);
  if (chunked > 0)
    n += fmt::format("; {} of {} layers attend within their chunk of {} positions", chunked, m.layers,
                     m.attention_chunk);
  if (sliding > 0 || chunked > 0) n += " (the KV cache counted in full)";
  if (m.vision_params > 0)
    n += fmt::format("; the vision tower ({:.2f} B parameters) is not priced",
                     static_cast<double>(m.vision_params) / 1e9);
  return n;
}

std::string version2_notes(const GenOptions& o, const SpeculativeConfig& c) {
  std::string n = fmt::format("; {} concurrent request{}", o.batch, o.batch == 1 ? "" : "s");
  if (c.method != SpecMethod::none)
    n += fmt::format("; SGLang speculative config: {} steps, topk {}, {} draft tokens, {} mask", c.num_steps,
                     c.eagle_topk, c.num_draft_tokens, to_string(c.mask));
  if (o.engine_cycle) n += "; the engine's cycle: draft-extend step and per-cycle ops";
  return n;
}

}  // namespace

std::int64_t local_experts_touched(std::int64_t experts, std::int64_t top_k, std::int64_t tokens, int ep) {
  if (ep <= 1) return experts_touched(experts, top_k, tokens);
  if (experts <= 0 || top_k <= 0 || tokens <= 0) return 0;
  const std::int64_t local = experts / ep;
  const double p_miss = std::pow(1.0 - static_cast<double>(std::min(top_k, experts)) / experts, static_cast<double>(tokens));
  const auto expected = static_cast<std::int64_t>(std::llround(static_cast<double>(local) * (1.0 - p_miss)));
  return std::clamp<std::int64_t>(expected, 1, local);
}

std::int64_t busiest_rank_rows(std::int64_t copies, int ranks) {
  if (ranks <= 1 || copies <= 0) return std::max<std::int64_t>(copies, 0);
  const double lambda = static_cast<double>(copies) / ranks;
  // Sum over m of P(max > m) = 1 - F(m)^ranks, F the Poisson CDF, over lambda -+ 12 sigma + 30:
  // below it P(max > m) is 1 to double precision, above it 0. The pmf starts in log space (e^-lambda
  // underflows from lambda ~ 745).
  const double spread = 12.0 * std::sqrt(lambda) + 30.0;
  const auto first = static_cast<std::int64_t>(std::max(0.0, std::floor(lambda - spread)));
  const auto last = static_cast<std::int64_t>(lambda + spread);
  const double m0 = static_cast<double>(first);
  double pmf = std::exp(-lambda + m0 * std::log(lambda) - std::lgamma(m0 + 1.0)), cdf = pmf;
  double expected = m0;
  for (std::int64_t m = first; m <= last; ++m) {
    expected += 1.0 - std::pow(std::min(cdf, 1.0), ranks);
    pmf *= lambda / static_cast<double>(m + 1);
    cdf += pmf;
  }
  const std::int64_t mean = (copies + ranks - 1) / ranks;
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(expected - 1e-9)), mean, copies);
}

std::int64_t experts_touched(std::int64_t experts, std::int64_t top_k, std::int64_t tokens) {
  if (experts <= 0 || top_k <= 0 || tokens <= 0) return 0;
  const std::int64_t k = std::min(top_k, experts);
  const std::int64_t upper = std::min(experts, tokens * k);
  if (k == experts) return experts;
  // E * (1 - (1 - k/E)^T) as -E * expm1(T * log1p(-k/E)): exact for small k/E and large T alike.
  const double e = static_cast<double>(experts);
  const double expected =
      -e * std::expm1(static_cast<double>(tokens) * std::log1p(-static_cast<double>(k) / e));
  return std::clamp<std::int64_t>(std::llround(expected), k, upper);
}

Trace generate_trace(const ModelConfig& m, const GenOptions& o) {
  check_options(m, o);
  const SpeculativeConfig spec = resolved_speculative(o);
  const std::vector<std::int64_t> ragged = ragged_kv_lens(o);
  const bool drafts = spec.method != SpecMethod::none;
  const bool version2 = o.batch > 1 || !ragged.empty() || spec.eagle_topk > 1 || o.engine_cycle;
  const std::int64_t kv_len = o.kv_lens.empty() ? o.kv_len
                                                : *std::max_element(o.kv_lens.begin(), o.kv_lens.end());

  Trace t;
  t.meta.model = m.name;
  t.meta.tp = o.tp;
  t.meta.tokens = verify_tokens(spec);
  t.meta.dtype = DType::bf16;
  t.meta.source = "generated";
  t.meta.draft_tokens = spec.num_steps;
  if (ragged.empty()) t.meta.kv_len = kv_len;
  const LinearFormats formats = gen_formats(o);
  // One dtype for the trace: the format of the bulk of the weights (the experts of a MoE model).
  t.meta.weight_dtype = formats.summary(m.is_moe());
  t.meta.engine = o.engine;
  if (o.draft) t.meta.draft_model = o.draft->name;
  if (o.mtp_draft) t.meta.draft_model = mtp_draft_name(m.name);
  std::string notes = fmt::format("eaglesim gen from {} ({}): per-rank ops at TP {}, the kernels of {}", m.name,
                                  m.model_type, o.tp, modelled_version(o.engine));
  if (o.kv_cache_dtype != DType::bf16) notes += fmt::format("; KV cache {}", to_string(o.kv_cache_dtype));
  if (!formats.uniform() || o.formats)
    notes += fmt::format("; weights {}{}", formats.describe(m.is_moe()),
                         o.formats && m.quantization ? fmt::format(" (quantization_config: {})", m.quantization->summary) : "");
  notes += model_notes(m);
  if (m.is_moe() && o.ep == 1)
    notes += fmt::format("; TP-MoE, experts touched per MoE layer = {0} x (1 - (1 - {1}/{0})^tokens) rounded, "
                         "the expected distinct experts under balanced routing",
                         m.routed_experts, m.experts_per_token);
  if (o.ep > 1)
    notes += fmt::format("; expert parallelism EP{0}: {1} experts a rank, each {2} ranks wide, the routed rows and "
                         "experts touched of balanced routing, the rows the busiest rank's (the expected maximum over the ranks)", o.ep, m.routed_experts / o.ep,
                         o.dp_attention ? 1 : o.tp / o.ep);
  if (o.dp_attention)
    notes += fmt::format("; data-parallel attention over {0} ranks: each runs attention, the dense layers, the shared "
                         "experts and lm_head unsharded on its {1} of the {2} requests (the step is the busiest "
                         "rank's), and the MoE's tokens go out and back by all-to-all (dispatch {3}, combine bf16)",
                         o.tp, (o.batch + o.tp - 1) / o.tp, o.batch,
                         to_string(formats.routed_experts == DType::fp8 ? DType::fp8 : DType::bf16));
  if (version2) {
    t.meta.batch = o.batch;
    t.meta.kv_lens = ragged;
    t.meta.speculative = spec;
    notes += version2_notes(o, spec);
  }
  t.meta.notes = notes;

  const std::vector<std::int64_t>* per_request = ragged.empty() ? nullptr : &ragged;
  // Data-parallel attention: each rank's share of the requests, everything but the MoE unsharded.
  const int attn_tp = o.dp_attention ? 1 : o.tp;
  const std::int64_t B = o.dp_attention ? (o.batch + o.tp - 1) / o.tp : o.batch;
  // The target's steps attend within each layer's reach (window, chunk); the draft head's over the
  // whole context.
  auto requests = [&](std::int64_t tokens, AttentionMask mask, const ModelConfig* reach = nullptr) {
    return Requests{B, tokens, kv_len, per_request, mask, reach};
  };
  auto step = [&](const char* name, StepBuilder& b) { t.steps.push_back({name, b.take(), std::nullopt}); };

  {
    StepBuilder b(attn_tp,
                  requests(verify_tokens(spec), spec.mask == VerifyMask::tree ? AttentionMask::tree : AttentionMask::causal,
                           &m),
                  o.engine, o.kv_cache_dtype);
    b.set_expert_parallel(o.ep, o.dp_attention, o.tp);
    if (o.engine_cycle && drafts) b.tree_build(draft_candidates(spec.num_steps, spec.eagle_topk));
    target_forward(b, m, formats, o.draft.has_value());
    if (o.engine_cycle) {
      b.sampling(m.vocab);
      b.host_sync();
    }
    step("verify", b);
  }
  if (o.draft || o.mtp_draft) {
    const std::int64_t topk = spec.eagle_topk;
    const std::int64_t vocab = o.mtp_draft ? m.vocab : o.draft->draft_vocab;
    // One forward of the draft: the EAGLE-3 head, or the target's MTP layer (an MoE layer with
    // expert parallelism like the target's).
    auto draft_pass = [&](StepBuilder& s, const DraftForward& f) {
      if (o.mtp_draft) {
        s.set_expert_parallel(o.ep, o.dp_attention, o.tp);
        mtp_forward(s, m, formats, f);
      } else {
        draft_forward(s, *o.draft, f);
      }
    };
    const AttentionMask branch_mask = topk > 1 ? AttentionMask::branches : AttentionMask::causal;
    if (o.engine_cycle) {
      // The draft model over each request's accepted tokens, padded to num_steps + 1 as SGLang's
      // CUDA graph for it runs (eagle_draft_extend_cuda_graph_runner.py); logits only for each
      // request's last token, whose top-k are the tree's first level.
      StepBuilder e(attn_tp, requests(spec.num_steps + 1, AttentionMask::causal), o.engine, o.kv_cache_dtype);
      draft_pass(e, DraftForward{true, B});
      e.topk_select(B, vocab, topk);
      step("draft_extend", e);
      if (spec.num_steps > 1) {
        StepBuilder f(attn_tp, requests(topk, branch_mask), o.engine, o.kv_cache_dtype);
        draft_pass(f, DraftForward{false, 0});
        f.topk_select(B * topk, vocab, topk);
        step("draft", f);
      }
    } else {
      StepBuilder f(attn_tp, requests(topk, branch_mask), o.engine, o.kv_cache_dtype);
      draft_pass(f, DraftForward{true, 0});
      step("draft", f);
    }
  }
  {
    StepBuilder b(attn_tp, requests(1, AttentionMask::causal, &m), o.engine, o.kv_cache_dtype);
    b.set_expert_parallel(o.ep, o.dp_attention, o.tp);
    target_forward(b, m, formats, false);
    if (o.engine_cycle) {
      b.sampling(m.vocab);
      b.host_sync();
    }
    step("decode", b);
  }
  return t;
}

}  // namespace eaglesim
