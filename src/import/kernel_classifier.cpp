#include "import/kernel_classifier.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace eaglesim {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool has_any(const std::string& haystack, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (haystack.find(n) != std::string::npos) return true;
  return false;
}

}  // namespace

const char* to_string(KernelClass c) {
  switch (c) {
    case KernelClass::gemm: return "gemm";
    case KernelClass::gemm_reduce: return "gemm split-K reduce";
    case KernelClass::allreduce: return "allreduce";
    case KernelClass::collective_other: return "collective";
    case KernelClass::attention: return "attention";
    case KernelClass::norm: return "norm";
    case KernelClass::fused_add_norm: return "fused add+norm";
    case KernelClass::residual_add: return "add";
    case KernelClass::act: return "act";
    case KernelClass::act_partial: return "activation";
    case KernelClass::mul: return "mul";
    case KernelClass::embedding: return "embedding";
    case KernelClass::moe_gemm: return "moe gemm";
    case KernelClass::copy: return "copy";
    case KernelClass::memset: return "memset";
    case KernelClass::other: return "other";
  }
  return "other";
}

KernelMatch classify_kernel(const std::string& name, GpuActivityType type) {
  if (type == GpuActivityType::memcpy) return {KernelClass::copy, "memcpy"};
  if (type == GpuActivityType::memset) return {KernelClass::memset, "memset"};
  const std::string n = lower(name);

  // Kernel names of the serving engines and the libraries they call, as declared in their
  // public source (docs/import-kineto.md lists the files). Collectives first: their names are
  // the most specific, and some custom allreduce kernels are templated on cutlass/flashinfer
  // types that would match later rules.
  // NCCL: ncclDevKernel_AllReduce_Sum_bf16_RING_LL (src/device/generate.py generates them).
  if (has_any(n, {"nccldevkernel_allreduce", "ncclkernel_allreduce"})) return {KernelClass::allreduce, "NCCL"};
  if (has_any(n, {"nccldevkernel_", "ncclkernel_"})) return {KernelClass::collective_other, "NCCL"};
  // vllm-project/vllm csrc/custom_all_reduce.cuh and sgl-project/sglang
  // sgl-kernel/csrc/allreduce/custom_all_reduce.cuh: one kernel template per stage count.
  if (n.find("cross_device_reduce_1stage") != std::string::npos)
    return {KernelClass::allreduce, "vLLM/SGLang custom allreduce 1-stage"};
  if (n.find("cross_device_reduce_2stage") != std::string::npos)
    return {KernelClass::allreduce, "vLLM/SGLang custom allreduce 2-stage"};
  // pytorch/pytorch torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu.
  if (n.find("one_shot_all_reduce") != std::string::npos || n.find("multimem_one_shot") != std::string::npos)
    return {KernelClass::allreduce, "torch symmetric memory one-shot"};
  if (n.find("two_shot_all_reduce") != std::string::npos || n.find("multimem_all_reduce") != std::string::npos)
    return {KernelClass::allreduce, "torch symmetric memory two-shot"};
  if (n.find("multimem_") != std::string::npos) return {KernelClass::allreduce, "torch symmetric memory"};
  // flashinfer-ai/flashinfer include/flashinfer/comm/trtllm_allreduce_fusion.cuh and NVIDIA/TensorRT-LLM
  // cpp/tensorrt_llm/kernels/communicationKernels/allReduceFusionKernels.cu:
  // allreduce_fusion_kernel_oneshot_lamport / allreduce_fusion_kernel_twoshot_sync, the
  // allreduce with the residual add and RMSNorm of the next block inside the same kernel.
  if (has_any(n, {"allreduce_fusion_kernel_oneshot", "allreduce_fusion_kernel_twoshot", "allreduce_fusion", "allreducefusion"}))
    return {KernelClass::allreduce, n.find("oneshot") != std::string::npos   ? "FlashInfer/TRT-LLM allreduce fusion one-shot"
                                    : n.find("twoshot") != std::string::npos ? "FlashInfer/TRT-LLM allreduce fusion two-shot"
                                                                             : "FlashInfer/TRT-LLM allreduce fusion"};
  // NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/customAllReduceKernels.cu (oneShotAllReduceKernel, twoShotAllReduceKernel).
  if (has_any(n, {"oneshotallreduce", "twoshotallreduce", "lamport"}))
    return {KernelClass::allreduce, n.find("twoshot") != std::string::npos ? "TRT-LLM custom allreduce two-shot"
                                                                          : "TRT-LLM custom allreduce one-shot"};
  if (has_any(n, {"allreduce", "all_reduce", "quickreduce"})) return {KernelClass::allreduce, "custom allreduce"};

  if (has_any(n, {"splitkreduce"})) return {KernelClass::gemm_reduce, "cuBLASLt split-K reduce"};

  // Mixture-of-experts GEMMs: Triton fused_moe_kernel (vllm model_executor/layers/fused_moe/fused_moe.py,
  // sglang srt/layers/moe/fused_moe_triton/), Marlin MoE (vllm csrc/moe/marlin_moe_wna16/).
  if (has_any(n, {"fused_moe_kernel", "fused_moe"})) return {KernelClass::moe_gemm, "Triton fused_moe"};
  if (has_any(n, {"marlin_moe", "moe_wna16"})) return {KernelClass::moe_gemm, "Marlin MoE"};

  // Attention before GEMM: FlashAttention/FlashInfer kernels are built from cutlass/cute templates.
  // FlashInfer include/flashinfer/attention/{decode,prefill}.cuh: BatchDecodeWithPagedKVCacheKernel,
  // BatchPrefillWithPagedKVCacheKernel, BatchPrefillWithRaggedKVCacheKernel; cascade.cuh merges
  // the partial states of a split KV (MergeStatesKernel, VariableLengthMergeStatesKernel).
  if (has_any(n, {"batchdecodewithpagedkvcache", "batchprefillwith", "singleprefillwith", "singledecodewith",
                  "mergestates", "prefillwithkvcachekernel"}))
    return {KernelClass::attention, "FlashInfer"};
  // Dao-AILab/flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h (flash_fwd_kernel,
  // flash_fwd_splitkv_kernel, flash_fwd_splitkv_combine_kernel; vLLM's vllm-flash-attn and
  // PyTorch's pytorch_flash:: copy keep the names).
  if (n.find("pytorch_flash::") != std::string::npos) return {KernelClass::attention, "PyTorch SDPA flash"};
  if (has_any(n, {"fmha_cutlass", "efficient_attention", "attentionkernel"}))
    return {KernelClass::attention, "PyTorch SDPA memory-efficient"};
  if (n.find("sdpa") != std::string::npos && n.find("cudnn") != std::string::npos) return {KernelClass::attention, "cuDNN SDPA"};
  if (has_any(n, {"flash_fwd", "flash::", "flash_attn", "flashattn", "flashmla", "mla_decode"}))
    return {KernelClass::attention, "FlashAttention"};
  // vllm csrc/attention/paged_attention_v{1,2}.cu; sglang srt/layers/attention/triton_ops/decode_attention.py.
  if (has_any(n, {"paged_attention"})) return {KernelClass::attention, "vLLM paged attention"};
  if (has_any(n, {"_fwd_grouped_kernel_stage", "_fwd_kernel_stage", "decode_attention"}))
    return {KernelClass::attention, "Triton attention"};
  if (has_any(n, {"fmha", "sdpa", "scaled_dot_product", "attention", "withkvcache", "_mha_", "mha_fwd",
                  "unified_attention"}))
    return {KernelClass::attention, "attention"};

  // deepseek-ai/DeepGEMM deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh (sm90_fp8_gemm_1d2d_impl;
  // older releases: fp8_gemm_kernel in fp8_gemm.cuh).
  if (has_any(n, {"deep_gemm", "fp8_gemm_1d", "fp8_gemm_kernel", "bf16_gemm_impl"})) return {KernelClass::gemm, "DeepGEMM"};
  // vllm csrc/quantization/gptq_marlin/marlin.cu (marlin::Marlin<...>).
  if (n.find("marlin") != std::string::npos) return {KernelClass::gemm, "Marlin"};
  if (n.rfind("nvjet", 0) == 0) return {KernelClass::gemm, "cuBLAS nvjet"};
  if (has_any(n, {"xmma_gemm", "sm90_xmma", "sm80_xmma", "sm100_xmma"})) return {KernelClass::gemm, "cuBLAS xmma"};
  if (has_any(n, {"cutlass"})) return {KernelClass::gemm, "CUTLASS"};
  if (has_any(n, {"gemm", "gemv", "cublas"})) return {KernelClass::gemm, "GEMM"};

  // vllm csrc/layernorm_kernels.cu (rms_norm_kernel, fused_add_rms_norm_kernel); FlashInfer
  // include/flashinfer/norm.cuh (RMSNormKernel, FusedAddRMSNormKernel), which sgl-kernel calls.
  if (has_any(n, {"fused_add_rms_norm", "fused_add_rmsnorm", "add_rms_norm", "fusedaddrmsnorm"}))
    return {KernelClass::fused_add_norm, "fused add+RMSNorm"};
  if (has_any(n, {"rms_norm", "rmsnorm", "layer_norm", "layernorm"})) return {KernelClass::norm, "norm"};
  // vllm csrc/activation_kernels.cu and FlashInfer include/flashinfer/activation.cuh (act_and_mul_kernel).
  if (has_any(n, {"act_and_mul", "silu_and_mul", "gelu_and_mul", "swiglu", "silu_mul"})) return {KernelClass::act, "fused act·mul"};
  if (has_any(n, {"silu_kernel", "gelu_kernel", "silu", "gelu"})) return {KernelClass::act_partial, "activation"};
  if (has_any(n, {"cudafunctor_add", "addfunctor", "add_kernel"})) return {KernelClass::residual_add, "elementwise add"};
  if (has_any(n, {"mulfunctor", "mul_kernel"})) return {KernelClass::mul, "elementwise mul"};
  if (has_any(n, {"copy_kernel", "direct_copy", "memcpy", "copy_device_to_device"})) return {KernelClass::copy, "copy"};
  return {KernelClass::other, ""};
}

KernelClass classify_cpu_op(const std::string& op) {
  if (op == "aten::mm" || op == "aten::addmm" || op == "aten::matmul" || op == "aten::linear" || op == "aten::bmm" ||
      op == "aten::baddbmm")
    return KernelClass::gemm;
  if (op.find("attention") != std::string::npos) return KernelClass::attention;
  if (op.find("fused_add_rms_norm") != std::string::npos) return KernelClass::fused_add_norm;
  if (op.find("rms_norm") != std::string::npos || op.find("layer_norm") != std::string::npos) return KernelClass::norm;
  if (op.find("silu_and_mul") != std::string::npos || op.find("act_and_mul") != std::string::npos) return KernelClass::act;
  if (op == "aten::silu" || op == "aten::silu_" || op == "aten::gelu" || op == "aten::gelu_") return KernelClass::act_partial;
  if (op == "aten::add" || op == "aten::add_") return KernelClass::residual_add;
  if (op == "aten::mul" || op == "aten::mul_") return KernelClass::mul;
  if (op == "aten::embedding") return KernelClass::embedding;
  if (op == "aten::copy_") return KernelClass::copy;
  return KernelClass::other;
}

std::string short_kernel_name(const std::string& name) {
  std::string s = name;
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  for (std::size_t p; (p = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(p, 23);
  // Cut the argument list: the first '(' outside template brackets.
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>') --depth;
    else if (s[i] == '(' && depth == 0) { s = s.substr(0, i); break; }
  }
  std::string base = s.substr(0, s.find('<'));
  if (auto p = base.rfind("::"); p != std::string::npos) base = base.substr(p + 2);
  // Generic wrappers: name the functor they run instead.
  if (base == "elementwise_kernel" || base == "vectorized_elementwise_kernel" || base == "unrolled_elementwise_kernel" ||
      base == "reduce_kernel") {
    static const char* functors[] = {"direct_copy_kernel_cuda", "silu_kernel", "gelu_kernel", "MulFunctor",
                                     "CUDAFunctor_add", "AddFunctor", "DivFunctor", "copy_kernel", "fill_kernel",
                                     "neg_kernel", "exp_kernel", "where_kernel", "index_kernel", "sum_functor"};
    for (const char* f : functors)
      if (s.find(f) != std::string::npos) return base + "(" + f + ")";
  }
  if (base.empty()) base = s;
  if (base.size() > 80) base = base.substr(0, 77) + "...";
  return base;
}

}  // namespace eaglesim
