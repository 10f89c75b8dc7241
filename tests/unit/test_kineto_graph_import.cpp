// Graph-mode profiles: kernels replayed from CUDA graphs carry no CPU shapes; the model config
// gives them (config_shape_matcher), layers are numbered from the repetition of the kernel
// sequence (also at TP=1), and the engine's allreduce path is recovered from the kernel names.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/errors.hpp"
#include "import/kernel_classifier.hpp"
#include "import/kineto_import.hpp"
#include "import/kineto_reader.hpp"
#include "import/recorded_strategy.hpp"
#include "model/model_config.hpp"
#include "model/sharded_layer_shape.hpp"
#include "trace/trace_stats.hpp"

using namespace eaglesim;

namespace {

const std::string kDir = std::string(EAGLESIM_TEST_DATA) + "/kineto/";
const std::string kModels = std::string(EAGLESIM_TEST_DATA) + "/../../models/llm/";

KinetoImportOptions graph_options(const std::string& config, std::int64_t tokens, std::int64_t kv_len) {
  KinetoImportOptions o;
  const ModelConfig cfg = read_model_config(config);
  o.layer_shape = [cfg](int tp) { return rank_layer_shape(cfg, tp); };
  o.layers_per_step = cfg.layers;
  o.tokens = tokens;
  o.kv_len = kv_len;
  return o;
}

KinetoImportOptions tiny() { return graph_options(kDir + "graph/tiny_llama.json", 4, 128); }

std::vector<std::string> graph_pair(const std::string& variant) {
  return {kDir + "graph/llama8b_tp2_t4_" + variant + "_graph_rank0.json.gz",
          kDir + "graph/llama8b_tp2_t4_" + variant + "_graph_rank1.json.gz"};
}

std::string error_of(const std::vector<std::string>& files, const KinetoImportOptions& o) {
  try {
    import_kineto(files, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// The SGLang-style TP1 step: every GEMM, attention and norm typed with its shape from the
// config, the layers numbered without any allreduce.
TEST(KinetoGraphImport, Tp1StepTypedFromConfigAndLayersNumbered) {
  KinetoImport r = import_kineto_with_summary({kDir + "graph/sglang_tp1_synthetic.json"}, tiny());
  const Step& step = r.trace.steps.at(0);
  std::map<std::string, int> gemms;
  int attention = 0, norms = 0, act = 0, lm_head = 0, embedding = 0, other = 0;
  for (const Op& op : step.ops) {
    ASSERT_TRUE(op.us.has_value()) << op.name;
    switch (op.kind) {
      case OpKind::gemm: ++gemms[op.name + " " + op.shape_string()]; EXPECT_GE(op.layer, 0); break;
      case OpKind::attention:
        ++attention;
        EXPECT_EQ(op.q_tokens, 4);
        EXPECT_EQ(op.kv_len, 128);
        EXPECT_EQ(op.heads, 4);
        EXPECT_EQ(op.kv_heads, 2);
        EXPECT_EQ(op.head_dim, 64);
        // The prefill kernel and its merge-states kernel are one op, with the graph's kernel
        // boundary before each (0.3 us in the fixture).
        EXPECT_NEAR(*op.us, 8.0 + 1.0 + 2 * 0.3, 1e-9);
        break;
      case OpKind::rmsnorm: ++norms; EXPECT_EQ(op.tokens, 4); EXPECT_EQ(op.hidden, 256); break;
      case OpKind::act: ++act; EXPECT_EQ(op.hidden, 512); break;  // intermediate / tp
      case OpKind::lm_head: ++lm_head; EXPECT_EQ(op.n, 1000); EXPECT_EQ(op.layer, -1); break;
      case OpKind::embedding: ++embedding; EXPECT_EQ(op.layer, -1); break;
      case OpKind::other: ++other; break;
      default: ADD_FAILURE() << to_string(op.kind);
    }
  }
  EXPECT_EQ(gemms["qkv_proj m=4 n=512 k=256 bf16"], 4);
  EXPECT_EQ(gemms["o_proj m=4 n=256 k=256 bf16"], 4);
  EXPECT_EQ(gemms["gate_up_proj m=4 n=1024 k=256 bf16"], 4);
  EXPECT_EQ(gemms["down_proj m=4 n=256 k=512 bf16"], 4);
  EXPECT_EQ(attention, 4);
  EXPECT_EQ(norms, 9);  // two per layer and the final norm
  EXPECT_EQ(act, 4);
  EXPECT_EQ(lm_head, 1);
  EXPECT_EQ(embedding, 1);
  EXPECT_EQ(other, 5);  // the RoPE kernel of every layer and the eager argmax: measured only
  EXPECT_EQ(compute_stats(step).layers, 4);
  EXPECT_EQ(step.ops[1].name, "input_norm");
  EXPECT_EQ(step.ops[1].layer, 0);
  EXPECT_EQ(step.ops[10].layer, 1);
  // Back to back in a graph: the GPU span is a real step time, and the ops add up to it but for
  // the boundary before the eager argmax, which follows the graph.
  ASSERT_TRUE(step.measured_us.has_value());
  double sum = 0;
  for (const Op& op : step.ops) sum += *op.us;
  EXPECT_NEAR(sum, *step.measured_us - 0.3, 1e-6);
  EXPECT_NE(r.summary.shape_source.find("4 layers of 9 ops"), std::string::npos) << r.summary.shape_source;
  const std::string text = summary_to_text(r.summary);
  EXPECT_NE(text.find("unrecognised kernels: 5 (BatchQKApplyRotaryPosIdsCosSinCacheKernel x4, reduce_kernel x1)"),
            std::string::npos) << text;
  EXPECT_EQ(r.trace.meta.tokens, 4);
  EXPECT_EQ(*r.trace.meta.kv_len, 128);
}

// Without --config the graph kernels stay measured-only ops, and the warning says what to pass.
TEST(KinetoGraphImport, WithoutConfigKernelsStayMeasuredAndTheWarningSaysWhy) {
  KinetoImport r = import_kineto_with_summary({kDir + "graph/sglang_tp1_synthetic.json"}, {});
  for (const Op& op : r.trace.steps[0].ops) EXPECT_EQ(op.kind, OpKind::other) << op.name;
  bool told = false;
  for (const auto& w : r.summary.warnings) told |= w.find("pass config, tokens and kv_len") != std::string::npos;
  EXPECT_TRUE(told);
}

// The recorded eager TP2 steps replayed as graphs: the graph path types them as the eager path
// does from CPU shapes (with the model's 4 KV heads per rank, not the expanded 16), aligns
// their collectives and names the engine's allreduce path.
TEST(KinetoGraphImport, EagerTp2FixturesAsGraphsKeepTheirShapesAndCollectives) {
  for (const std::string variant : {"nccl", "one_shot"}) {
    KinetoImportOptions o = graph_options(kModels + "llama-3.1-8b.json", 4, 2048);
    KinetoImport r = import_kineto_with_summary(graph_pair(variant), o);
    const Step& step = r.trace.steps.at(0);
    ASSERT_EQ(step.ops.size(), 32u * 14u) << variant;
    std::map<std::string, int> gemms;
    int allreduce = 0;
    double allreduce_us = 0;
    for (const Op& op : step.ops) {
      if (op.kind == OpKind::gemm) ++gemms[op.name + " " + op.shape_string()];
      if (op.kind == OpKind::attention) {
        EXPECT_EQ(op.heads, 16);
        EXPECT_EQ(op.kv_heads, 4);
      }
      if (op.kind == OpKind::allreduce) {
        ++allreduce;
        EXPECT_EQ(op.bytes, 32768);
        EXPECT_EQ(op.us_source, UsSource::aligned);
        allreduce_us += *op.us;
      }
    }
    EXPECT_EQ(gemms["qkv_proj m=4 n=3072 k=4096 bf16"], 32) << variant;
    EXPECT_EQ(gemms["o_proj m=4 n=4096 k=2048 bf16"], 32);
    EXPECT_EQ(gemms["gate_up_proj m=4 n=14336 k=4096 bf16"], 32);
    EXPECT_EQ(gemms["down_proj m=4 n=4096 k=7168 bf16"], 32);
    EXPECT_EQ(allreduce, 64);
    EXPECT_EQ(step.ops[6].site, "attn_out");
    EXPECT_EQ(step.ops[12].site, "mlp_out");
    EXPECT_EQ(compute_stats(step).layers, 32);
    // The aligned cost is the later rank's duration, which the fixture gave: a few us each.
    EXPECT_GT(allreduce_us, 64 * 2.0);
    EXPECT_LT(allreduce_us, 64 * 20.0);
    ASSERT_EQ(r.summary.allreduce_paths.size(), 1u);
    const std::string want = variant == "nccl" ? "eaglesim strategy nccl" : "eaglesim strategy oneshot";
    EXPECT_NE(r.summary.allreduce_paths[0].find(want), std::string::npos) << r.summary.allreduce_paths[0];
    EXPECT_NE(r.trace.meta.notes.find("Recorded allreduce path"), std::string::npos);
  }
}

TEST(KinetoGraphImport, ConfigThatDoesNotFitIsRefused) {
  // 32 layers in the config, 4 in the trace.
  EXPECT_NE(error_of({kDir + "graph/sglang_tp1_synthetic.json"}, graph_options(kModels + "llama-3.1-8b.json", 4, 2048))
                .find("num_hidden_layers is 32, but the step's 40 kernels hold no run of 32 repeating layers"),
            std::string::npos);
  // Qwen3-32B has 64 layers: the 32-layer TP2 step is not it.
  EXPECT_NE(error_of(graph_pair("nccl"), graph_options(kModels + "qwen3-32b.json", 4, 2048)).find("num_hidden_layers is 64"),
            std::string::npos);
  // The kernels need the run's tokens and KV length.
  KinetoImportOptions no_tokens = tiny();
  no_tokens.tokens.reset();
  EXPECT_NE(error_of({kDir + "graph/sglang_tp1_synthetic.json"}, no_tokens).find("tokens: required"), std::string::npos);
  KinetoImportOptions no_kv = tiny();
  no_kv.kv_len.reset();
  EXPECT_NE(error_of({kDir + "graph/sglang_tp1_synthetic.json"}, no_kv).find("kv_len: required"), std::string::npos);
  // One rank of a TP2 run told it was TP1.
  KinetoImportOptions tp1 = graph_options(kModels + "llama-3.1-8b.json", 4, 2048);
  tp1.tp = 1;
  EXPECT_NE(error_of(graph_pair("nccl"), tp1).find("tp 1: expected 2"), std::string::npos);
}

TEST(KinetoGraphImport, OtherVendorAndMisalignedRanksAreRefused) {
  EXPECT_NE(error_of({kDir + "bad/rocm_graph.json"}, {}).find("deviceProperties[0].name: expected an NVIDIA GPU"),
            std::string::npos);
  const std::string e = error_of({graph_pair("nccl")[0], kDir + "bad/graph_tp2_missing_step_rank1.json.gz"},
                                 graph_options(kModels + "llama-3.1-8b.json", 4, 2048));
  EXPECT_NE(e.find("graph_tp2_missing_step_rank1.json.gz: 64 collective kernels"), std::string::npos) << e;
  EXPECT_NE(e.find("not the ranks of one run"), std::string::npos) << e;
}

// The engines' kernel names, as their public source declares them.
TEST(KernelClassifier, EngineKernelFamilies) {
  struct Case {
    const char* name;
    KernelClass cls;
    const char* family;
  };
  const Case cases[] = {
      {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
       KernelClass::allreduce, "vLLM/SGLang custom allreduce 1-stage"},
      {"void sglang::cross_device_reduce_2stage<__nv_bfloat16, 8>(sglang::RankData*, sglang::RankSignals, sglang::Signal*, __nv_bfloat16*, int, int)",
       KernelClass::allreduce, "vLLM/SGLang custom allreduce 2-stage"},
      {"void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 2, true, true>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
       KernelClass::allreduce, "FlashInfer/TRT-LLM allreduce fusion one-shot"},
      {"void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_twoshot_sync<(tensorrt_llm::kernels::ar_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 4, true>(tensorrt_llm::kernels::ar_fusion::AllReduceFusionParams)",
       KernelClass::allreduce, "FlashInfer/TRT-LLM allreduce fusion two-shot"},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", KernelClass::allreduce, "NCCL"},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", KernelClass::collective_other, "NCCL"},
      {"void (anonymous namespace)::one_shot_all_reduce_kernel<c10::BFloat16, 16, 2>(c10::BFloat16**, c10::BFloat16*, unsigned long)",
       KernelClass::allreduce, "torch symmetric memory one-shot"},
      {"void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)",
       KernelClass::attention, "FlashInfer"},
      {"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)",
       KernelClass::attention, "FlashAttention"},
      {"void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 3, true>(flash::Flash_fwd_params)",
       KernelClass::attention, "FlashAttention"},
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, false, false, false, false, false>(pytorch_flash::Flash_fwd_params)",
       KernelClass::attention, "PyTorch SDPA flash"},
      {"fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)",
       KernelClass::attention, "PyTorch SDPA memory-efficient"},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
       KernelClass::attention, "cuDNN SDPA"},
      {"fused_moe_kernel", KernelClass::moe_gemm, "Triton fused_moe"},
      {"void marlin_moe_wna16::Marlin<(vllm::ScalarTypeId)5, 256, 1, 8, 8, true, 4, 0, false>(int4 const*)", KernelClass::moe_gemm, "Marlin MoE"},
      {"void marlin::Marlin<__nv_bfloat16, (vllm::ScalarTypeId)3, 256, 1, 8, 8, true, 4, 8, false>(int4 const*, int4 const*, int4*, int4*)",
       KernelClass::gemm, "Marlin"},
      {"void deep_gemm::sm90_fp8_gemm_1d2d_impl<0u, 4096u, 7168u, 1u, 128u, 128u, 128u, 1u, 8u, 128u, 128u, 1u, 1u, false, (deep_gemm::GemmType)0>(float*, int*, unsigned int, unsigned int, unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st)",
       KernelClass::gemm, "DeepGEMM"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
       KernelClass::gemm, "cuBLAS xmma"},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)",
       KernelClass::gemm, "CUTLASS"},
      {"void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)",
       KernelClass::norm, "norm"},
      {"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
       KernelClass::fused_add_norm, "fused add+RMSNorm"},
      {"void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)",
       KernelClass::fused_add_norm, "fused add+RMSNorm"},
      {"void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
       KernelClass::act, "fused act·mul"},
  };
  for (const Case& c : cases) {
    KernelMatch m = classify_kernel(c.name, GpuActivityType::kernel);
    EXPECT_EQ(m.cls, c.cls) << c.name;
    EXPECT_EQ(m.family, c.family) << c.name;
  }
}

TEST(RecordedStrategy, FamiliesMapOntoTheStrategyRunningTheSameAlgorithm) {
  EXPECT_EQ(strategy_for_allreduce_family("NCCL"), "nccl");
  EXPECT_EQ(strategy_for_allreduce_family("vLLM/SGLang custom allreduce 1-stage"), "oneshot");
  EXPECT_EQ(strategy_for_allreduce_family("vLLM/SGLang custom allreduce 2-stage"), "twoshot");
  EXPECT_EQ(strategy_for_allreduce_family("torch symmetric memory two-shot"), "twoshot");
  EXPECT_EQ(strategy_for_allreduce_family("FlashInfer/TRT-LLM allreduce fusion one-shot"), "fused");
  EXPECT_EQ(strategy_for_allreduce_family("custom allreduce"), "");
}

// A ROCm profile names its runtime calls hip*: refused even when the device name says nothing.
TEST(KinetoGraphImport, HipRuntimeCallsAreRefused) {
  const std::string text = R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_BBS_BH_MT64x16x128", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"correlation": 3, "stream": 7}}]})";
  try {
    parse_kineto_rank(text, "hip.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hip.json: traceEvents[0].name: expected a CUDA runtime or driver call"),
              std::string::npos) << e.what();
  }
}

// Kernels of one cudaGraphLaunch are graph kernels (by correlation, or by "graph id"), with no
// CPU op: the op open at the launch wrapped the replay and says nothing about them.
TEST(KinetoGraphImport, GraphKernelsByCorrelationOrGraphId) {
  const std::string text = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "replay", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {"External id": 9}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"correlation": 3, "External id": 9}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"correlation": 3, "stream": 7, "External id": 9}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_b", "pid": 0, "tid": 7, "ts": 30, "dur": 5, "args": {"correlation": 77, "stream": 7, "graph id": 2, "graph node id": 5}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_c", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "args": {"correlation": 78, "stream": 7, "graph id": 0, "External id": 9}}]})";
  RankTrace rt = parse_kineto_rank(text, "g.json");
  ASSERT_EQ(rt.gpu.size(), 3u);
  EXPECT_EQ(rt.graph_launches, 1);
  EXPECT_EQ(rt.gpu[0].graph_launch, 3);
  EXPECT_EQ(rt.gpu[0].cpu_op, -1);
  EXPECT_EQ(rt.gpu[0].launch_ts, 10);
  EXPECT_EQ(rt.gpu[1].graph_launch, 77);
  EXPECT_EQ(rt.gpu[1].graph_node, 5);
  EXPECT_FALSE(rt.gpu[2].in_graph());  // "graph id" 0: a stream launch
  EXPECT_GE(rt.gpu[2].cpu_op, 0);
}
