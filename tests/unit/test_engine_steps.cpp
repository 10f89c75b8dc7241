// The engines' kernel inventories (gen --engine) and their profiles: the torch reference step has
// the kernels tools/torch-steps.tsv's script launches (29 per Qwen3 layer), each serving engine
// its RoPE and KV-store launches, MoE routing and fp8 activation quantisation; the profile's
// options parse, reject bad values, and price the fused MoE GEMMs; host costs land in the steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "backend/engine_costs.hpp"
#include "core/errors.hpp"
#include "cost/compute_model.hpp"
#include "cost/engine_profile.hpp"
#include "io/json_cursor.hpp"
#include "model/generator.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"
#include "shipped_files.hpp"

using namespace eaglesim;
using test::shipped_model;

namespace {

Trace gen(const std::string& model, ServingEngine engine, int tp = 1, int tokens = 4, DType w = DType::bf16,
          int batch = 1) {
  GenOptions o;
  o.tp = tp;
  o.tokens = tokens;
  o.kv_len = 2048;
  o.weight_dtype = w;
  o.batch = batch;
  o.engine = engine;
  return generate_trace(shipped_model(model), o);
}

// Ops of layer 0 of the verify step by kind.
std::map<OpKind, int> layer0_kinds(const Trace& t) {
  std::map<OpKind, int> k;
  for (const Op& op : t.verify().ops)
    if (op.layer == 0) ++k[op.kind];
  return k;
}

int count_named(const Trace& t, const std::string& name) {
  const auto& ops = t.verify().ops;
  return static_cast<int>(std::count_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; }));
}

}  // namespace

TEST(EngineSteps, TorchReferenceStepHas33OpsPerQwen3Layer) {
  // As recorded on an H100 (PyTorch 2.11): rms_norm, qkv, q copy + norm, k copy + norm, 7 + 7 RoPE
  // kernels, K copy, the mask's two fills and where, SDPA, o, add, rms_norm, gate_up, silu, mul,
  // down, add.
  const Trace t = gen("qwen3-8b", ServingEngine::torch, 1, 6);
  int layer0 = 0;
  for (const Op& op : t.verify().ops) layer0 += op.layer == 0;
  EXPECT_EQ(layer0, 33);
  // 36 layers, the final norm and the lm_head; no embedding (the script starts from hidden states).
  EXPECT_EQ(t.verify().ops.size(), 36u * 33u + 2u);
  const auto k = layer0_kinds(t);
  EXPECT_EQ(k.at(OpKind::gemm), 4);
  EXPECT_EQ(k.at(OpKind::attention), 1);
  EXPECT_EQ(k.at(OpKind::rmsnorm), 4);
  EXPECT_EQ(k.at(OpKind::elementwise), 24);
  EXPECT_EQ(k.count(OpKind::residual_add), 0u);  // PyTorch's adds are plain kernels, never fused with the norm
  ASSERT_TRUE(t.meta.engine);
  EXPECT_EQ(*t.meta.engine, ServingEngine::torch);
}

TEST(EngineSteps, TorchRopeBytesFollowTheHalfWidthViews) {
  const Trace t = gen("llama-3.1-8b", ServingEngine::torch, 1, 4, DType::bf16, 2);
  for (const Op& op : t.verify().ops) {
    if (op.layer != 0 || op.name != "rope_q.cat") continue;
    // 8 rows of 32 heads x 64 (half of 128), both halves read and the full width written.
    EXPECT_EQ(op.tokens, 8);
    EXPECT_EQ(op.hidden, 32 * 64);
    EXPECT_EQ(op.operands, 4);
    EXPECT_DOUBLE_EQ(op.io_bytes(), 2.0 * 4 * 8 * 32 * 64);
    return;
  }
  FAIL() << "no rope_q.cat in layer 0";
}

TEST(EngineSteps, ServingEnginesLaunchRopeAndKvStore) {
  const Trace s = gen("llama-3.1-8b", ServingEngine::sglang, 2);
  EXPECT_EQ(count_named(s, "rotary_emb"), 32);
  EXPECT_EQ(count_named(s, "set_kv_buffer"), 32);
  const Trace v = gen("llama-3.1-8b", ServingEngine::vllm, 2);
  EXPECT_EQ(count_named(v, "reshape_and_cache_flash"), 32);
  const Trace r = gen("llama-3.1-8b", ServingEngine::trtllm, 2);
  EXPECT_EQ(count_named(r, "rope_kv_cache_update"), 32);
  EXPECT_EQ(count_named(r, "rotary_emb"), 0);
  // SGLang's Qwen3-MoE folds the KV store into its RoPE kernel.
  const Trace q = gen("qwen3-30b-a3b", ServingEngine::sglang, 2);
  EXPECT_EQ(count_named(q, "rope_set_kv_buffer"), 48);
  EXPECT_EQ(count_named(q, "set_kv_buffer"), 0);
}

TEST(EngineSteps, MoeRoutingKernelsPerEngine) {
  const Trace s = gen("qwen3-30b-a3b", ServingEngine::sglang, 2);
  for (const char* name : {"topk_softmax", "moe_align.memset", "moe_align_block_size", "count_and_sort_expert_tokens",
                           "moe_sum"})
    EXPECT_EQ(count_named(s, name), 48) << name;
  const Trace r = gen("qwen3-30b-a3b", ServingEngine::trtllm, 2);
  EXPECT_EQ(count_named(r, "expand_input_rows"), 48);
  EXPECT_EQ(count_named(r, "moe_align_block_size"), 0);
  // DeepSeek-style grouped top-k reads the router logits in fp32.
  const Trace k = gen("kimi-k2-instruct", ServingEngine::sglang, 8, 4, DType::int4);
  EXPECT_EQ(count_named(k, "grouped_topk"), 60);
  EXPECT_EQ(count_named(k, "rope_mla"), 61);
  EXPECT_EQ(count_named(k, "mla_kv_store"), 61);
}

TEST(EngineSteps, Fp8LinearsQuantiseTheirActivationInSglangAndVllmOnly) {
  const Trace s = gen("llama-3.1-8b", ServingEngine::sglang, 1, 4, DType::fp8);
  EXPECT_EQ(count_named(s, "act_quant_fp8"), 32 * 4);  // qkv, o, gate_up, down
  EXPECT_EQ(count_named(gen("llama-3.1-8b", ServingEngine::sglang), "act_quant_fp8"), 0);
  EXPECT_EQ(count_named(gen("llama-3.1-8b", ServingEngine::trtllm, 1, 4, DType::fp8), "act_quant_fp8"), 0);
}

TEST(EngineSteps, TorchRejectsWhatTheReferenceStepDoesNotRun) {
  GenOptions o;
  o.tokens = 4;
  o.engine = ServingEngine::torch;
  o.tp = 2;
  EXPECT_THROW(generate_trace(shipped_model("llama-3.1-8b"), o), SettingError);
  o.tp = 1;
  o.weight_dtype = DType::fp8;
  EXPECT_THROW(generate_trace(shipped_model("llama-3.1-8b"), o), SettingError);
  o.weight_dtype = DType::bf16;
  EXPECT_THROW(generate_trace(shipped_model("qwen3-30b-a3b"), o), InputError);
  o.draft = shipped_model("llama-3.1-8b-eagle3");
  EXPECT_THROW(generate_trace(shipped_model("llama-3.1-8b"), o), SettingError);
}

TEST(EngineSteps, EngineAndElementwiseRoundTripThroughTheReader) {
  for (ServingEngine e : {ServingEngine::sglang, ServingEngine::vllm, ServingEngine::trtllm, ServingEngine::torch}) {
    const Trace t = gen("qwen3-8b", e);
    const std::string text = trace_to_string(t);
    const Trace back = parse_trace(JsonCursor::parse_text(text, "t.json"), "t.json");
    ASSERT_TRUE(back.meta.engine);
    EXPECT_EQ(*back.meta.engine, e);
    EXPECT_EQ(trace_to_string(back), text);
  }
}

TEST(EngineSteps, ElementwiseOpRejectsBadFields) {
  auto parse = [](const std::string& op) {
    const std::string text = R"({"format": "eaglesim-trace", "version": 2, "meta": {"model": "m", "tp": 1, "tokens": 1,
      "dtype": "bf16", "source": "generated"}, "steps": [{"name": "verify", "ops": [)" + op + "]}]}";
    return parse_trace(JsonCursor::parse_text(text, "t.json"), "t.json");
  };
  EXPECT_NO_THROW(parse(R"({"kind": "elementwise", "name": "rope", "tokens": 4, "hidden": 512, "operands": 2})"));
  EXPECT_THROW(parse(R"({"kind": "elementwise", "name": "rope", "tokens": 4, "hidden": 512})"), InputError);
  EXPECT_THROW(parse(R"({"kind": "elementwise", "name": "rope", "tokens": 4, "hidden": 512, "operands": 17})"),
               InputError);
  EXPECT_THROW(parse(R"({"kind": "elementwise", "name": "rope", "tokens": 4, "hidden": 512, "operands": 2, "m": 1})"),
               InputError);
  try {
    parse(R"({"kind": "elementwise", "name": "rope", "tokens": 4, "hidden": 512, "operands": 0})");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("operands"), std::string::npos) << e.what();
  }
}

TEST(EngineSteps, ProfileOptionsParseAndRejectBadValues) {
  EngineProfile p = default_engine_profile(ServingEngine::sglang);
  set_engine_profile_option(p, "cycle_host_us", "1200", "cycle_host_us=1200");
  EXPECT_DOUBLE_EQ(p.cycle_host_us, 1200);
  set_engine_profile_option(p, "plain_overlap", "false", "plain_overlap=false");
  EXPECT_FALSE(p.plain_overlap);
  EXPECT_THROW(set_engine_profile_option(p, "moe_cta_gbs", "0", "x"), InputError);
  EXPECT_THROW(set_engine_profile_option(p, "cycle_host_us", "-1", "x"), InputError);
  EXPECT_THROW(set_engine_profile_option(p, "cycle_host_us", "fast", "x"), InputError);
  EXPECT_THROW(set_engine_profile_option(p, "plain_overlap", "yes", "x"), InputError);

  ServingEngineOptions o;
  o.values[kEveryEngine]["cycle_host_us"] = "100";
  o.values["sglang"]["cycle_host_us"] = "250";
  EXPECT_DOUBLE_EQ(engine_profile(ServingEngine::sglang, o).cycle_host_us, 250);  // the engine's own wins
  EXPECT_DOUBLE_EQ(engine_profile(ServingEngine::vllm, o).cycle_host_us, 100);
}

TEST(EngineSteps, HostCostsLandInTheVerifyAndDecodeSteps) {
  StrategyResult r;
  r.supported = true;
  r.verify.step_us = 1000;
  r.decode = StepResult{};
  r.decode->step_us = 800;
  EngineProfile p = default_engine_profile(ServingEngine::sglang);
  p.cycle_host_us = 300;
  p.draft_step_host_us = 50;
  p.plain_host_us = 1000;
  p.plain_overlap = true;
  const std::string note = add_engine_host_costs(r, p, 2);
  EXPECT_DOUBLE_EQ(r.verify.step_us, 1400);
  EXPECT_DOUBLE_EQ(r.verify.kind_us[static_cast<std::size_t>(OpKind::host_sync)], 400);
  EXPECT_DOUBLE_EQ(r.decode->step_us, 1000);  // 1000 us of host work behind an 800 us forward: 200 shows
  EXPECT_NE(note.find("sglang"), std::string::npos);
}

TEST(EngineSteps, FusedMoeEfficiencyPricesGroupedGemms) {
  const Topology topo = read_topology(resolve_topology_path("8x-h100-nvswitch"));
  Op op;
  op.kind = OpKind::grouped_gemm;
  op.tokens = 8;  // one token's 8 experts: 8 x 12 CTAs, one wave each streaming 2048 x 64 weights
  op.experts = 8;
  op.n = 768;
  op.k = 2048;
  EngineProfile fast = default_engine_profile(ServingEngine::sglang), slow = fast;
  fast.moe_cta_gbs = 40;
  slow.moe_cta_gbs = 10;
  const double a = compute_cost(op, topo, fast).us, b = compute_cost(op, topo, slow).us;
  EXPECT_GT(b, 1.5 * a);
  // Other kinds are priced as without an engine.
  Op norm;
  norm.kind = OpKind::rmsnorm;
  norm.tokens = 4;
  norm.hidden = 4096;
  EXPECT_DOUBLE_EQ(compute_cost(norm, topo, fast).us, compute_cost(norm, topo).us);
}
