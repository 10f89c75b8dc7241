#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/errors.hpp"
#include "import/collective_aligner.hpp"
#include "import/kernel_classifier.hpp"
#include "import/kineto_import.hpp"
#include "trace/trace_stats.hpp"

using namespace eaglesim;

namespace {

const std::string kDir = std::string(EAGLESIM_TEST_DATA) + "/kineto/";

std::vector<std::string> pair(const std::string& variant) {
  return {kDir + "llama8b_tp2_t4_" + variant + "_rank0.json.gz", kDir + "llama8b_tp2_t4_" + variant + "_rank1.json.gz"};
}

KinetoImportOptions layers32() {
  KinetoImportOptions o;
  o.layers_per_step = 32;
  return o;
}

// The real traces take a second to parse: import each once.
const KinetoImport& nccl_import() {
  static const KinetoImport r = import_kineto_with_summary(pair("nccl"), layers32());
  return r;
}
const KinetoImport& one_shot_import() {
  static const KinetoImport r = import_kineto_with_summary(pair("one_shot"), layers32());
  return r;
}

std::string error_of(const std::vector<std::string>& files, const KinetoImportOptions& o = {}) {
  try {
    import_kineto(files, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// Llama-3.1-8B at TP2 with 4 tokens, per step (README of the fixtures).
void expect_llama8b_tp2_step(const Step& step) {
  std::map<std::string, int> gemms;
  int allreduce = 0, attention = 0, norm = 0, add = 0, act = 0;
  double allreduce_us = 0;
  for (const Op& op : step.ops) {
    switch (op.kind) {
      case OpKind::gemm:
        EXPECT_EQ(op.m, 4);
        EXPECT_EQ(op.dtype, DType::bf16);
        ++gemms[op.name + " " + op.shape_string()];
        break;
      case OpKind::allreduce:
        ++allreduce;
        EXPECT_EQ(op.bytes, 32768);
        EXPECT_EQ(op.us_source, UsSource::aligned);
        allreduce_us += *op.us;
        break;
      case OpKind::attention:
        ++attention;
        EXPECT_EQ(op.q_tokens, 4);
        EXPECT_EQ(op.kv_len, 2048);
        EXPECT_EQ(op.heads, 16);
        EXPECT_EQ(op.head_dim, 128);
        break;
      case OpKind::rmsnorm: ++norm; EXPECT_EQ(op.hidden, 4096); EXPECT_EQ(op.tokens, 4); break;
      case OpKind::residual_add: ++add; EXPECT_EQ(op.hidden, 4096); break;
      case OpKind::act: ++act; EXPECT_EQ(op.hidden, 7168); EXPECT_EQ(op.tokens, 4); break;
      default: break;
    }
    ASSERT_TRUE(op.us.has_value()) << op.name;
  }
  EXPECT_EQ(allreduce, 64);
  EXPECT_EQ(attention, 32);
  EXPECT_EQ(norm, 64);
  EXPECT_EQ(add, 64);
  EXPECT_EQ(act, 32);
  EXPECT_EQ(gemms["qkv_proj m=4 n=3072 k=4096 bf16"], 32);
  EXPECT_EQ(gemms["o_proj m=4 n=4096 k=2048 bf16"], 32);
  EXPECT_EQ(gemms["gate_up_proj m=4 n=14336 k=4096 bf16"], 32);
  EXPECT_EQ(gemms["down_proj m=4 n=4096 k=7168 bf16"], 32);
  EXPECT_EQ(gemms.size(), 4u);
  // Aligned: a 32 KiB allreduce over NVLink costs a few µs, not the ms the eager kernels show.
  EXPECT_GT(allreduce_us, 64 * 2.0);
  EXPECT_LT(allreduce_us, 64 * 20.0);
  EXPECT_EQ(compute_stats(step).layers, 32);
}

}  // namespace

TEST(KinetoImport, NcclTraceGivesLlama8bTp2Step) {
  const Trace& t = nccl_import().trace;
  EXPECT_EQ(t.meta.source, "imported");
  EXPECT_EQ(t.meta.tp, 2);
  EXPECT_EQ(t.meta.tokens, 4);
  EXPECT_EQ(*t.meta.kv_len, 2048);
  ASSERT_EQ(t.steps.size(), 1u);
  expect_llama8b_tp2_step(t.steps[0]);
  // Eager and CPU-bound: the wall time must not be claimed as the step time.
  EXPECT_FALSE(t.steps[0].measured_us.has_value());
  EXPECT_NE(t.meta.notes.find("not recorded as measured_us"), std::string::npos);
  // Default: the last complete step.
  EXPECT_EQ(nccl_import().summary.steps_found, 3);
  EXPECT_EQ(nccl_import().summary.steps_imported, std::vector<int>{2});
}

TEST(KinetoImport, NcclTraceLayersSitesAndRoles) {
  const auto& ops = nccl_import().trace.steps[0].ops;
  ASSERT_EQ(ops.size(), 32u * 14u);
  EXPECT_EQ(ops[0].name, "input_norm");
  EXPECT_EQ(ops[0].layer, 0);
  EXPECT_EQ(ops[6].kind, OpKind::allreduce);
  EXPECT_EQ(ops[6].site, "attn_out");
  EXPECT_EQ(ops[12].site, "mlp_out");
  EXPECT_EQ(ops[13].kind, OpKind::residual_add);
  EXPECT_EQ(ops[13].layer, 0);
  EXPECT_EQ(ops.back().layer, 31);
}

TEST(KinetoImport, SplitKGemmIsOneOpAndMemsetFoldsIntoAttention) {
  const auto& s = nccl_import().summary;
  int split_k = 0, reduce = 0, memset = 0;
  for (const auto& row : s.kernels) {
    if (row.kernel.find("splitK_NNT") != std::string::npos) split_k += row.count;
    if (row.kernel == "splitKreduce_kernel") { reduce += row.count; EXPECT_EQ(row.kind, "gemm"); }
    if (row.family == "memset") { memset += row.count; EXPECT_EQ(row.kind, "attention"); }
  }
  EXPECT_EQ(split_k, 64);
  EXPECT_EQ(reduce, 64);
  EXPECT_EQ(memset, 32);
  EXPECT_EQ(s.ops_by_kind.at("gemm"), 128);  // 4 per layer, not 6
}

TEST(KinetoImport, StepUsIsKernelTimeWithoutLaunchGaps) {
  const auto& s = nccl_import().summary;
  // ~4470 µs of compute kernels plus ~410 µs of aligned allreduces; the eager wall time is ~15 ms.
  EXPECT_GT(s.op_us_per_step, 4000.0);
  EXPECT_LT(s.op_us_per_step, 5310.0);
  EXPECT_LT(s.collective_us_per_step, 1000.0);
}

TEST(KinetoImport, OneShotTraceFoldsBufferCopyIntoAllreduce) {
  const Trace& t = one_shot_import().trace;
  expect_llama8b_tp2_step(t.steps[0]);
  for (const auto& row : one_shot_import().summary.kernels)
    if (row.family == "memcpy") {
      EXPECT_EQ(row.kind, "allreduce");
      EXPECT_EQ(row.count, 64);
    }
  // The only untyped ops left are the GQA repeat_interleave copies (2 per layer).
  EXPECT_EQ(one_shot_import().summary.ops_by_kind.at("other"), 64);
}

TEST(KinetoImport, AllStepsWritesEachCompleteStepAsVerify) {
  KinetoImportOptions o = layers32();
  o.all_steps = true;
  Trace t = import_kineto(pair("nccl"), o);
  ASSERT_EQ(t.steps.size(), 3u);
  for (const auto& s : t.steps) {
    EXPECT_EQ(s.name, "verify");
    EXPECT_EQ(compute_stats(s).allreduce_bytes.at(32768), 64);
  }
}

TEST(KinetoImport, OneRankFileMarksCollectivesAsUpperBound) {
  KinetoImportOptions o = layers32();
  o.step = 1;
  KinetoImport r = import_kineto_with_summary({pair("nccl")[0]}, o);
  EXPECT_EQ(r.trace.meta.tp, 2);  // distributedInfo.world_size, not the file count
  double raw = 0;
  for (const auto& op : r.trace.steps[0].ops)
    if (op.kind == OpKind::allreduce) {
      EXPECT_EQ(op.us_source, UsSource::measured);
      raw += *op.us;
    }
  EXPECT_GT(raw, nccl_import().summary.collective_us_per_step);
  EXPECT_NE(r.trace.meta.notes.find("UPPER BOUND"), std::string::npos);
  EXPECT_FALSE(r.trace.steps[0].measured_us.has_value());
}

TEST(KinetoImport, IdenticalLayersWithoutStepMarksNeedLayers) {
  std::string e = error_of(pair("nccl"));
  EXPECT_NE(e.find("llama8b_tp2_t4_nccl_rank0.json.gz"), std::string::npos) << e;
  EXPECT_NE(e.find("layers"), std::string::npos) << e;
}

TEST(KinetoImport, ProfilerStepsAlignmentAndVllmKernels) {
  KinetoImport r = import_kineto_with_summary({kDir + "synthetic/vllm_tp2_rank1.json", kDir + "synthetic/vllm_tp2_rank0.json"}, {});
  // Step 2 is cut off (no lm_head), so the default is step 1.
  EXPECT_EQ(r.summary.steps_found, 3);
  EXPECT_EQ(r.summary.complete_steps, 2);
  EXPECT_EQ(r.summary.steps_imported, std::vector<int>{1});
  EXPECT_EQ(r.summary.files[0], kDir + "synthetic/vllm_tp2_rank0.json");  // ordered by rank
  const auto& ops = r.trace.steps[0].ops;
  std::map<OpKind, int> kinds;
  for (const auto& op : ops) {
    ++kinds[op.kind];
    if (op.kind == OpKind::allreduce) {
      EXPECT_EQ(op.bytes, 4 * 256 * 2);
      // Rank 0 waited 20 µs for rank 1 (whose clock is 1000 µs ahead); the collective costs 5.
      EXPECT_NEAR(*op.us, 5.0, 1e-6);
    }
    if (op.kind == OpKind::attention) {  // FlashAttention [B, T, H, D] layout
      EXPECT_EQ(op.q_tokens, 4);
      EXPECT_EQ(op.heads, 4);
      EXPECT_EQ(op.kv_heads, 2);
      EXPECT_EQ(op.kv_len, 128);
      EXPECT_EQ(op.head_dim, 64);
      EXPECT_DOUBLE_EQ(*op.us, 10.0);  // split-KV kernel + combine kernel
    }
  }
  EXPECT_EQ(kinds[OpKind::allreduce], 4);
  EXPECT_EQ(kinds[OpKind::gemm], 8);
  EXPECT_EQ(kinds[OpKind::lm_head], 1);
  EXPECT_EQ(kinds[OpKind::embedding], 1);
  EXPECT_EQ(kinds[OpKind::act], 2);
  EXPECT_EQ(kinds[OpKind::rmsnorm], 5);
  EXPECT_EQ(kinds[OpKind::other], 1);  // the unknown sampling kernel
  EXPECT_EQ(ops.front().kind, OpKind::embedding);
  EXPECT_EQ(ops.front().layer, -1);
  // Rank 0 idled 20 µs at each allreduce waiting for rank 1: not GPU-bound, no step time.
  EXPECT_FALSE(r.trace.steps[0].measured_us.has_value());
}

TEST(KinetoImport, GpuBoundStepRecordsItsSpan) {
  Trace t = import_kineto({kDir + "synthetic/graph_tp2_rank0.json", kDir + "synthetic/graph_tp2_rank1.json"}, {});
  ASSERT_TRUE(t.steps[0].measured_us.has_value());
  double busy = 0;
  for (const auto& op : t.steps[0].ops) busy += *op.us;
  EXPECT_GE(*t.steps[0].measured_us, busy);
  EXPECT_LT(*t.steps[0].measured_us, busy * 1.1);
}

TEST(KinetoImport, IncompleteStepIsRefused) {
  KinetoImportOptions o;
  o.step = 2;
  std::string e = error_of({kDir + "synthetic/vllm_tp2_rank0.json", kDir + "synthetic/vllm_tp2_rank1.json"}, o);
  EXPECT_NE(e.find("step 2: not a complete step"), std::string::npos) << e;
}

TEST(KinetoImport, WithoutShapesFallsBackToOtherWithWarning) {
  KinetoImport r = import_kineto_with_summary({kDir + "synthetic/vllm_tp2_noshapes_rank0.json"}, {});
  int typed_gemm = 0, untyped = 0;
  for (const auto& op : r.trace.steps[0].ops) {
    typed_gemm += op.kind == OpKind::gemm;
    if (op.kind == OpKind::other) {
      ++untyped;
      EXPECT_TRUE(op.us.has_value());
    }
  }
  EXPECT_EQ(typed_gemm, 0);
  EXPECT_GT(untyped, 10);
  bool warned = false;
  for (const auto& w : r.summary.warnings) warned = warned || w.find("record_shapes") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(KinetoImport, BadInputsGiveOneClearError) {
  EXPECT_NE(error_of({kDir + "bad/not_json.json"}).find("bad/not_json.json: truncated JSON"), std::string::npos)
      << error_of({kDir + "bad/not_json.json"});
  EXPECT_NE(error_of({kDir + "bad/not_profiler.json"}).find("expected a PyTorch profiler trace"), std::string::npos);
  EXPECT_NE(error_of({kDir + "bad/no_kernels.json"}).find("no GPU kernels"), std::string::npos);
  EXPECT_NE(error_of({kDir + "bad/bad_field.json"}).find("traceEvents[0].ts: expected a number"), std::string::npos)
      << error_of({kDir + "bad/bad_field.json"});
  std::string e = error_of({kDir + "synthetic/vllm_tp2_rank0.json", kDir + "bad/mismatch_rank1.json"});
  EXPECT_NE(e.find("bad/mismatch_rank1.json: 11 collective kernels, but"), std::string::npos) << e;
  EXPECT_NE(e.find("not the ranks of one run"), std::string::npos) << e;
  e = error_of({kDir + "synthetic/vllm_tp2_rank0.json", kDir + "synthetic/vllm_tp2_noshapes_rank0.json"});
  EXPECT_NE(e.find("are both rank 0"), std::string::npos) << e;
  EXPECT_NE(error_of({kDir + "missing.json"}).find("missing.json"), std::string::npos);
}

TEST(KernelClassifier, RecognisesTheImplementations) {
  auto cls = [](const std::string& n) { return classify_kernel(n, GpuActivityType::kernel).cls; };
  EXPECT_EQ(cls("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), KernelClass::allreduce);
  EXPECT_EQ(cls("ncclDevKernel_AllGather_RING_LL(x)"), KernelClass::collective_other);
  EXPECT_EQ(cls("void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(int)"), KernelClass::allreduce);
  EXPECT_EQ(cls("void (anonymous namespace)::two_shot_all_reduce_kernel<c10::BFloat16, 16, 4>(int)"), KernelClass::allreduce);
  EXPECT_EQ(cls("void c10d::symmetric_memory::multimem_all_reduce_kernel<16>(int)"), KernelClass::allreduce);
  EXPECT_EQ(cls("void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<T>(int)"), KernelClass::allreduce);
  EXPECT_EQ(cls("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, cutlass::bfloat16_t> >(Flash_fwd_params)"), KernelClass::attention);
  EXPECT_EQ(cls("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)"), KernelClass::attention);
  EXPECT_EQ(cls("void flashinfer::BatchDecodeWithPagedKVCacheKernel<T>(int)"), KernelClass::attention);
  EXPECT_EQ(cls("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(int)"), KernelClass::gemm);
  EXPECT_EQ(cls("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), KernelClass::gemm);
  EXPECT_EQ(cls("void cublasLt::splitKreduce_kernel<32, 16, int, float>(int)"), KernelClass::gemm_reduce);
  EXPECT_EQ(cls("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(int)"), KernelClass::act);
  EXPECT_EQ(cls("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(int)"), KernelClass::fused_add_norm);
  EXPECT_EQ(cls("totally_unknown_kernel"), KernelClass::other);
  EXPECT_EQ(classify_kernel("Memcpy DtoD (Device -> Device)", GpuActivityType::memcpy).cls, KernelClass::copy);
  EXPECT_EQ(classify_cpu_op("aten::linear"), KernelClass::gemm);
  EXPECT_EQ(short_kernel_name("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, true>(int)"),
            "vectorized_layer_norm_kernel");
}

TEST(CollectiveAligner, LatestStartToEarliestEndAfterClockOffset) {
  // Rank 1's clock reads 500 µs more; true arrivals 0 and 30, both leave at 38.
  std::vector<std::vector<CollectiveTiming>> t{{{0, 38}, {100, 108}, {200, 260}},
                                               {{530, 538}, {600, 608}, {750, 760}}};
  CollectiveAlignment a = align_collectives(t);
  EXPECT_NEAR(a.clock_offset_us[1], 500.0, 1e-9);
  EXPECT_NEAR(a.cost_us[0], 8.0, 1e-9);
  EXPECT_NEAR(a.cost_us[1], 8.0, 1e-9);
  EXPECT_NEAR(a.cost_us[2], 10.0, 1e-9);
  EXPECT_EQ(a.clamped, 0);
}
