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

  // Collectives first: their names are the most specific, and some custom allreduce kernels
  // are templated on cutlass/flashinfer types that would match later rules.
  if (has_any(n, {"nccldevkernel_allreduce", "ncclkernel_allreduce"})) return {KernelClass::allreduce, "NCCL"};
  if (has_any(n, {"nccldevkernel_", "ncclkernel_"})) return {KernelClass::collective_other, "NCCL"};
  if (has_any(n, {"cross_device_reduce_1stage", "cross_device_reduce_2stage"}))
    return {KernelClass::allreduce, "vLLM/SGLang custom allreduce"};
  if (has_any(n, {"one_shot_all_reduce", "two_shot_all_reduce", "multimem_all_reduce", "multimem_one_shot",
                  "multimem_"}))
    return {KernelClass::allreduce, "torch symmetric memory"};
  if (has_any(n, {"allreduce_fusion", "allreducefusion"})) return {KernelClass::allreduce, "FlashInfer allreduce fusion"};
  if (has_any(n, {"allreduce", "all_reduce", "quickreduce"})) return {KernelClass::allreduce, "custom allreduce"};

  if (has_any(n, {"splitkreduce"})) return {KernelClass::gemm_reduce, "cuBLASLt split-K reduce"};

  // Attention before GEMM: FlashAttention/FlashInfer kernels are built from cutlass/cute templates.
  if (has_any(n, {"flash_fwd", "flash::", "fmha", "sdpa", "scaled_dot_product", "efficient_attention", "attention",
                  "paged_attention", "batchdecode", "batchprefill", "withkvcache", "flashmla", "mla_decode",
                  "flash_attn", "flashattn", "_mha_", "mha_fwd", "decode_attention", "unified_attention"}))
    return {KernelClass::attention, n.find("cudnn") != std::string::npos ? "cuDNN SDPA"
                                    : n.find("flash") != std::string::npos ? "FlashAttention"
                                                                           : "attention"};

  if (n.rfind("nvjet", 0) == 0) return {KernelClass::gemm, "cuBLAS nvjet"};
  if (has_any(n, {"xmma_gemm", "sm90_xmma", "sm80_xmma", "sm100_xmma"})) return {KernelClass::gemm, "cuBLAS xmma"};
  if (has_any(n, {"cutlass"})) return {KernelClass::gemm, "CUTLASS"};
  if (has_any(n, {"gemm", "gemv", "cublas"})) return {KernelClass::gemm, "GEMM"};

  if (has_any(n, {"fused_add_rms_norm", "fused_add_rmsnorm", "add_rms_norm"})) return {KernelClass::fused_add_norm, "fused add+RMSNorm"};
  if (has_any(n, {"rms_norm", "rmsnorm", "layer_norm", "layernorm"})) return {KernelClass::norm, "norm"};
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
