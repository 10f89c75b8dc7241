// Generated op shapes per architecture, checked against numbers worked out by hand from the
// published configs (the comments show the arithmetic), plus the allreduce count and size that
// the whole project is about: Kimi-K2 at TP8 with 3 tokens has 61 x 2 = 122 layer allreduces of
// 3 x 7168 x 2 = 43,008 bytes.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "io/json_cursor.hpp"
#include "model/generator.hpp"
#include "trace/trace_json.hpp"
#include "shipped_files.hpp"

using namespace eaglesim;
using test::shipped_model;

namespace {

Trace gen(const std::string& model, int tp, int tokens, DType w = DType::bf16, const char* draft = nullptr,
          std::int64_t kv_len = 4096) {
  GenOptions o;
  o.tp = tp;
  o.tokens = tokens;
  o.kv_len = kv_len;
  o.weight_dtype = w;
  if (draft) o.draft = shipped_model(draft);
  return generate_trace(shipped_model(model), o);
}

// The op named `name` in `layer` of `step`; fails the test when absent or ambiguous.
const Op& find(const Trace& t, const std::string& step, int layer, const std::string& name) {
  const Step* s = t.find_step(step);
  if (!s) throw std::runtime_error("no step " + step);
  const Op* hit = nullptr;
  for (const Op& op : s->ops) {
    if (op.layer != layer || op.name != name) continue;
    if (hit) throw std::runtime_error("two ops named " + name);
    hit = &op;
  }
  if (!hit) throw std::runtime_error("no op " + name + " in layer " + std::to_string(layer));
  return *hit;
}

int count(const Step& s, OpKind kind, bool layer_ops_only = false) {
  int n = 0;
  for (const Op& op : s.ops) n += op.kind == kind && (!layer_ops_only || op.layer >= 0);
  return n;
}

void expect_gemm(const Op& op, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) {
  SCOPED_TRACE(op.name);
  EXPECT_EQ(op.m, m);
  EXPECT_EQ(op.n, n);
  EXPECT_EQ(op.k, k);
  EXPECT_EQ(op.dtype, dtype);
}

std::string error_of(const std::string& model, int tp, int tokens, const char* draft = nullptr) {
  try {
    gen(model, tp, tokens, DType::bf16, draft);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(Generator, Llama8bTp2Shapes) {
  Trace t = gen("llama-3.1-8b", 2, 4, DType::bf16, nullptr, 2048);
  // Heads per rank 32/2 = 16, KV heads 8/2 = 4: qkv n = (16 + 2x4) x 128 = 3072.
  expect_gemm(find(t, "verify", 0, "qkv_proj"), 4, 3072, 4096, DType::bf16);
  expect_gemm(find(t, "verify", 0, "o_proj"), 4, 4096, 2048, DType::bf16);         // k = 16 x 128
  expect_gemm(find(t, "verify", 0, "gate_up_proj"), 4, 14336, 4096, DType::bf16);  // 2 x 14336 / 2
  expect_gemm(find(t, "verify", 31, "down_proj"), 4, 4096, 7168, DType::bf16);     // k = 14336 / 2
  const Op& attn = find(t, "verify", 0, "attn");
  EXPECT_EQ(attn.kind, OpKind::attention);
  EXPECT_EQ(attn.variant, AttentionVariant::gqa);
  EXPECT_EQ(attn.q_tokens, 4);
  EXPECT_EQ(attn.kv_len, 2048);
  EXPECT_EQ(attn.heads, 16);
  EXPECT_EQ(attn.kv_heads, 4);
  EXPECT_EQ(attn.head_dim, 128);
  EXPECT_EQ(find(t, "verify", 0, "act").hidden, 7168);
  const Op& lm = find(t, "verify", -1, "lm_head");
  EXPECT_EQ(lm.kind, OpKind::lm_head);
  expect_gemm(lm, 4, 64128, 4096, DType::bf16);  // 128256 / 2

  // 32 layers x 2 allreduces of 4 x 4096 x 2 = 32,768 B, plus the embedding's.
  const Step& v = t.verify();
  EXPECT_EQ(count(v, OpKind::allreduce, true), 64);
  EXPECT_EQ(count(v, OpKind::allreduce), 65);
  for (const Op& op : v.ops)
    if (op.kind == OpKind::allreduce) EXPECT_EQ(op.bytes, 32768);
  EXPECT_EQ(find(t, "verify", 0, "attn_allreduce").site, "attn_out");
  EXPECT_EQ(find(t, "verify", 0, "mlp_allreduce").site, "mlp_out");
  EXPECT_EQ(find(t, "verify", -1, "embed_allreduce").site, "embed");
  EXPECT_EQ(count(v, OpKind::attention), 32);
  EXPECT_EQ(count(v, OpKind::grouped_gemm), 0);
}

TEST(Generator, LayerOrderMatchesSglang) {
  Trace t = gen("llama-3.1-8b", 2, 4);
  const auto& ops = t.verify().ops;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < 16; ++i) names.push_back(ops[i].name);
  // SGLang's layer: RoPE and the KV-cache store between the QKV projection and attention.
  std::vector<std::string> expected{"embed_tokens", "embed_allreduce", "input_layernorm", "qkv_proj", "rotary_emb",
                                    "set_kv_buffer", "attn", "o_proj", "attn_allreduce", "attn_residual",
                                    "post_attention_layernorm", "gate_up_proj", "act", "down_proj", "mlp_allreduce",
                                    "mlp_residual"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(ops[ops.size() - 2].name, "final_norm");
  EXPECT_EQ(ops.back().name, "lm_head");
}

TEST(Generator, TensorParallelOneHasNoAllreduce) {
  Trace t = gen("llama-3.1-8b", 1, 4);
  for (const Step& s : t.steps) EXPECT_EQ(count(s, OpKind::allreduce), 0) << s.name;
  expect_gemm(find(t, "verify", 0, "qkv_proj"), 4, 6144, 4096, DType::bf16);  // (32 + 16) x 128
}

TEST(Generator, KimiK2Tp8Has122LayerAllreducesOf43008Bytes) {
  Trace t = gen("kimi-k2-instruct", 8, 3);
  const Step& v = t.verify();
  int layer_allreduces = 0;
  for (const Op& op : v.ops) {
    if (op.kind != OpKind::allreduce) continue;
    EXPECT_EQ(op.bytes, 43008);  // 3 tokens x 7168 x 2 B
    EXPECT_EQ(op.dtype, DType::bf16);
    if (op.layer >= 0) {
      ++layer_allreduces;
      EXPECT_TRUE(op.site == "attn_out" || op.site == "mlp_out") << op.site;
    } else {
      EXPECT_EQ(op.site, "embed");
    }
  }
  EXPECT_EQ(layer_allreduces, 122);  // 61 layers x (attention + MoE/MLP)
  EXPECT_EQ(count(v, OpKind::allreduce), 123);
}

TEST(Generator, KimiK2Tp8MlaAndMoeShapes) {
  Trace t = gen("kimi-k2-instruct", 8, 4, DType::int4);
  const DType w = DType::int4;
  // 64 heads / 8 = 8 heads per rank; q head dim 128 + 64 = 192.
  // q_a and kv_a as the engines run them: one replicated GEMM, n = 1536 + 512 + 64.
  expect_gemm(find(t, "verify", 0, "fused_qkv_a_proj"), 4, 1536 + 512 + 64, 7168, w);
  expect_gemm(find(t, "verify", 0, "q_b_proj"), 4, 8 * 192, 1536, w);  // 1536
  expect_gemm(find(t, "verify", 0, "kv_b_proj.k_absorb"), 4, 8 * 512, 128, w);  // q_nope -> latent
  expect_gemm(find(t, "verify", 0, "kv_b_proj.v_up"), 4, 8 * 128, 512, w);      // latent -> v
  expect_gemm(find(t, "verify", 0, "o_proj"), 4, 7168, 8 * 128, w);
  EXPECT_EQ(find(t, "verify", 0, "q_a_layernorm").hidden, 1536);
  EXPECT_EQ(find(t, "verify", 0, "kv_a_layernorm").hidden, 512);
  const Op& attn = find(t, "verify", 5, "attn");
  EXPECT_EQ(attn.variant, AttentionVariant::mla);
  EXPECT_EQ(attn.heads, 8);
  EXPECT_EQ(attn.kv_heads, 1);
  EXPECT_EQ(attn.kv_lora_rank, 512);
  EXPECT_EQ(attn.rope_dim, 64);
  EXPECT_EQ(attn.head_dim, 576);

  // Layer 0 is dense (first_k_dense_replace = 1): 18432 / 8 = 2304 per rank.
  expect_gemm(find(t, "verify", 0, "gate_up_proj"), 4, 4608, 7168, w);
  expect_gemm(find(t, "verify", 0, "down_proj"), 4, 7168, 2304, w);
  // Layer 1 is MoE: router replicated and bf16, shared expert 2048 / 8 = 256 per rank, routed
  // experts 4 tokens x top-8 = 32 rows touching 384 x (1 - (1 - 8/384)^4) = 31.0 -> 31 experts.
  expect_gemm(find(t, "verify", 1, "router"), 4, 384, 7168, DType::bf16);
  expect_gemm(find(t, "verify", 1, "shared_experts.gate_up_proj"), 4, 512, 7168, w);
  expect_gemm(find(t, "verify", 1, "shared_experts.down_proj"), 4, 7168, 256, w);
  const Op& up = find(t, "verify", 1, "experts.gate_up_proj");
  EXPECT_EQ(up.kind, OpKind::grouped_gemm);
  EXPECT_EQ(up.tokens, 32);
  EXPECT_EQ(up.experts, 31);
  EXPECT_EQ(up.n, 512);
  EXPECT_EQ(up.k, 7168);
  EXPECT_EQ(up.dtype, w);
  const Op& down = find(t, "verify", 60, "experts.down_proj");
  EXPECT_EQ(down.n, 7168);
  EXPECT_EQ(down.k, 256);
  EXPECT_EQ(find(t, "verify", 1, "experts.act").tokens, 32);
  EXPECT_EQ(find(t, "verify", 1, "experts.act").hidden, 256);
  EXPECT_EQ(count(t.verify(), OpKind::grouped_gemm), 120);  // 60 MoE layers x 2
  expect_gemm(find(t, "verify", -1, "lm_head"), 4, 20480, 7168, DType::bf16);  // 163840 / 8
  // The plain-decode step: 1 token x top-8 = 8 experts.
  EXPECT_EQ(find(t, "decode", 1, "experts.gate_up_proj").experts, 8);
}

TEST(Generator, Glm45DenseThenMoe) {
  Trace t = gen("glm-4.5", 8, 4, DType::fp8);
  const DType w = DType::fp8;
  // 96 / 8 = 12 heads, 8 / 8 = 1 KV head: qkv n = (12 + 2) x 128 = 1792; o k = 12 x 128 = 1536.
  expect_gemm(find(t, "verify", 0, "qkv_proj"), 4, 1792, 5120, w);
  expect_gemm(find(t, "verify", 0, "o_proj"), 4, 5120, 1536, w);
  const Op& qk = find(t, "verify", 0, "qk_norm");  // use_qk_norm: 4 tokens x (12 + 1) heads
  EXPECT_EQ(qk.tokens, 52);
  EXPECT_EQ(qk.hidden, 128);
  // Layers 0-2 dense (12288 / 8 = 1536), 3-91 MoE.
  for (int layer : {0, 1, 2}) expect_gemm(find(t, "verify", layer, "gate_up_proj"), 4, 3072, 5120, w);
  EXPECT_THROW(find(t, "verify", 2, "router"), std::runtime_error);
  EXPECT_THROW(find(t, "verify", 3, "gate_up_proj"), std::runtime_error);
  expect_gemm(find(t, "verify", 3, "router"), 4, 160, 5120, DType::bf16);
  expect_gemm(find(t, "verify", 3, "shared_experts.gate_up_proj"), 4, 384, 5120, w);  // 2 x 1536 / 8
  const Op& up = find(t, "verify", 3, "experts.gate_up_proj");
  EXPECT_EQ(up.experts, 30);  // 160 x (1 - (1 - 8/160)^4) = 29.7
  EXPECT_EQ(up.n, 384);
  EXPECT_EQ(count(t.verify(), OpKind::grouped_gemm), 2 * (92 - 3));
  EXPECT_EQ(count(t.verify(), OpKind::allreduce, true), 2 * 92);
}

TEST(Generator, Qwen3MoeReplicatesKvHeads) {
  Trace t = gen("qwen3-235b-a22b", 8, 4);
  // 64 / 8 = 8 heads; 4 KV heads < 8 ranks, so each rank keeps 1: n = (8 + 2) x 128 = 1280.
  expect_gemm(find(t, "verify", 0, "qkv_proj"), 4, 1280, 4096, DType::bf16);
  expect_gemm(find(t, "verify", 0, "o_proj"), 4, 4096, 1024, DType::bf16);
  EXPECT_EQ(find(t, "verify", 0, "attn").kv_heads, 1);
  expect_gemm(find(t, "verify", 0, "router"), 4, 128, 4096, DType::bf16);
  EXPECT_THROW(find(t, "verify", 0, "shared_experts.gate_up_proj"), std::runtime_error);
  const Op& up = find(t, "verify", 93, "experts.gate_up_proj");
  EXPECT_EQ(up.experts, 29);  // 128 x (1 - (1 - 8/128)^4) = 29.1
  EXPECT_EQ(up.n, 384);  // 2 x 1536 / 8
  EXPECT_EQ(count(t.verify(), OpKind::grouped_gemm), 2 * 94);
  // 32 tokens x top-8 = 256 routed rows over 128 experts repeat some: 128 x (1 - (15/16)^32) = 111.8.
  EXPECT_EQ(find(gen("qwen3-235b-a22b", 8, 32), "verify", 0, "experts.down_proj").experts, 112);
  // From 86 tokens on the expected count rounds to all 128.
  EXPECT_EQ(find(gen("qwen3-235b-a22b", 8, 128), "verify", 0, "experts.down_proj").experts, 128);
}

TEST(Generator, Qwen3DenseShapes) {
  Trace t = gen("qwen3-32b", 4, 2);
  // 64 / 4 = 16 heads, 8 / 4 = 2 KV heads: (16 + 4) x 128 = 2560; o k = 16 x 128 = 2048.
  expect_gemm(find(t, "verify", 0, "qkv_proj"), 2, 2560, 5120, DType::bf16);
  expect_gemm(find(t, "verify", 0, "o_proj"), 2, 5120, 2048, DType::bf16);
  expect_gemm(find(t, "verify", 0, "gate_up_proj"), 2, 12800, 5120, DType::bf16);  // 2 x 25600 / 4
  EXPECT_EQ(find(t, "verify", 0, "qk_norm").tokens, 2 * (16 + 2));
}

TEST(Generator, StepsMetaAndDraftHead) {
  Trace t = gen("llama-3.1-8b", 2, 4, DType::bf16, "llama-3.1-8b-eagle3", 2048);
  ASSERT_EQ(t.steps.size(), 3u);
  EXPECT_EQ(t.steps[0].name, "verify");
  EXPECT_EQ(t.steps[1].name, "draft");
  EXPECT_EQ(t.steps[2].name, "decode");
  EXPECT_EQ(t.meta.model, "llama-3.1-8b");
  EXPECT_EQ(t.meta.draft_model, "llama-3.1-8b-eagle3");
  EXPECT_EQ(t.meta.tp, 2);
  EXPECT_EQ(t.meta.tokens, 4);
  EXPECT_EQ(*t.meta.draft_tokens, 3);
  EXPECT_EQ(*t.meta.kv_len, 2048);
  EXPECT_EQ(*t.meta.weight_dtype, DType::bf16);
  EXPECT_EQ(t.meta.source, "generated");

  // Draft: fc 3 x 4096 -> 4096 (replicated), qkv reads 2 x 4096, draft vocab 32000 / 2.
  expect_gemm(find(t, "draft", -1, "fc"), 1, 4096, 12288, DType::bf16);
  expect_gemm(find(t, "draft", 0, "qkv_proj"), 1, 3072, 8192, DType::bf16);
  expect_gemm(find(t, "draft", -1, "lm_head"), 1, 16000, 4096, DType::bf16);
  const Step& d = *t.find_step("draft");
  EXPECT_EQ(count(d, OpKind::allreduce, true), 2);
  EXPECT_EQ(count(d, OpKind::allreduce), 3);
  for (const Op& op : d.ops)
    if (op.kind == OpKind::allreduce) EXPECT_EQ(op.bytes, 4096 * 2);

  // Decode: one token through the target.
  expect_gemm(find(t, "decode", 0, "qkv_proj"), 1, 3072, 4096, DType::bf16);
  EXPECT_EQ(find(t, "decode", 7, "attn_allreduce").bytes, 8192);
}

TEST(Generator, WithoutDraftThereIsNoDraftStep) {
  Trace t = gen("llama-3.1-8b", 2, 4);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.find_step("draft"), nullptr);
  EXPECT_TRUE(t.meta.draft_model.empty());
}

TEST(Generator, WeightDtypeAppliesToLinearLayersOnly) {
  Trace t = gen("llama-3.1-70b", 8, 4, DType::fp8, "llama-3.1-70b-eagle3");
  EXPECT_EQ(find(t, "verify", 0, "qkv_proj").dtype, DType::fp8);
  EXPECT_EQ(find(t, "verify", 79, "down_proj").dtype, DType::fp8);
  EXPECT_EQ(find(t, "verify", -1, "lm_head").dtype, DType::bf16);
  EXPECT_EQ(find(t, "draft", 0, "qkv_proj").dtype, DType::bf16);  // draft heads ship bf16
  EXPECT_EQ(*t.meta.weight_dtype, DType::fp8);
  for (const Op& op : t.verify().ops)
    if (op.kind == OpKind::allreduce) EXPECT_EQ(op.dtype, DType::bf16);
}

TEST(Generator, DecodeWeightsMatchWeightBytesPerRank) {
  // A dense model reads every weight once per forward: the decode step's GEMM weight bytes plus
  // the embedding table and the norms make up weight_bytes_per_rank.
  ModelConfig l70 = shipped_model("llama-3.1-70b");
  Trace t = gen("llama-3.1-70b", 8, 4, DType::fp8);
  double gemm = 0;
  for (const Op& op : t.find_step("decode")->ops)
    if (op.is_matmul()) gemm += op.weight_bytes();
  const double embed = 16032.0 * 8192 * 2, norms = (80 * 2 + 1) * 8192.0 * 2;
  EXPECT_DOUBLE_EQ(gemm + embed + norms, weight_bytes_per_rank(l70, 8, DType::fp8));

  // MoE: with 400 tokens x top-8 every expert is touched (384 x (1 - (1 - 8/384)^400) = 383.9),
  // so the verify step reads all.
  ModelConfig k2 = shipped_model("kimi-k2-instruct");
  Trace big = gen("kimi-k2-instruct", 8, 400, DType::int4);
  double moe = 0;
  for (const Op& op : big.verify().ops)
    if (op.is_matmul()) moe += op.weight_bytes();
  const double k2_embed = 20480.0 * 7168 * 2;
  const double k2_norms = (61 * (2 * 7168 + 1536 + 512) + 7168) * 2.0;
  EXPECT_DOUBLE_EQ(moe + k2_embed + k2_norms, weight_bytes_per_rank(k2, 8, DType::int4));
}

TEST(Generator, EveryArchitectureRoundTripsThroughTheReader) {
  for (const char* model : {"llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "qwen3-235b-a22b", "glm-4.5",
                            "deepseek-v3", "kimi-k2-instruct"}) {
    SCOPED_TRACE(model);
    Trace t = gen(model, 8, 4, DType::int4);
    std::string text = trace_to_string(t);
    Trace back = parse_trace(JsonCursor::parse_text(text, "mem.json"), "mem.json");
    EXPECT_EQ(trace_to_string(back), text);
  }
}

// Hand-computed E x (1 - (1 - k/E)^T), rounded.
TEST(Generator, ExpertsTouched) {
  EXPECT_EQ(experts_touched(384, 8, 1), 8);
  EXPECT_EQ(experts_touched(384, 8, 2), 16);    // 15.83
  EXPECT_EQ(experts_touched(384, 8, 4), 31);    // 31.01, min(E, T k) would say 32
  EXPECT_EQ(experts_touched(384, 8, 8), 60);    // 59.52
  EXPECT_EQ(experts_touched(384, 8, 32), 188);  // 188.23, against 256
  EXPECT_EQ(experts_touched(384, 8, 64), 284);  // 284.19, against 384
  EXPECT_EQ(experts_touched(384, 8, 128), 358);  // 358.06
  EXPECT_EQ(experts_touched(384, 8, 316), 384);  // 383.505
  EXPECT_EQ(experts_touched(384, 8, 4096), 384);
  EXPECT_EQ(experts_touched(160, 8, 2), 16);     // 15.6
  EXPECT_EQ(experts_touched(128, 8, 16), 82);    // 82.42
  EXPECT_EQ(experts_touched(128, 8, 1000), 128);
  EXPECT_EQ(experts_touched(128, 128, 3), 128);  // every token picks every expert
  EXPECT_EQ(experts_touched(8, 1, 1), 1);
  EXPECT_EQ(experts_touched(384, 8, 0), 0);
  EXPECT_EQ(experts_touched(0, 0, 4), 0);  // dense
}

TEST(Generator, ExpertsTouchedIsMonotoneAndBounded) {
  for (std::int64_t E : {8, 64, 128, 160, 256, 384})
    for (std::int64_t k : {1, 2, 8}) {
      std::int64_t last = 0;
      for (std::int64_t T = 1; T <= 8192; ++T) {
        const std::int64_t n = experts_touched(E, k, T);
        ASSERT_GE(n, last) << E << " " << k << " " << T;
        ASSERT_GE(n, k) << E << " " << k << " " << T;
        ASSERT_LE(n, std::min(E, T * k)) << E << " " << k << " " << T;
        last = n;
      }
      EXPECT_EQ(last, E) << E << " " << k;
    }
}

TEST(Generator, RejectsWhatCannotBeSharded) {
  EXPECT_NE(error_of("llama-3.1-8b", 3, 4).find("num_attention_heads (32) is not a multiple of 3"), std::string::npos);
  EXPECT_NE(error_of("llama-3.1-8b", 0, 4).find("tp: expected an integer in [1, 1024], got 0"), std::string::npos);
  EXPECT_NE(error_of("llama-3.1-8b", 2, 0).find("tokens"), std::string::npos);
  EXPECT_NE(error_of("llama-3.1-8b", 2, 100000).find("tokens"), std::string::npos);
  // GLM-4.5 at TP 16: 96 heads / 16 = 6, but 8 KV heads neither split nor replicate... they do
  // replicate (16 % 8 == 0); moe_intermediate 1536 / 16 = 96 is fine too, so it is accepted.
  EXPECT_EQ(error_of("glm-4.5", 16, 4), "(accepted)");
  // Kimi-K2 at TP 128: 64 heads do not split over 128 ranks.
  EXPECT_NE(error_of("kimi-k2-instruct", 128, 4).find("num_attention_heads (64)"), std::string::npos);
  // A draft head whose hidden size is not the target's.
  EXPECT_NE(error_of("llama-3.1-70b", 2, 4, "llama-3.1-8b-eagle3").find("expected the target's hidden_size (8192), got 4096"),
            std::string::npos);
  // A draft needs at least one draft token.
  EXPECT_NE(error_of("llama-3.1-8b", 2, 1, "llama-3.1-8b-eagle3").find("at least 2 tokens"), std::string::npos);
  // The draft head as the target, and a target as the draft.
  EXPECT_NE(error_of("llama-3.1-8b-eagle3", 2, 4).find("pass it with draft"), std::string::npos);
  EXPECT_NE(error_of("llama-3.1-8b", 2, 4, "llama-3.1-8b").find("expected an EAGLE-3 draft head"), std::string::npos);
}

TEST(Generator, MtpDraftIsOneDecoderLayerOfTheTarget) {
  const ModelConfig m = shipped_model("deepseek-v3");
  ASSERT_EQ(m.mtp_layers, 1);
  GenOptions o;
  o.tp = 8;
  o.tokens = 4;
  o.mtp_draft = true;
  const Trace t = generate_trace(m, o);
  ASSERT_EQ(t.steps.size(), 3u);
  const Step& draft = t.steps[1];
  EXPECT_EQ(draft.name, "draft");
  int eh = 0, grouped = 0, attention = 0, allreduces = 0;
  std::int64_t lm_rows = 0;
  for (const Op& op : draft.ops) {
    if (op.name == "eh_proj") {
      ++eh;
      EXPECT_EQ(op.n, m.hidden);
      EXPECT_EQ(op.k, 2 * m.hidden);
    }
    grouped += op.kind == OpKind::grouped_gemm;
    attention += op.kind == OpKind::attention;
    allreduces += op.kind == OpKind::allreduce;
    if (op.kind == OpKind::lm_head) lm_rows = op.n;
  }
  EXPECT_EQ(eh, 1);
  EXPECT_EQ(grouped, 2);     // the MTP layer is a MoE layer, as DeepSeek-V3's last
  EXPECT_EQ(attention, 1);
  EXPECT_EQ(allreduces, 3);  // embedding, attention, MoE
  EXPECT_EQ(lm_rows, (m.vocab + 7) / 8);  // the target's vocabulary, not a draft vocabulary
  EXPECT_NE(t.meta.draft_model.find("MTP"), std::string::npos);
  // A model without MTP layers, or both drafts at once, is refused naming --draft.
  EXPECT_THROW(generate_trace(shipped_model("kimi-k2-instruct"), o), SettingError);
  o.draft = shipped_model("kimi-k2-eagle3");
  EXPECT_THROW(generate_trace(m, o), SettingError);
}
