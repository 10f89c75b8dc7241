// The shipped HF configs read back with their published values, architecture detection, the
// sharding checks and the per-rank weight / KV-cache sizes (expected numbers worked out by hand
// in the comments).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"

using namespace eaglesim;

namespace {

ModelConfig shipped(const std::string& name) {
  return read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/" + name + ".json");
}

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
  ModelConfig m = shipped("kimi-k2-instruct");
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
  ModelConfig m = shipped("deepseek-v3");
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
  ModelConfig m = shipped("glm-4.5");
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
  ModelConfig l8 = shipped("llama-3.1-8b");
  EXPECT_EQ(l8.arch, Architecture::llama);
  EXPECT_EQ(l8.layers, 32);
  EXPECT_EQ(l8.hidden, 4096);
  EXPECT_EQ(l8.heads, 32);
  EXPECT_EQ(l8.kv_heads, 8);
  EXPECT_EQ(l8.head_dim, 128);  // not in the config: 4096 / 32
  EXPECT_EQ(l8.intermediate, 14336);
  EXPECT_EQ(l8.vocab, 128256);
  EXPECT_FALSE(l8.qk_norm);

  ModelConfig l70 = shipped("llama-3.1-70b");
  EXPECT_EQ(l70.layers, 80);
  EXPECT_EQ(l70.hidden, 8192);
  EXPECT_EQ(l70.heads, 64);
  EXPECT_EQ(l70.kv_heads, 8);
  EXPECT_EQ(l70.intermediate, 28672);

  ModelConfig q32 = shipped("qwen3-32b");
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
    ModelConfig m = shipped(e.name);
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
    ModelConfig d = shipped(name);
    EXPECT_EQ(d.arch, Architecture::eagle3_draft);
    EXPECT_EQ(d.layers, 1);
    EXPECT_EQ(d.draft_vocab, 32000);
  }
  EXPECT_EQ(shipped("llama-3.1-8b-eagle3").hidden, 4096);
  EXPECT_EQ(shipped("llama-3.1-70b-eagle3").hidden, 8192);
  EXPECT_EQ(shipped("kimi-k2-eagle3").hidden, 7168);
  EXPECT_EQ(shipped("kimi-k2-eagle3").vocab, 163840);
  // SpecForge's configs/kimi-k2-eagle3.json: no GQA in the head (64 KV heads of 128), MLP 18432.
  EXPECT_EQ(shipped("kimi-k2-eagle3").heads, 64);
  EXPECT_EQ(shipped("kimi-k2-eagle3").kv_heads, 64);
  EXPECT_EQ(shipped("kimi-k2-eagle3").intermediate, 18432);
}

TEST(ModelConfig, UnknownModelTypeListsSupported) {
  std::string e = error_of(R"({"model_type":"mamba","num_hidden_layers":2})");
  EXPECT_EQ(e, "cfg.json: model_type: expected one of llama, qwen2, qwen3, qwen3_moe, mistral, mixtral, glm4_moe, "
               "deepseek_v3, kimi_k2, got \"mamba\"");
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
  ModelConfig l8 = shipped("llama-3.1-8b");
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
  ModelConfig q = shipped("qwen3-235b-a22b");
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
  ModelConfig l8 = shipped("llama-3.1-8b");
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
  ModelConfig k2 = shipped("kimi-k2-instruct");
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(k2, 8, DType::int4), 65316861952.0);
}

TEST(ModelConfig, KvCacheBytesPerTokenPerRank) {
  ModelConfig l8 = shipped("llama-3.1-8b");
  // 32 layers x K and V x 8 heads x 128 x 2 B = 131,072 B (128 KiB) per token.
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(l8, 1), 131072.0);
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(l8, 2), 65536.0);
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(l8, 16), 16384.0);  // one replicated KV head
  EXPECT_DOUBLE_EQ(kv_cache_bytes_per_token_per_rank(l8, 1, DType::fp8), 65536.0);
  // MLA: 61 layers x (512 latent + 64 rope) x 2 B = 70,272 B on every rank, whatever the TP.
  ModelConfig k2 = shipped("kimi-k2-instruct");
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
    const ModelConfig m = shipped(name);
    EXPECT_DOUBLE_EQ(weight_bytes_per_rank(m, 1, DType::bf16), 2.0 * params) << name;
  }
  const ModelConfig q = shipped("qwen2.5-7b");
  EXPECT_EQ(q.arch, Architecture::llama);
  EXPECT_TRUE(q.qkv_bias);
  EXPECT_EQ(q.sliding_window, 0);  // use_sliding_window false
  EXPECT_EQ(shipped("mistral-7b-v0.1").sliding_window, 4096);
  EXPECT_EQ(shipped("mistral-7b-v0.3").sliding_window, 0);  // null
  const ModelConfig x = shipped("mixtral-8x7b");
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
  const ModelConfig m = shipped("mistral-7b-v0.1");
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
