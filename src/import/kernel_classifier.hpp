#pragma once
// Kernel name -> what it does. Names are what the CUDA driver reports (demangled C++ for
// PyTorch's own kernels, bare symbols for cuBLAS "nvjet" and cuDNN generated kernels), so the
// match is by distinctive substrings, in an order that keeps e.g. FlashAttention (whose
// templates mention cutlass) from being taken for a CUTLASS GEMM. Generic elementwise kernels
// are identified from the CPU op that launched them (classify_cpu_op).
#include <string>

#include "import/kineto_reader.hpp"

namespace eaglesim {

enum class KernelClass {
  gemm,              // cuBLAS / cuBLASLt (nvjet, xmma), CUTLASS, any *gemm* / *gemv*
  gemm_reduce,       // cuBLASLt split-K reduction: the second half of one GEMM
  allreduce,         // NCCL, vLLM/SGLang custom, torch symmetric memory, FlashInfer fusion
  collective_other,  // other NCCL collectives (all-gather, reduce-scatter, send/recv, ...)
  attention,         // FlashAttention, cuDNN SDPA, FMHA, memory-efficient, paged/decode kernels
  norm,              // RMSNorm / LayerNorm
  fused_add_norm,    // residual add + RMSNorm in one kernel (vLLM fused_add_rms_norm)
  residual_add,      // elementwise add
  act,               // SiLU(gate) * up in one kernel
  act_partial,       // the activation alone (SiLU, GELU): the multiply follows as its own kernel
  mul,               // elementwise multiply
  moe_gemm,          // expert GEMMs of a MoE layer (Triton fused_moe, Marlin MoE): measured only
  embedding,         // token embedding lookup (index_select / embedding kernels under aten::embedding)
  copy,              // copy kernels and device memcpys
  memset,
  other,
};

const char* to_string(KernelClass c);

struct KernelMatch {
  KernelClass cls = KernelClass::other;
  std::string family;  // implementation, for the summary: "NCCL", "cuBLAS nvjet", "cuDNN SDPA", ...
};

KernelMatch classify_kernel(const std::string& name, GpuActivityType type);

// For kernels whose names say nothing (at::native elementwise kernels): the ATen op that
// launched them. Returns KernelClass::other when the op is not one of ours.
KernelClass classify_cpu_op(const std::string& op_name);

// A readable short form of a kernel name for summaries: no "void ", no argument list, generic
// elementwise wrappers replaced by the functor they run. At most 80 characters.
std::string short_kernel_name(const std::string& name);

}  // namespace eaglesim
