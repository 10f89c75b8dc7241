// The shipped HF configs read back with their published values, architecture detection, the
// sharding checks and the per-rank weight / KV-cache sizes (expected numbers worked out by hand
// in the comments).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "shipped_files.hpp"

using namespace eaglesim;
using test::shipped_model;

namespace {

ModelConfig from_text(const std::string& text) {
  return parse_model_config(nlohmann::json::parse(text), "cfg.json", "cfg");
}

std::string error_of(const std::string& text) {
  try {
    from_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(ModelConfig, KimiK2) {
  ModelConfig m = shipped_model("kimi-k2-instruct");
  EXPECT_EQ(m.name, "kimi-k2-instruct");
  EXPECT_EQ(m.model_type, "kimi_k2");
  EXPECT_EQ(m.arch, Architecture::deepseek_v3);
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.layers, 61);
  EXPECT_EQ(m.hidden, 7168);
  EXPECT_EQ(m.heads, 64);
  EXPECT_EQ(m.q_lora_rank, 1536);
  EXPECT_EQ(m.kv_lora_rank, 512);
  EXPECT_EQ(m.qk_nope_head_dim, 128);
  EXPECT_EQ(m.qk_rope_head_dim, 64);
  EXPECT_EQ(m.v_head_dim, 128);
  EXPECT_EQ(m.routed_experts, 384);
  EXPECT_EQ(m.experts_per_token, 8);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.moe_intermediate, 2048);
  EXPECT_EQ(m.intermediate, 18432);
  EXPECT_EQ(m.first_dense_layers, 1);
  EXPECT_EQ(m.vocab, 163840);
  EXPECT_FALSE(m.layer_is_moe(0));
  EXPECT_TRUE(m.layer_is_moe(1));
  EXPECT_TRUE(m.layer_is_moe(60));
}

TEST(ModelConfig, DeepSeekV3) {
  ModelConfig m = shipped_model("deepseek-v3");
  EXPECT_EQ(m.arch, Architecture::deepseek_v3);
  EXPECT_EQ(m.layers, 61);
  EXPECT_EQ(m.hidden, 7168);
  EXPECT_EQ(m.heads, 128);
  EXPECT_EQ(m.routed_experts, 256);
  EXPECT_EQ(m.experts_per_token, 8);
  EXPECT_EQ(m.first_dense_layers, 3);
  EXPECT_EQ(m.vocab, 129280);
  EXPECT_FALSE(m.layer_is_moe(2));
  EXPECT_TRUE(m.layer_is_moe(3));
}

TEST(ModelConfig, Glm45) {
  ModelConfig m = shipped_model("glm-4.5");
  EXPECT_EQ(m.arch, Architecture::glm4_moe);
  EXPECT_EQ(m.layers, 92);
  EXPECT_EQ(m.hidden, 5120);
  EXPECT_EQ(m.heads, 96);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.routed_experts, 160);
  EXPECT_EQ(m.experts_per_token, 8);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.moe_intermediate, 1536);
  EXPECT_EQ(m.intermediate, 12288);
  EXPECT_EQ(m.first_dense_layers, 3);
  EXPECT_EQ(m.vocab, 151552);
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.layer_is_moe(2));
  EXPECT_TRUE(m.layer_is_moe(3));
}

TEST(ModelConfig, LlamaAndQwenDense) {
  ModelConfig l8 = shipped_model("llama-3.1-8b");
  EXPECT_EQ(l8.arch, Architecture::llama);
  EXPECT_EQ(l8.layers, 32);
  EXPECT_EQ(l8.hidden, 4096);
  EXPECT_EQ(l8.heads, 32);
  EXPECT_EQ(l8.kv_heads, 8);
  EXPECT_EQ(l8.head_dim, 128);  // not in the config: 4096 / 32
  EXPECT_EQ(l8.intermediate, 14336);
  EXPECT_EQ(l8.vocab, 128256);
  EXPECT_FALSE(l8.qk_norm);

  ModelConfig l70 = shipped_model("llama-3.1-70b");
  EXPECT_EQ(l70.layers, 80);
  EXPECT_EQ(l70.hidden, 8192);
  EXPECT_EQ(l70.heads, 64);
  EXPECT_EQ(l70.kv_heads, 8);
  EXPECT_EQ(l70.intermediate, 28672);

  ModelConfig q32 = shipped_model("qwen3-32b");
  EXPECT_EQ(q32.arch, Architecture::qwen3);
  EXPECT_EQ(q32.layers, 64);
  EXPECT_EQ(q32.hidden, 5120);
  EXPECT_EQ(q32.heads, 64);
  EXPECT_EQ(q32.kv_heads, 8);
  EXPECT_EQ(q32.head_dim, 128);  // explicit: 64 x 128 = 8192 != hidden
  EXPECT_EQ(q32.intermediate, 25600);
  EXPECT_EQ(q32.vocab, 151936);
  EXPECT_TRUE(q32.qk_norm);
}

// Qwen3-MoE at two sizes: the 235B with 22B active, and the small-active 30B with 3B active.
TEST(ModelConfig, Qwen3Moe) {
  struct Expected {
    const char* name;
    int layers;
    std::int64_t hidden, heads, moe_intermediate;
  };
  for (const Expected& e : {Expected{"qwen3-235b-a22b", 94, 4096, 64, 1536}, Expected{"qwen3-30b-a3b", 48, 2048, 32, 768}}) {
    SCOPED_TRACE(e.name);
    ModelConfig m = shipped_model(e.name);
    EXPECT_EQ(m.arch, Architecture::qwen3_moe);
    EXPECT_EQ(m.layers, e.layers);
    EXPECT_EQ(m.hidden, e.hidden);
    EXPECT_EQ(m.heads, e.heads);
    EXPECT_EQ(m.kv_heads, 4);
    EXPECT_EQ(m.head_dim, 128);
    EXPECT_EQ(m.routed_experts, 128);
    EXPECT_EQ(m.experts_per_token, 8);
    EXPECT_EQ(m.shared_experts, 0);
    EXPECT_EQ(m.moe_intermediate, e.moe_intermediate);
    EXPECT_EQ(m.vocab, 151936);
    EXPECT_TRUE(m.layer_is_moe(0));
    EXPECT_TRUE(m.layer_is_moe(e.layers - 1));
  }
}

TEST(ModelConfig, Eagle3DraftHeads) {
  for (const char* name : {"llama-3.1-8b-eagle3", "llama-3.1-70b-eagle3", "kimi-k2-eagle3"}) {
    SCOPED_TRACE(name);
    ModelConfig d = shipped_model(name);
    EXPECT_EQ(d.arch, Architecture::eagle3_draft);
    EXPECT_EQ(d.layers, 1);
    EXPECT_EQ(d.draft_vocab, 32000);
  }
  EXPECT_EQ(shipped_model("llama-3.1-8b-eagle3").hidden, 4096);
  EXPECT_EQ(shipped_model("llama-3.1-70b-eagle3").hidden, 8192);
  EXPECT_EQ(shipped_model("kimi-k2-eagle3").hidden, 7168);
  EXPECT_EQ(shipped_model("kimi-k2-eagle3").vocab, 163840);
  // SpecForge's configs/kimi-k2-eagle3.json: no GQA in the head (64 KV heads of 128), MLP 18432.
  EXPECT_EQ(shipped_model("kimi-k2-eagle3").heads, 64);
  EXPECT_EQ(shipped_model("kimi-k2-eagle3").kv_heads, 64);
  EXPECT_EQ(shipped_model("kimi-k2-eagle3").intermediate, 18432);
}

TEST(ModelConfig, UnknownModelTypeListsSupported) {
  std::string e = error_of(R"({"model_type":"mamba","num_hidden_layers":2})");
  EXPECT_EQ(e, "cfg.json: model_type: expected one of llama, qwen2, qwen3, qwen3_moe, mistral, mixtral, glm4_moe, "
               "deepseek_v3, kimi_k2, gpt_oss, llama4_text, got \"mamba\"");
}

TEST(ModelConfig, FieldErrorsNameTheField) {
  const std::string base = R"("model_type":"llama","num_hidden_layers":2,"num_attention_heads":8,
                              "intermediate_size":64,"vocab_size":100)";
  EXPECT_EQ(error_of("{" + base + "}"), "cfg.json: hidden_size: missing required field");
  EXPECT_EQ(error_of("{" + base + R"(,"hidden_size":"32"})"),
            "cfg.json: hidden_size: expected a positive integer, got \"32\"");
  EXPECT_EQ(error_of("{" + base + R"(,"hidden_size":32,"num_key_value_heads":3})"),
            "cfg.json: num_key_value_heads: expected a divisor of num_attention_heads (8), got 3");
  EXPECT_NE(error_of("{" + base + R"(,"hidden_size":36})").find("give head_dim explicitly"), std::string::npos);
  EXPECT_EQ(error_of(R"({"model_type":"llama","architectures":["LlamaForCausalLMEagle3"],"num_hidden_layers":2,
                        "num_attention_heads":8,"hidden_size":32,"intermediate_size":64,"vocab_size":100})"),
            "cfg.json: num_hidden_layers: expected 1 (an EAGLE-3 draft head has one decoder layer), got 2");
  EXPECT_EQ(error_of("[]"), "cfg.json: (top level): expected an object, got an array of 0");
}

TEST(ModelConfig, UnderscoreKeysAndUnusedHfKeysAreIgnored) {
  ModelConfig m = from_text(R"({"_source":"https://example","_note":{"x":1},"model_type":"llama",
      "num_hidden_layers":2,"num_attention_heads":8,"hidden_size":64,"intermediate_size":128,
      "vocab_size":100,"rope_scaling":{"type":"llama3"},"eos_token_id":[1,2]})");
  EXPECT_EQ(m.head_dim, 8);
  EXPECT_EQ(m.kv_heads, 8);  // defaults to the query heads (MHA)
}

TEST(ModelConfig, MissingFileIsInputError) {
  EXPECT_THROW(read_model_config("/nonexistent/config.json"), InputError);
}

TEST(ModelConfig, TensorParallelSharding) {
  ModelConfig l8 = shipped_model("llama-3.1-8b");
  EXPECT_NO_THROW(check_tp(l8, 8));
  EXPECT_EQ(kv_heads_per_rank(l8, 2), 4);
  EXPECT_EQ(kv_heads_per_rank(l8, 16), 1);  // 8 KV heads over 16 ranks: each keeps a replica
  try {
    check_tp(l8, 3);
    FAIL() << "tp 3 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("num_attention_heads (32) is not a multiple of 3"), std::string::npos)
        << e.what();
  }
  // 12 heads, 6 KV heads, TP 4: 4 divides 12 but neither divides nor is a multiple of 6.
  ModelConfig odd = from_text(R"({"model_type":"llama","num_hidden_layers":1,"num_attention_heads":12,
      "num_key_value_heads":6,"hidden_size":768,"intermediate_size":1024,"vocab_size":100})");
  EXPECT_THROW(check_tp(odd, 4), InputError);
  // Qwen3-235B: 4 KV heads at TP 8 are replicated; moe_intermediate 1536 = 8 x 192.
  ModelConfig q = shipped_model("qwen3-235b-a22b");
  EXPECT_NO_THROW(check_tp(q, 8));
  EXPECT_EQ(kv_heads_per_rank(q, 8), 1);
  EXPECT_EQ(vocab_per_rank(128256, 8), 16032);
  EXPECT_EQ(vocab_per_rank(10, 4), 3);  // padded up
}

TEST(ModelConfig, WeightBytesPerRank) {
  // Llama-3.1-8B, TP1, bf16: embedding and lm_head 128256 x 4096 each; per layer qkv
  // (32 + 2 x 8) x 128 x 4096 = 25,165,824, o 4096 x 4096 = 16,777,216, MLP 3 x 4096 x 14336 =
  // 176,160,768, two norms 8192 -> 218,112,000 x 32 layers; final norm 4096:
  // 8,030,261,248 parameters (the published count), 2 bytes each.
  ModelConfig l8 = shipped_model("llama-3.1-8b");
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(l8, 1, DType::bf16), 2.0 * 8030261248.0);
  // TP2: embedding/lm_head 64128 x 4096 each; per layer qkv 3072 x 4096, o 4096 x 2048,
  // MLP 3 x 4096 x 7168, norms 8192 = 109,060,096; total 4,015,263,744 parameters.
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(l8, 2, DType::bf16), 2.0 * 4015263744.0);

  // Kimi-K2, TP8, int4 linear layers (0.5 B), bf16 embedding/lm_head/router/norms:
  //   embedding + lm_head 2 x 20480 x 7168 x 2 B                            =    587,202,560
  //   final norm 7168 x 2 B                                                 =         14,336
  //   per layer attention: q_a 1536x7168 + q_b 8x192x1536 + kv_a 576x7168
  //     + kv_b 8x256x512 + o 7168x1024 = 25,886,720 x 0.5 B = 12,943,360,
  //     norms (2x7168 + 1536 + 512) x 2 B = 32,768          -> x 61 layers  =    791,543,808
  //   layer 0 dense MLP 3 x 7168 x 2304 x 0.5 B                             =     24,772,608
  //   60 MoE layers x (router 384x7168x2 B = 5,505,024, shared 3x7168x256x0.5 B = 2,752,512,
  //     routed 384 x 3x7168x256 x 0.5 B = 1,056,964,608) = 60 x 1,065,222,144 = 63,913,328,640
  //                                                                    total = 65,316,861,952
  ModelConfig k2 = shipped_model("kimi-k2-instruct");
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(k2, 8, DType::int4), 65316861952.0);
}

TEST(ModelConfig, KvCacheBytesPerTokenPerRank) {
  ModelConfig l8 = shipped_model("llama-3.1-8b");
  // 32 layers x K and V x 8 heads x 128 x 2 B = 131,072 B (128 KiB) per token.
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(l8, 1), 131072.0);
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(l8, 2), 65536.0);
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(l8, 16), 16384.0);  // one replicated KV head
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(l8, 1, DType::fp8), 65536.0);
  // MLA: 61 layers x (512 latent + 64 rope) x 2 B = 70,272 B on every rank, whatever the TP.
  ModelConfig k2 = shipped_model("kimi-k2-instruct");
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(k2, 1), 70272.0);
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(k2, 8), 70272.0);
}

// Qwen2 (QKV bias), Mistral (sliding window), Mixtral (every layer MoE, experts intermediate_size
// wide): parameters in all equal the published checkpoints' counts (safetensors totals).
TEST(ModelConfig, MoreArchitecturesMatchTheirPublishedParameterCounts) {
  const std::pair<const char*, double> published[] = {
      {"qwen2.5-7b", 7615616512.0},       {"qwen2.5-72b", 72706203648.0}, {"mistral-7b-v0.3", 7248023552.0},
      {"mistral-7b-v0.1", 7241732096.0},  {"mixtral-8x7b", 46702792704.0},
  };
  for (const auto& [name, params] : published) {
    const ModelConfig m = shipped_model(name);
    EXPECT_DOUBLE_EQ(weight_bytes_per_rank(m, 1, DType::bf16), 2.0 * params) << name;
  }
  const ModelConfig q = shipped_model("qwen2.5-7b");
  EXPECT_EQ(q.arch, Architecture::llama);
  EXPECT_TRUE(q.qkv_bias);
  EXPECT_EQ(q.sliding_window, 0);  // use_sliding_window false
  EXPECT_EQ(shipped_model("mistral-7b-v0.1").sliding_window, 4096);
  EXPECT_EQ(shipped_model("mistral-7b-v0.3").sliding_window, 0);  // null
  const ModelConfig x = shipped_model("mixtral-8x7b");
  EXPECT_EQ(x.arch, Architecture::mixtral);
  EXPECT_EQ(x.routed_experts, 8);
  EXPECT_EQ(x.experts_per_token, 2);
  EXPECT_EQ(x.moe_intermediate, 14336);
  for (int layer = 0; layer < x.layers; ++layer) EXPECT_TRUE(x.layer_is_moe(layer));
  // TP8 per rank: Mixtral's experts split 8 ways (TP-MoE), embedding and lm_head vocab-parallel.
  EXPECT_NEAR(weight_bytes_per_rank(x, 8, DType::bf16) / 1e9, 11.68, 0.01);
}

// A multimodal config nests the language model under text_config; one with a vision part and no
// text part is refused with the field it needs.
TEST(ModelConfig, NestedTextConfigIsRead) {
  nlohmann::json doc = {{"architectures", {"SomeVLForConditionalGeneration"}},
                        {"model_type", "some_vl"},
                        {"vision_config", {{"hidden_size", 1024}}},
                        {"text_config",
                         {{"model_type", "mistral"}, {"hidden_size", 4096}, {"num_hidden_layers", 2},
                          {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"intermediate_size", 14336},
                          {"vocab_size", 32768}}}};
  const ModelConfig m = parse_model_config(doc, "vl.json", "vl");
  EXPECT_EQ(m.model_type, "mistral");
  EXPECT_EQ(m.layers, 2);
  EXPECT_EQ(m.hf_architecture, "SomeVLForConditionalGeneration");
  doc.erase("text_config");
  try {
    parse_model_config(doc, "vl.json", "vl");
    ADD_FAILURE() << "accepted a vision config without its text part";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("text_config"), std::string::npos) << e.what();
  }
}

// Mistral-7B v0.1's sliding window: every target attention op attends over at most 4096 positions.
TEST(Generator, SlidingWindowBoundsTheTargetsAttention) {
  const ModelConfig m = shipped_model("mistral-7b-v0.1");
  GenOptions o;
  o.tokens = 4;
  o.kv_len = 8192;
  const Trace t = generate_trace(m, o);
  int attention = 0;
  for (const Step& s : t.steps)
    for (const Op& op : s.ops)
      if (op.kind == OpKind::attention) {
        EXPECT_EQ(op.kv_len, 4096) << s.name;
        ++attention;
      }
  EXPECT_EQ(attention, 2 * m.layers);
}

// gpt-oss (biases on q, k, v and o, a sink per head, router and experts with biases) and Llama-4's
// text model (routed + shared experts, dense layers intermediate_size_mlp wide, weightless q/k
// norm): parameters in all equal the published checkpoints' counts. gpt-oss: 116,829,156,672 and
// 20,914,757,184 (the model card's 116.83 B and 20.91 B; its "Check-point size" 60.8 GiB and 12.8
// GiB are the mxfp4 weights below). Llama-4: the Hub's safetensors counts 108,641,793,536 (Scout)
// and 401,583,781,376 (Maverick) include the vision tower and projector, 871,932,416 parameters,
// which gen reports beside the text model and does not price.
TEST(ModelConfig, GptOssAndLlama4MatchTheirPublishedParameterCounts) {
  struct Published {
    const char* name;
    double text, vision;
  };
  const Published published[] = {
      {"gpt-oss-120b", 116829156672.0, 0.0},
      {"gpt-oss-20b", 20914757184.0, 0.0},
      {"llama-4-scout-17b-16e-instruct", 108641793536.0 - 871932416.0, 871932416.0},
      {"llama-4-maverick-17b-128e-instruct", 401583781376.0 - 871932416.0, 871932416.0},
  };
  for (const Published& p : published) {
    const ModelConfig m = shipped_model(p.name);
    EXPECT_DOUBLE_EQ(weight_bytes_per_rank(m, 1, DType::bf16), 2.0 * p.text) << p.name;
    EXPECT_EQ(static_cast<double>(m.vision_params), p.vision) << p.name;
  }
  // The model cards' rounded totals (gpt-oss 116.83 B / 20.91 B; Llama-4 109 B / 400 B with the
  // vision tower) within 2 %.
  EXPECT_NEAR(weight_bytes_per_rank(shipped_model("gpt-oss-120b"), 1, DType::bf16) / 2e9, 116.83, 0.01);
  EXPECT_NEAR(weight_bytes_per_rank(shipped_model("gpt-oss-20b"), 1, DType::bf16) / 2e9, 20.91, 0.01);
  const ModelConfig scout = shipped_model("llama-4-scout-17b-16e-instruct");
  const ModelConfig maverick = shipped_model("llama-4-maverick-17b-128e-instruct");
  EXPECT_NEAR((weight_bytes_per_rank(scout, 1, DType::bf16) / 2 + scout.vision_params) / 109e9, 1.0, 0.02);
  EXPECT_NEAR((weight_bytes_per_rank(maverick, 1, DType::bf16) / 2 + maverick.vision_params) / 400e9, 1.0, 0.02);
}

// Weights per rank in the checkpoints' own formats. gpt-oss-120b at TP1: 36 x 128 experts x 3 x
// 2880 x 2880 = 114,661,785,600 mxfp4 weights at 17/32 B (4-bit value + an e8m0 byte per 32) =
// 60,914,073,600 B, and the other 2,167,371,072 parameters bf16 = 4,334,742,144 B: 65,248,815,744
// B (60.77 GiB). At TP8 every expert's intermediate dimension and the q/k/v/o heads split 8 ways,
// the embedding and lm_head are vocab-parallel, the router, o_proj and down_proj biases and the
// norms replicated. Llama-4 (bf16) splits the same way, its dense layers' 16384 too.
TEST(ModelConfig, GptOssAndLlama4WeightsPerRank) {
  const ModelConfig big = shipped_model("gpt-oss-120b"), small = shipped_model("gpt-oss-20b");
  ASSERT_TRUE(big.quantization);
  const LinearFormats f = big.quantization->formats;
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(big, 1, f), 65248815744.0);
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(big, 8, f), 8203108032.0);
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(small, 1, small.quantization->formats), 13761264768.0);  // 12.82 GiB
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(small, 8, small.quantization->formats), 1728268800.0);
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(shipped_model("llama-4-scout-17b-16e-instruct"), 1, DType::bf16), 215539722240.0);
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(shipped_model("llama-4-scout-17b-16e-instruct"), 8, DType::bf16), 26950215680.0);
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(shipped_model("llama-4-maverick-17b-128e-instruct"), 1, DType::bf16), 801423697920.0);
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(shipped_model("llama-4-maverick-17b-128e-instruct"), 8, DType::bf16), 100206356480.0);
  // Without the scale bytes (what the GEMMs are priced at): 1/32 B less per expert weight.
  LinearFormats unscaled = f;
  unscaled.routed_scale_bytes = 0.0;
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(big, 1, f) - weight_bytes_per_rank(big, 1, unscaled), 114661785600.0 / 32);
}

TEST(ModelConfig, GptOssLayout) {
  const ModelConfig m = shipped_model("gpt-oss-120b");
  EXPECT_EQ(m.arch, Architecture::gpt_oss);
  EXPECT_EQ(m.layers, 36);
  EXPECT_EQ(m.head_dim, 64);
  EXPECT_EQ(m.routed_experts, 128);
  EXPECT_EQ(m.experts_per_token, 4);
  EXPECT_EQ(m.moe_intermediate, 2880);
  EXPECT_EQ(m.shared_experts, 0);
  EXPECT_TRUE(m.qkv_bias && m.o_proj_bias && m.attention_sinks && m.router_bias && m.expert_bias);
  EXPECT_EQ(m.sliding_window, 128);
  for (int layer = 0; layer < m.layers; ++layer) {
    EXPECT_TRUE(m.layer_is_moe(layer));
    EXPECT_EQ(m.reach(layer), layer % 2 == 0 ? AttentionReach::sliding : AttentionReach::full) << layer;
  }
  // mxfp4: the routed experts 4-bit with a scale byte per 32 weights, everything else bf16.
  ASSERT_TRUE(m.quantization);
  EXPECT_EQ(m.quantization->method, "mxfp4");
  LinearFormats want = LinearFormats::all(DType::bf16);
  want.routed_experts = DType::int4;
  want.routed_scale_bytes = 1.0 / 32;
  EXPECT_EQ(m.quantization->formats, want);
  EXPECT_EQ(m.quantization->group_size, 32);
}

TEST(ModelConfig, Llama4Layout) {
  const ModelConfig scout = shipped_model("llama-4-scout-17b-16e-instruct");
  const ModelConfig maverick = shipped_model("llama-4-maverick-17b-128e-instruct");
  for (const ModelConfig* m : {&scout, &maverick}) {
    EXPECT_EQ(m->arch, Architecture::llama4);
    EXPECT_EQ(m->model_type, "llama4_text");
    EXPECT_EQ(m->hf_architecture, "Llama4ForConditionalGeneration");
    EXPECT_EQ(m->layers, 48);
    EXPECT_EQ(m->experts_per_token, 1);
    EXPECT_EQ(m->shared_experts, 1);
    EXPECT_EQ(m->moe_intermediate, 8192);
    EXPECT_EQ(m->intermediate, 16384);
    EXPECT_EQ(m->attention_chunk, 8192);
    EXPECT_FALSE(m->qkv_bias || m->o_proj_bias || m->qk_norm_weights);
    // no_rope_layers is empty in the shipped configs: a NoPE layer (full attention) every 4th.
    for (int layer = 0; layer < 48; ++layer) {
      const bool nope = (layer + 1) % 4 == 0;
      EXPECT_EQ(m->layer_uses_rope(layer), !nope) << layer;
      EXPECT_EQ(m->reach(layer), nope ? AttentionReach::full : AttentionReach::chunked) << layer;
    }
  }
  EXPECT_EQ(scout.routed_experts, 16);
  EXPECT_EQ(maverick.routed_experts, 128);
  EXPECT_TRUE(scout.qk_norm);
  EXPECT_TRUE(scout.layer_has_qk_norm(0));
  EXPECT_FALSE(scout.layer_has_qk_norm(3));  // NoPE layers have no q/k norm
  EXPECT_FALSE(maverick.qk_norm);
  for (int layer = 0; layer < 48; ++layer) {
    EXPECT_TRUE(scout.layer_is_moe(layer));
    EXPECT_EQ(maverick.layer_is_moe(layer), layer % 2 == 1) << layer;  // interleave_moe_layer_step 2
  }
}

// Optional Llama-4 fields as transformers reads them: moe_layers over interleave_moe_layer_step,
// an explicit no_rope_layers list, a null attention_chunk_size turning chunking off.
TEST(ModelConfig, Llama4ExplicitLayerLists) {
  nlohmann::json doc = nlohmann::json::parse(R"({"architectures":["Llama4ForConditionalGeneration"],
      "text_config":{"model_type":"llama4_text","num_hidden_layers":4,"hidden_size":64,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":16,"intermediate_size":32,"intermediate_size_mlp":128,"vocab_size":100,
      "num_local_experts":4,"num_experts_per_tok":1,"interleave_moe_layer_step":2,"moe_layers":[0],
      "no_rope_layers":[1,0,1,1,0],"attention_chunk_size":16}})");
  ModelConfig m = parse_model_config(doc, "l4.json", "l4");
  EXPECT_TRUE(m.layer_is_moe(0));
  EXPECT_FALSE(m.layer_is_moe(1));
  EXPECT_EQ(m.intermediate, 128);
  EXPECT_EQ(m.reach(0), AttentionReach::chunked);
  EXPECT_EQ(m.reach(1), AttentionReach::full);
  EXPECT_EQ(m.vision_params, 0);  // no vision_config
  doc["text_config"]["attention_chunk_size"] = nullptr;
  m = parse_model_config(doc, "l4.json", "l4");
  EXPECT_EQ(m.attention_chunk, 0);
  EXPECT_EQ(m.reach(0), AttentionReach::full);
  EXPECT_TRUE(m.layer_uses_rope(0));
}

// The KV positions an attention op reads per layer kind, for T new tokens over kv_len positions.
TEST(ModelConfig, AttendedKvPerLayerReach) {
  const ModelConfig g = shipped_model("gpt-oss-120b");
  EXPECT_EQ(attended_kv(g, 0, 4096, 4), 128);  // sliding: each query its own window
  EXPECT_EQ(attended_kv(g, 0, 100, 4), 100);
  EXPECT_EQ(attended_kv(g, 1, 4096, 4), 4096);  // full
  const ModelConfig s = shipped_model("llama-4-scout-17b-16e-instruct");
  EXPECT_EQ(attended_kv(s, 3, 20000, 4), 20000);     // NoPE: full context
  EXPECT_EQ(attended_kv(s, 0, 20000, 4), 3616);      // 19996 mod 8192 + 4
  EXPECT_EQ(attended_kv(s, 0, 20000, 1), 3616);      // 19999 mod 8192 + 1
  EXPECT_EQ(attended_kv(s, 0, 16384, 1), 8192);      // the last position of a chunk sees it all
  EXPECT_EQ(attended_kv(s, 0, 16385, 1), 1);         // the first of the next sees itself
  EXPECT_EQ(attended_kv(s, 0, 8194, 4), 8194);       // new tokens straddling a boundary: both chunks' part
  EXPECT_EQ(attended_kv(s, 0, 3000, 4), 3000);
}

TEST(ModelConfig, GptOssAndLlama4FieldErrorsNameTheField) {
  const std::string gpt = R"("model_type":"gpt_oss","num_hidden_layers":4,"hidden_size":64,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":16,"intermediate_size":32,"vocab_size":100,"sliding_window":8)";
  EXPECT_EQ(error_of("{" + gpt + R"(,"num_experts_per_tok":2})"), "cfg.json: num_local_experts: missing required field");
  EXPECT_EQ(error_of("{" + gpt + R"(,"num_local_experts":4})"), "cfg.json: num_experts_per_tok: missing required field");
  EXPECT_EQ(error_of("{" + gpt + R"(,"num_local_experts":4,"num_experts_per_tok":2,"experts_per_token":3})"),
            "cfg.json: experts_per_token: expected num_experts_per_tok's value (2), got 3");
  EXPECT_EQ(error_of("{" + gpt + R"(,"num_local_experts":4,"experts_per_token":2,
      "layer_types":["sliding_attention","full_attention","sliding_attention"]})"),
            "cfg.json: layer_types: expected one entry per layer (4 = num_hidden_layers), got an array of 3");
  EXPECT_EQ(error_of("{" + gpt + R"(,"num_local_experts":4,"experts_per_token":2,
      "layer_types":["sliding_attention","full_attention","chunked_attention","full_attention"]})"),
            "cfg.json: layer_types[2]: expected one of sliding_attention, full_attention, got \"chunked_attention\"");
  std::string no_window = gpt;
  no_window.replace(no_window.find(R"(,"sliding_window":8)"), std::string(R"(,"sliding_window":8)").size(), "");
  EXPECT_EQ(error_of("{" + no_window + R"(,"num_local_experts":4,"experts_per_token":2})"),
            "cfg.json: sliding_window: missing required field");
  EXPECT_EQ(from_text("{" + no_window + R"(,"num_local_experts":4,"experts_per_token":2,
      "layer_types":["full_attention","full_attention","full_attention","full_attention"]})")
                .sliding_window,
            0);  // no sliding layer, no window needed

  const std::string text = R"("model_type":"llama4_text","num_hidden_layers":4,"hidden_size":64,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"intermediate_size":32,"vocab_size":100)";
  auto nested = [&](const std::string& fields) {
    return R"({"architectures":["Llama4ForConditionalGeneration"],"model_type":"llama4","text_config":{)" + text +
           fields + "}}";
  };
  EXPECT_EQ(error_of(nested(R"(,"num_experts_per_tok":1)")), "cfg.json: text_config.num_local_experts: missing required field");
  EXPECT_EQ(error_of(nested(R"(,"num_local_experts":4,"num_experts_per_tok":1,"interleave_moe_layer_step":2)")),
            "cfg.json: text_config.intermediate_size_mlp: missing required field");
  EXPECT_EQ(error_of(nested(R"(,"num_local_experts":4,"num_experts_per_tok":1,"no_rope_layers":[1,1,0])")),
            "cfg.json: text_config.no_rope_layers: expected at least one entry per layer (4 = num_hidden_layers), got an "
            "array of 3");
  EXPECT_EQ(error_of(nested(R"(,"num_local_experts":4,"num_experts_per_tok":1,"moe_layers":[0,4])")),
            "cfg.json: text_config.moe_layers[1]: expected an integer in [0, 3], got 4");
  // Every layer MoE: the dense width is not needed.
  EXPECT_EQ(from_text(nested(R"(,"num_local_experts":4,"num_experts_per_tok":1)")).moe_intermediate, 32);
  nlohmann::json vision = nlohmann::json::parse(nested(R"(,"num_local_experts":4,"num_experts_per_tok":1)"));
  vision["vision_config"] = {{"hidden_size", 8}};
  EXPECT_EQ(error_of(vision.dump()), "cfg.json: vision_config.intermediate_size: missing required field");
}

// gpt-oss: sliding layers' attention ops read at most the 128-position window, the full layers the
// whole context; Llama-4: RoPE layers read their chunk, NoPE layers the whole context, in the
// verify and the decode steps alike; the draft head's attention is never bounded.
TEST(Generator, PerLayerReachBoundsTheTargetsAttention) {
  GenOptions o;
  o.tokens = 4;
  o.kv_len = 20000;
  const ModelConfig g = shipped_model("gpt-oss-20b");
  const Trace tg = generate_trace(g, o);
  int attention = 0;
  for (const Step& s : tg.steps)
    for (const Op& op : s.ops)
      if (op.kind == OpKind::attention) {
        EXPECT_EQ(op.kv_len, op.layer % 2 == 0 ? 128 : 20000) << s.name << " layer " << op.layer;
        ++attention;
      }
  EXPECT_EQ(attention, 2 * g.layers);
  EXPECT_NE(tg.meta.notes.find("12 of 24 layers attend within a sliding window of 128 positions"), std::string::npos)
      << tg.meta.notes;

  const ModelConfig s = shipped_model("llama-4-scout-17b-16e-instruct");
  const Trace ts = generate_trace(s, o);
  for (const Step& st : ts.steps)
    for (const Op& op : st.ops)
      if (op.kind == OpKind::attention) {
        EXPECT_EQ(op.kv_len, (op.layer + 1) % 4 == 0 ? 20000 : 3616) << st.name << " layer " << op.layer;
      }
  EXPECT_NE(ts.meta.notes.find("36 of 48 layers attend within their chunk of 8192 positions"), std::string::npos)
      << ts.meta.notes;
  EXPECT_NE(ts.meta.notes.find("the vision tower (0.87 B parameters) is not priced"), std::string::npos) << ts.meta.notes;

  // Ragged batches bound each request's length.
  o.batch = 2;
  o.kv_lens = {8000, 9000};
  const Trace tr = generate_trace(s, o);
  for (const Op& op : tr.verify().ops)
    if (op.kind == OpKind::attention && op.layer == 0) {
      EXPECT_EQ(op.kv_lens, (std::vector<std::int64_t>{8000, 808}));  // 8996 mod 8192 + 4
      EXPECT_EQ(op.kv_len, 8000);                                     // the longest of them
    }
}

// Llama-4's layers as the engines run them: Maverick's even layers dense (intermediate_size_mlp),
// odd layers routed + shared experts; Scout's q/k norm on the RoPE layers only, and no RoPE kernel
// on the NoPE layers.
TEST(Generator, Llama4DenseAndMoeLayersAndNoPe) {
  GenOptions o;
  o.tp = 8;
  o.tokens = 4;
  const ModelConfig mav = shipped_model("llama-4-maverick-17b-128e-instruct");
  const Trace t = generate_trace(mav, o);
  std::vector<int> dense_gate_up(48, 0), experts(48, 0), shared(48, 0);
  for (const Op& op : t.verify().ops) {
    if (op.layer < 0) continue;
    if (op.name == "gate_up_proj") {
      EXPECT_EQ(op.n, 2 * 16384 / 8);
      ++dense_gate_up[op.layer];
    }
    if (op.name == "experts.gate_up_proj") {
      EXPECT_EQ(op.n, 2 * 8192 / 8);
      ++experts[op.layer];
    }
    if (op.name == "shared_experts.gate_up_proj") ++shared[op.layer];
  }
  for (int layer = 0; layer < 48; ++layer) {
    const bool moe = layer % 2 == 1;
    EXPECT_EQ(dense_gate_up[layer], moe ? 0 : 1) << layer;
    EXPECT_EQ(experts[layer], moe ? 1 : 0) << layer;
    EXPECT_EQ(shared[layer], moe ? 1 : 0) << layer;
  }

  const Trace ts = generate_trace(shipped_model("llama-4-scout-17b-16e-instruct"), o);
  std::vector<int> qk_norm(48, 0), rope(48, 0), kv_store(48, 0);
  for (const Op& op : ts.verify().ops) {
    if (op.layer < 0) continue;
    qk_norm[op.layer] += op.name == "qk_norm";
    rope[op.layer] += op.name == "rotary_emb";
    kv_store[op.layer] += op.name == "set_kv_buffer";
  }
  for (int layer = 0; layer < 48; ++layer) {
    const bool nope = (layer + 1) % 4 == 0;
    EXPECT_EQ(qk_norm[layer], nope ? 0 : 1) << layer;
    EXPECT_EQ(rope[layer], nope ? 0 : 1) << layer;
    EXPECT_EQ(kv_store[layer], 1) << layer;
  }
}
