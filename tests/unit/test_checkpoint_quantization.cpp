// The weight formats a checkpoint's quantization_config gives each class of linear layer, read as
// the engines read the blocks real checkpoints ship (models/llm/qwen3-30b-a3b-fp8.json,
// kimi-k2-thinking.json and the blocks below), the generator laying the layers out in them, and
// the KV cache's format on the attention ops.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "io/json_cursor.hpp"
#include "model/checkpoint_quantization.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

const std::string kModels = std::string(EAGLESIM_REPO) + "/models/llm/";

// A small Qwen3-MoE (2 layers, the first dense) with `quantization` as its block.
ModelConfig moe_with(const nlohmann::json& quantization) {
  nlohmann::json doc = {{"model_type", "qwen3_moe"}, {"num_hidden_layers", 2},   {"hidden_size", 256},
                        {"num_attention_heads", 4},  {"num_key_value_heads", 2}, {"head_dim", 64},
                        {"intermediate_size", 512},  {"vocab_size", 1000},       {"num_experts", 8},
                        {"num_experts_per_tok", 2},  {"moe_intermediate_size", 128}, {"mlp_only_layers", {0}}};
  if (!quantization.is_null()) doc["quantization_config"] = quantization;
  return parse_model_config(doc, "moe.json", "moe");
}

std::string error_of(const nlohmann::json& quantization) {
  try {
    moe_with(quantization);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const nlohmann::json kFp8Block = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"},
                                  {"weight_block_size", {128, 128}}};

}  // namespace

TEST(CheckpointQuantization, NoBlockMeansBf16) { EXPECT_FALSE(moe_with(nullptr).quantization); }

TEST(CheckpointQuantization, Fp8BlocksEverywhereTheRouterAndLmHeadExcluded) {
  const ModelConfig m = read_model_config(kModels + "qwen3-30b-a3b-fp8.json");
  ASSERT_TRUE(m.quantization);
  EXPECT_EQ(m.quantization->method, "fp8");
  // "model.layers.N.mlp.gate" is the router, not gate_proj: the experts stay fp8.
  EXPECT_EQ(m.quantization->formats, LinearFormats::all(DType::fp8));
  EXPECT_EQ(m.quantization->group_size, 128);
  EXPECT_TRUE(m.quantization->activations_quantized);
  EXPECT_FALSE(m.quantization->kv_cache);
}

// DeepSeek-V3 and Kimi-K2-Instruct ship every linear layer in fp8 128 x 128 blocks with no
// exclusion list; the router and lm_head stay bf16 all the same (the engines never quantise them).
TEST(CheckpointQuantization, DeepSeekV3AndKimiK2InstructShipFp8Blocks) {
  for (const char* name : {"deepseek-v3.json", "kimi-k2-instruct.json"}) {
    const ModelConfig m = read_model_config(kModels + name);
    ASSERT_TRUE(m.quantization) << name;
    EXPECT_EQ(m.quantization->method, "fp8") << name;
    EXPECT_EQ(m.quantization->formats, LinearFormats::all(DType::fp8)) << name;
    EXPECT_EQ(m.quantization->group_size, 128) << name;
    EXPECT_TRUE(m.quantization->activations_quantized) << name;
    // 671 B (DeepSeek-V3) and 1.03 T (Kimi-K2) parameters at one byte each, over 8 ranks, plus
    // the bf16 embedding, lm_head and router: what the engines load, 85-130 GB a rank.
    const double per_rank = weight_bytes_per_rank(m, 8, m.quantization->formats);
    EXPECT_GT(per_rank, 80e9) << name;
    EXPECT_LT(per_rank, 135e9) << name;
  }
}

TEST(CheckpointQuantization, CompressedTensorsIgnoreLeavesOnlyTheRoutedExpertsInt4) {
  const ModelConfig m = read_model_config(kModels + "kimi-k2-thinking.json");
  ASSERT_TRUE(m.quantization);
  const LinearFormats f = m.quantization->formats;
  EXPECT_EQ(f.attention, DType::bf16);
  EXPECT_EQ(f.dense_mlp, DType::bf16);
  EXPECT_EQ(f.shared_experts, DType::bf16);
  EXPECT_EQ(f.routed_experts, DType::int4);
  EXPECT_EQ(m.quantization->group_size, 32);
  EXPECT_FALSE(m.quantization->activations_quantized);
  EXPECT_EQ(f.describe(true), "attention bf16, dense MLP bf16, shared experts bf16, routed experts int4");
}

TEST(CheckpointQuantization, CompressedTensorsFp8DynamicWithAnFp8KvCache) {
  const nlohmann::json q = {
      {"quant_method", "compressed-tensors"},
      {"config_groups",
       {{"group_0",
         {{"targets", {"Linear"}},
          {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}}},
          {"input_activations", {{"num_bits", 8}, {"type", "float"}, {"dynamic", true}}}}}}},
      {"ignore", {"lm_head"}},
      {"kv_cache_scheme", {{"num_bits", 8}, {"type", "float"}}}};
  const ModelConfig m = moe_with(q);
  EXPECT_EQ(m.quantization->formats, LinearFormats::all(DType::fp8));
  EXPECT_TRUE(m.quantization->activations_quantized);
  ASSERT_TRUE(m.quantization->kv_cache);
  EXPECT_EQ(*m.quantization->kv_cache, DType::fp8);
}

TEST(CheckpointQuantization, GroupTargetsPickTheirClassesTheFirstGroupWins) {
  const nlohmann::json w4 = {{"num_bits", 4}, {"type", "int"}, {"group_size", 128}};
  const nlohmann::json w8 = {{"num_bits", 8}, {"type", "float"}};
  const nlohmann::json q = {{"quant_method", "compressed-tensors"},
                            {"config_groups",
                             {{"group_0", {{"targets", {"re:.*mlp\\.experts.*"}}, {"weights", w4}}},
                              {"group_1", {{"targets", {"Linear"}}, {"weights", w8}}}}}};
  const LinearFormats f = moe_with(q).quantization->formats;
  EXPECT_EQ(f.routed_experts, DType::int4);
  EXPECT_EQ(f.attention, DType::fp8);
  EXPECT_EQ(f.dense_mlp, DType::fp8);
}

TEST(CheckpointQuantization, AwqAndGptqAreInt4InGroups) {
  const ModelConfig awq = moe_with({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true},
                                    {"version", "gemm"}, {"modules_to_not_convert", {"self_attn"}}});
  EXPECT_EQ(awq.quantization->formats.attention, DType::bf16);
  EXPECT_EQ(awq.quantization->formats.routed_experts, DType::int4);
  EXPECT_EQ(awq.quantization->group_size, 128);
  const ModelConfig gptq = moe_with({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", -1}, {"desc_act", false}});
  EXPECT_EQ(gptq.quantization->formats, LinearFormats::all(DType::int4));
  EXPECT_EQ(gptq.quantization->group_size, 0);  // per channel
}

TEST(CheckpointQuantization, ModelOptFp8InEitherFormWithItsKvCache) {
  const nlohmann::json inner = {{"quant_algo", "FP8"}, {"kv_cache_quant_algo", "FP8"}, {"exclude_modules", {"lm_head"}}};
  for (const nlohmann::json& q : {nlohmann::json{{"quant_method", "modelopt"}, {"quantization", inner}},
                                  nlohmann::json{{"quant_method", "modelopt"}, {"quant_algo", "FP8"},
                                                 {"kv_cache_quant_algo", "FP8"}}}) {
    const ModelConfig m = moe_with(q);
    EXPECT_EQ(m.quantization->formats, LinearFormats::all(DType::fp8)) << q.dump();
    ASSERT_TRUE(m.quantization->kv_cache);
  }
}

// gpt-oss's mxfp4: the routed experts 4-bit (priced as int4) with an e8m0 scale byte per 32
// weights held beside them, everything else bf16; modules_to_not_convert can keep the experts
// bf16 too. A model without routed experts has nothing mxfp4 quantises.
TEST(CheckpointQuantization, Mxfp4IsTheRoutedExpertsWithTheirScales) {
  const ModelConfig m = moe_with({{"quant_method", "mxfp4"},
                                  {"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                              "model.embed_tokens", "lm_head"}}});
  ASSERT_TRUE(m.quantization);
  EXPECT_EQ(m.quantization->formats.attention, DType::bf16);
  EXPECT_EQ(m.quantization->formats.dense_mlp, DType::bf16);
  EXPECT_EQ(m.quantization->formats.shared_experts, DType::bf16);
  EXPECT_EQ(m.quantization->formats.routed_experts, DType::int4);
  EXPECT_DOUBLE_EQ(m.quantization->formats.routed_scale_bytes, 1.0 / 32);
  EXPECT_EQ(m.quantization->formats.summary(true), DType::int4);
  EXPECT_EQ(m.quantization->formats.describe(true),
            "attention bf16, dense MLP bf16, shared experts bf16, routed experts int4 with a scale byte per 32 weights");
  // Layer 1's 8 experts x 3 x 256 x 128 weights at 0.5 + 1/32 B; the rest as in bf16.
  const double experts = 8 * 3 * 256 * 128.0;
  EXPECT_DOUBLE_EQ(weight_bytes_per_rank(m, 1, m.quantization->formats),
                   weight_bytes_per_rank(m, 1, DType::bf16) - experts * (2.0 - 0.5 - 1.0 / 32));
  const ModelConfig kept = moe_with({{"quant_method", "mxfp4"}, {"modules_to_not_convert", {"mlp.experts"}}});
  EXPECT_EQ(kept.quantization->formats, LinearFormats::all(DType::bf16));
  EXPECT_EQ(error_of({{"quant_method", "mxfp4"}, {"modules_to_not_convert", {3}}}),
            "moe.json: quantization_config.modules_to_not_convert[0]: expected a non-empty string, got 3");
  nlohmann::json dense = {{"model_type", "llama"}, {"num_hidden_layers", 2},  {"hidden_size", 256},
                          {"num_attention_heads", 4}, {"intermediate_size", 512}, {"vocab_size", 1000},
                          {"quantization_config", {{"quant_method", "mxfp4"}}}};
  try {
    parse_model_config(dense, "dense.json", "dense");
    ADD_FAILURE() << "mxfp4 accepted on a model without experts";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "dense.json: quantization_config.quant_method: mxfp4 quantises routed experts (as the "
                                     "checkpoints' quantizer does) and this model has none");
  }
}

TEST(CheckpointQuantization, FormatsNotModelledAreRefusedByField) {
  EXPECT_NE(error_of({{"quant_method", "modelopt"}, {"quantization", {{"quant_algo", "NVFP4"}}}})
                .find("quantization_config.quantization.quant_algo: quant_algo NVFP4 is not modelled"),
            std::string::npos);
  const nlohmann::json int8 = nlohmann::json::parse(
      R"({"quant_method": "compressed-tensors",
          "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int"}}}})");
  EXPECT_NE(error_of(int8).find("config_groups.g.weights: 8-bit int weights are not modelled"), std::string::npos);
  EXPECT_NE(error_of({{"quant_method", "bitsandbytes"}}).find("quantization_config.quant_method: expected one of"),
            std::string::npos);
  EXPECT_NE(error_of({{"quant_method", "awq"}, {"bits", 8}}).find("quantization_config.bits: expected 4"), std::string::npos);
  nlohmann::json bad_regex = kFp8Block;
  bad_regex["modules_to_not_convert"] = {"re:(["};
  EXPECT_NE(error_of(bad_regex).find("modules_to_not_convert[0]: expected a module pattern"), std::string::npos);
  EXPECT_NE(error_of("fp8").find("quantization_config: expected an object"), std::string::npos);
  const nlohmann::json int4_kv = nlohmann::json::parse(
      R"({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 4, "type": "int"},
          "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}}})");
  EXPECT_NE(error_of(int4_kv).find("quantization_config.kv_cache_scheme: only an 8-bit float (fp8) KV cache is modelled"),
            std::string::npos);
  nlohmann::json long_pattern = kFp8Block;
  long_pattern["modules_to_not_convert"] = {"re:" + std::string(300, 'a')};
  EXPECT_NE(error_of(long_pattern).find("expected a module pattern of at most 256 characters"), std::string::npos);
}

TEST(CheckpointQuantization, ModulePatternsMatchAsTheEnginesMatch) {
  const std::string router = "model.layers.3.mlp.gate", gate = "model.layers.3.mlp.gate_proj";
  EXPECT_TRUE(module_pattern_matches("model.layers.3.mlp.gate", router));
  EXPECT_FALSE(module_pattern_matches("model.layers.3.mlp.gate", gate));  // whole parts only
  EXPECT_TRUE(module_pattern_matches("self_attn", "model.layers.0.self_attn.q_proj"));
  EXPECT_TRUE(module_pattern_matches("model.layers.*.self_attn", "model.layers.7.self_attn.o_proj"));  // a glob
  EXPECT_FALSE(module_pattern_matches("model.layers.*.mlp.router", "model.layers.7.mlp.experts.0.up_proj"));
  EXPECT_TRUE(module_pattern_matches("re:.*mlp\\.(gate|up)_proj.*", gate));  // a regex from the start
  EXPECT_FALSE(module_pattern_matches("re:mlp", gate));
}

TEST(CheckpointQuantization, TheGeneratorLaysEachClassOutInItsFormat) {
  const ModelConfig m = read_model_config(kModels + "kimi-k2-thinking.json");
  GenOptions o;
  o.tp = 8;
  o.tokens = 4;
  o.formats = m.quantization->formats;
  const Trace t = generate_trace(m, o);
  EXPECT_EQ(*t.meta.weight_dtype, DType::int4);  // the bulk: the routed experts
  int int4 = 0, bf16 = 0;
  for (const Op& op : t.verify().ops) {
    if (op.kind == OpKind::grouped_gemm) EXPECT_EQ(op.dtype, DType::int4) << op.name;
    if (op.kind == OpKind::gemm) EXPECT_EQ(op.dtype, DType::bf16) << op.name;
    if (op.kind == OpKind::elementwise) EXPECT_NE(op.name, "act_quant_fp8");
    int4 += op.dtype == DType::int4;
    bf16 += op.kind == OpKind::gemm;
  }
  EXPECT_GT(int4, 0);
  EXPECT_GT(bf16, 0);
  // --weight-dtype instead: every linear layer in it.
  o.formats.reset();
  o.weight_dtype = DType::fp8;
  const Trace all_fp8 = generate_trace(m, o);
  for (const Op& op : all_fp8.verify().ops)
    if ((op.kind == OpKind::gemm && op.name != "router") || op.kind == OpKind::grouped_gemm)
      EXPECT_EQ(op.dtype, DType::fp8) << op.name;
}

TEST(CheckpointQuantization, AnFp8KvCacheHalvesTheAttentionsKvBytesAndSurvivesTheTraceFile) {
  const ModelConfig m = read_model_config(kModels + "llama-3.1-8b.json");
  GenOptions o;
  o.tokens = 4;
  o.kv_len = 8192;
  const Trace bf16 = generate_trace(m, o);
  o.kv_cache_dtype = DType::fp8;
  const Trace fp8 = generate_trace(m, o);
  auto attention = [](const Trace& t) {
    const Op* op = t.verify().first(OpKind::attention);
    if (!op) throw std::logic_error("no attention");
    return *op;
  };
  const Op a = attention(bf16), b = attention(fp8);
  EXPECT_EQ(b.dtype, DType::fp8);
  const double kv = 8192.0 * a.kv_heads * a.head_dim * 2 * 2;  // K and V, bf16
  EXPECT_NEAR(a.io_bytes() - b.io_bytes(), kv / 2, 1.0);
  const Trace back = parse_trace(JsonCursor::parse_text(trace_to_string(fp8), "t.json"), "t.json");
  EXPECT_EQ(attention(back).dtype, DType::fp8);
  EXPECT_EQ(required_version(fp8), kTraceVersionLatest);
  // The torch reference step is bf16 throughout.
  o.engine = ServingEngine::torch;
  EXPECT_THROW(generate_trace(m, o), SettingError);
}
