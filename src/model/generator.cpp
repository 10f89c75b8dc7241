#include "model/generator.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "trace/trace_json.hpp"

namespace eaglesim {

namespace {

// Appends the ops of one step for one rank. Every helper takes the token count of the step, so
// the same layer code serves the verify (T tokens), decode (1) and draft (1) steps.
class StepBuilder {
 public:
  StepBuilder(int tp, std::int64_t tokens, std::int64_t kv_len) : tp_(tp), t_(tokens), kv_len_(kv_len) {}

  std::vector<Op> take() { return std::move(ops_); }
  int tp() const { return tp_; }
  std::int64_t tokens() const { return t_; }

  void gemm(const std::string& name, int layer, std::int64_t n, std::int64_t k, DType dtype,
            OpKind kind = OpKind::gemm) {
    Op op = make(kind, name, layer);
    op.m = t_; op.n = n; op.k = k; op.dtype = dtype;
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
    Op op = make(OpKind::attention, "attn", layer);
    op.q_tokens = t_; op.kv_len = kv_len_; op.heads = heads; op.kv_heads = kv_heads; op.head_dim = head_dim;
    op.variant = AttentionVariant::gqa;
    ops_.push_back(op);
  }
  void attention_mla(int layer, std::int64_t heads, std::int64_t kv_lora_rank, std::int64_t rope_dim) {
    // Absorbed MLA (as decode and verify run it): every head attends over one shared latent KV
    // "head" of width kv_lora_rank + rope_dim.
    Op op = make(OpKind::attention, "attn", layer);
    op.q_tokens = t_; op.kv_len = kv_len_; op.heads = heads; op.kv_heads = 1;
    op.head_dim = kv_lora_rank + rope_dim;
    op.variant = AttentionVariant::mla; op.kv_lora_rank = kv_lora_rank; op.rope_dim = rope_dim;
    ops_.push_back(op);
  }
  // The allreduce that ends a row-parallel block: the partial sums of tokens x hidden bf16
  // activations. None at TP=1.
  void allreduce(const std::string& name, int layer, std::int64_t hidden, const char* site) {
    if (tp_ == 1) return;
    Op op = make(OpKind::allreduce, name, layer);
    op.bytes = t_ * hidden * 2;
    op.dtype = DType::bf16;
    op.site = site;
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
  int tp_;
  std::int64_t t_;
  std::int64_t kv_len_;
  std::vector<Op> ops_;
};

// Column-parallel QKV (+ per-head q/k norm), attention, row-parallel O. `in_width` is what the
// QKV projection reads: hidden, or 2 x hidden in an EAGLE-3 head ([embedding, fused feature]).
void gqa_block(StepBuilder& b, const ModelConfig& m, int layer, std::int64_t in_width, DType w) {
  const std::int64_t hq = heads_per_rank(m, b.tp()), hkv = kv_heads_per_rank(m, b.tp()), d = m.head_dim;
  b.gemm("qkv_proj", layer, (hq + 2 * hkv) * d, in_width, w);
  if (m.qk_norm) b.rowwise(OpKind::rmsnorm, "qk_norm", layer, b.tokens() * (hq + hkv), d);
  b.attention_gqa(layer, hq, hkv, d);
  b.gemm("o_proj", layer, m.hidden, hq * d, w);
}

// Multi-head latent attention, absorbed form. q_a_proj and kv_a_proj are small and replicated on
// every rank; q_b_proj is column-parallel over heads. kv_b_proj is applied as its two absorbed
// halves: the key half maps q_nope into the latent space before attention, the value half maps
// the attention output back out; each is written as a GEMM with the same FLOPs and weight bytes
// as the per-head batched matmul.
void mla_block(StepBuilder& b, const ModelConfig& m, int layer, DType w) {
  const std::int64_t hq = heads_per_rank(m, b.tp());
  const std::int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  if (m.q_lora_rank > 0) {
    b.gemm("q_a_proj", layer, m.q_lora_rank, m.hidden, w);
    b.rowwise(OpKind::rmsnorm, "q_a_layernorm", layer, b.tokens(), m.q_lora_rank);
    b.gemm("q_b_proj", layer, hq * qk, m.q_lora_rank, w);
  } else {
    b.gemm("q_proj", layer, hq * qk, m.hidden, w);
  }
  b.gemm("kv_a_proj", layer, m.kv_lora_rank + m.qk_rope_head_dim, m.hidden, w);
  b.rowwise(OpKind::rmsnorm, "kv_a_layernorm", layer, b.tokens(), m.kv_lora_rank);
  b.gemm("kv_b_proj.k_absorb", layer, hq * m.kv_lora_rank, m.qk_nope_head_dim, w);
  b.attention_mla(layer, hq, m.kv_lora_rank, m.qk_rope_head_dim);
  b.gemm("kv_b_proj.v_up", layer, hq * m.v_head_dim, m.kv_lora_rank, w);
  b.gemm("o_proj", layer, m.hidden, hq * m.v_head_dim, w);
}

// SwiGLU MLP of width `width` (already the per-rank slice): column-parallel gate+up, SiLU*mul,
// row-parallel down.
void mlp_block(StepBuilder& b, const std::string& prefix, int layer, std::int64_t hidden,
               std::int64_t width, DType w) {
  b.gemm(prefix + "gate_up_proj", layer, 2 * width, hidden, w);
  b.rowwise(OpKind::act, prefix + "act", layer, b.tokens(), width);
  b.gemm(prefix + "down_proj", layer, hidden, width, w);
}

// TP-MoE: the router is replicated; every rank holds a 1/tp slice of every expert's
// intermediate dimension, so each rank runs all T*k routed rows against all touched experts.
void moe_block(StepBuilder& b, const ModelConfig& m, int layer, DType w) {
  const int tp = b.tp();
  b.gemm("router", layer, m.routed_experts, m.hidden, DType::bf16);
  if (m.shared_experts > 0)
    mlp_block(b, "shared_experts.", layer, m.hidden, m.shared_experts * m.moe_intermediate / tp, w);
  const std::int64_t rows = b.tokens() * m.experts_per_token;
  const std::int64_t touched = experts_touched(m.routed_experts, m.experts_per_token, b.tokens());
  const std::int64_t width = m.moe_intermediate / tp;
  b.grouped_gemm("experts.gate_up_proj", layer, rows, touched, 2 * width, m.hidden, w);
  b.rowwise(OpKind::act, "experts.act", layer, rows, width);
  b.grouped_gemm("experts.down_proj", layer, rows, touched, m.hidden, width, w);
}

void embedding(StepBuilder& b, std::int64_t hidden) {
  // Vocab-parallel embedding: each rank looks up the rows it owns and zeros the rest, and an
  // allreduce assembles the full embeddings.
  b.rowwise(OpKind::embedding, "embed_tokens", -1, b.tokens(), hidden);
  b.allreduce("embed_allreduce", -1, hidden, "embed");
}

// A target-model forward pass over b.tokens() tokens.
std::vector<Op> target_step(const ModelConfig& m, int tp, std::int64_t tokens, std::int64_t kv_len, DType w) {
  StepBuilder b(tp, tokens, kv_len);
  const std::int64_t H = m.hidden;
  embedding(b, H);
  for (int layer = 0; layer < m.layers; ++layer) {
    b.rowwise(OpKind::rmsnorm, "input_layernorm", layer, tokens, H);
    if (m.is_mla()) mla_block(b, m, layer, w);
    else gqa_block(b, m, layer, H, w);
    b.allreduce("attn_allreduce", layer, H, "attn_out");
    b.rowwise(OpKind::residual_add, "attn_residual", layer, tokens, H);
    b.rowwise(OpKind::rmsnorm, "post_attention_layernorm", layer, tokens, H);
    if (m.layer_is_moe(layer)) moe_block(b, m, layer, w);
    else mlp_block(b, "", layer, H, m.intermediate / tp, w);
    b.allreduce("mlp_allreduce", layer, H, "mlp_out");
    b.rowwise(OpKind::residual_add, "mlp_residual", layer, tokens, H);
  }
  b.rowwise(OpKind::rmsnorm, "final_norm", -1, tokens, H);
  b.gemm("lm_head", -1, vocab_per_rank(m.vocab, tp), H, DType::bf16, OpKind::lm_head);
  return b.take();
}

// One forward of an EAGLE-3 draft head (one token per forward in chain drafting). The head's
// weights are bf16 whatever the target's are; its fc is a plain (replicated) linear layer.
std::vector<Op> draft_step(const ModelConfig& d, int tp, std::int64_t kv_len) {
  const std::int64_t tokens = 1;
  StepBuilder b(tp, tokens, kv_len);
  const std::int64_t H = d.hidden;
  const DType w = DType::bf16;
  embedding(b, H);
  b.gemm("fc", -1, H, 3 * H, w);
  b.rowwise(OpKind::rmsnorm, "input_layernorm", 0, tokens, H);
  b.rowwise(OpKind::rmsnorm, "hidden_norm", 0, tokens, H);
  gqa_block(b, d, 0, 2 * H, w);
  b.allreduce("attn_allreduce", 0, H, "attn_out");
  b.rowwise(OpKind::residual_add, "attn_residual", 0, tokens, H);
  b.rowwise(OpKind::rmsnorm, "post_attention_layernorm", 0, tokens, H);
  mlp_block(b, "", 0, H, d.intermediate / tp, w);
  b.allreduce("mlp_allreduce", 0, H, "mlp_out");
  b.rowwise(OpKind::residual_add, "mlp_residual", 0, tokens, H);
  b.rowwise(OpKind::rmsnorm, "final_norm", -1, tokens, H);
  b.gemm("lm_head", -1, vocab_per_rank(d.draft_vocab, tp), H, w, OpKind::lm_head);
  return b.take();
}

void check_options(const ModelConfig& m, const GenOptions& o) {
  if (o.tp < 1 || o.tp > kMaxTp)
    throw InputError(fmt::format("--tp: expected an integer in [1, {}], got {}", kMaxTp, o.tp));
  if (o.tokens < 1 || o.tokens > kMaxGenTokens)
    throw InputError(fmt::format("--tokens: expected an integer in [1, {}], got {}", kMaxGenTokens, o.tokens));
  if (o.kv_len < 1 || o.kv_len > kMaxKvLen)
    throw InputError(fmt::format("--kv-len: expected an integer in [1, {}], got {}", kMaxKvLen, o.kv_len));
  if (o.weight_dtype != DType::bf16 && o.weight_dtype != DType::fp8 && o.weight_dtype != DType::int4)
    throw InputError(fmt::format("--weight-dtype: expected bf16, fp8 or int4, got {}", to_string(o.weight_dtype)));
  if (m.is_draft())
    throw InputError::at(m.file, "architectures",
                         "this is an EAGLE-3 draft head; pass it with --draft and give the target model with --model");
  check_tp(m, o.tp);
  if (o.draft) {
    const ModelConfig& d = *o.draft;
    if (!d.is_draft())
      throw InputError::at(d.file, "architectures",
                           "expected an EAGLE-3 draft head (e.g. LlamaForCausalLMEagle3) for --draft");
    if (d.hidden != m.hidden)
      throw InputError::at(d.file, "hidden_size",
                           fmt::format("expected the target's hidden_size ({}), got {}", m.hidden, d.hidden));
    if (o.tokens < 2)
      throw InputError("--tokens: with --draft the verify step needs at least 2 tokens (1 + draft tokens)");
    check_tp(d, o.tp);
  }
}

}  // namespace

std::int64_t experts_touched(std::int64_t experts, std::int64_t top_k, std::int64_t tokens) {
  return std::min(experts, tokens * top_k);
}

Trace generate_trace(const ModelConfig& m, const GenOptions& o) {
  check_options(m, o);
  Trace t;
  t.meta.model = m.name;
  t.meta.tp = o.tp;
  t.meta.tokens = o.tokens;
  t.meta.dtype = DType::bf16;
  t.meta.source = "generated";
  t.meta.draft_tokens = o.tokens - 1;
  t.meta.kv_len = o.kv_len;
  t.meta.weight_dtype = o.weight_dtype;
  if (o.draft) t.meta.draft_model = o.draft->name;
  std::string notes = fmt::format("eaglesim gen from {} ({}): per-rank ops at TP {}", m.name, m.model_type, o.tp);
  if (m.is_moe())
    notes += fmt::format("; TP-MoE, experts touched per MoE layer = min({}, tokens x {})", m.routed_experts,
                         m.experts_per_token);
  t.meta.notes = notes;

  t.steps.push_back({"verify", target_step(m, o.tp, o.tokens, o.kv_len, o.weight_dtype), std::nullopt});
  if (o.draft) t.steps.push_back({"draft", draft_step(*o.draft, o.tp, o.kv_len), std::nullopt});
  t.steps.push_back({"decode", target_step(m, o.tp, 1, o.kv_len, o.weight_dtype), std::nullopt});
  return t;
}

}  // namespace eaglesim
