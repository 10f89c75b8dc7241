#include "cuda/ops/weight_only_gemv.hpp"

#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "grid_dependency.cuh"
#include "weight_only_gemv.cuh"

namespace eaglesim::cuda {

namespace km = eaglesim::kernels::moe;

namespace {

std::mutex g_mu;
std::map<std::pair<int, const void*>, std::size_t> g_smem_opt_in;  // (device, kernel) -> bytes

template <km::WFormat F, int R, bool Pdl>
void launch_kernel(const GroupedGemmPlan& plan, const km::GemvParams& p, cudaStream_t stream) {
  auto* kernel = km::weight_only_gemv_kernel<F, R, Pdl>;
  const std::size_t smem = plan.gemv_smem_bytes;
  if (smem > 48 * 1024) {
    int device = 0;
    EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
    const auto key = std::make_pair(device, reinterpret_cast<const void*>(kernel));
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_smem_opt_in.find(key);
    if (it == g_smem_opt_in.end() || it->second < smem) {
      EAGLESIM_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      g_smem_opt_in[key] = smem;
    }
  }
  cudaLaunchConfig_t cfg{};
  const int n16 = (plan.shape.n + 15) / 16;
  cfg.gridDim = dim3(static_cast<unsigned>(plan.gemv_split),
                     static_cast<unsigned>((n16 + plan.gemv_blocks_per_cta - 1) / plan.gemv_blocks_per_cta));
  cfg.blockDim = dim3(static_cast<unsigned>(32 * plan.gemv_warps));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  int na = 0;
  if (plan.gemv_split > 1) {
    attr[na].id = cudaLaunchAttributeClusterDimension;
    attr[na].val.clusterDim.x = static_cast<unsigned>(plan.gemv_split);
    attr[na].val.clusterDim.y = 1;
    attr[na].val.clusterDim.z = 1;
    ++na;
  }
  if constexpr (Pdl) {
    attr[na++] = kernels::early_start_attribute();
  }
  cfg.attrs = attr;
  cfg.numAttrs = static_cast<unsigned>(na);
  EAGLESIM_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, p));
}

template <km::WFormat F>
void launch_format(const GroupedGemmPlan& plan, const km::GemvParams& p, cudaStream_t stream) {
  const bool two = plan.gemv_row_tiles > 1;
  if (plan.gemv_pdl) {
    if (two) launch_kernel<F, 2, true>(plan, p, stream);
    else launch_kernel<F, 1, true>(plan, p, stream);
  } else {
    if (two) launch_kernel<F, 2, false>(plan, p, stream);
    else launch_kernel<F, 1, false>(plan, p, stream);
  }
}

}  // namespace

void launch_weight_only_gemv(const GroupedGemmPlan& plan, const GroupedGemmArgs& a, cudaStream_t stream) {
  if (!plan.gemv) throw InputError("weight-only GEMV: the plan is not a GEMV plan");
  if (plan.shape.experts != 1 || a.expert_offsets)
    throw InputError("weight-only GEMV: the GEMV kernel runs dense GEMMs (one expert, no expert offsets)");
  if (a.rows > plan.shape.max_rows)
    throw InputError(fmt::format("weight-only GEMV: {} rows, the plan was made for at most {}", a.rows,
                                 plan.shape.max_rows));
  km::GemvParams p;
  p.x = static_cast<const __nv_bfloat16*>(a.x);
  p.m = a.rows;
  p.w = static_cast<const std::uint8_t*>(a.weights);
  p.scales = static_cast<const std::uint8_t*>(a.scales);
  p.y = static_cast<__nv_bfloat16*>(a.y);
  p.n = plan.shape.n;
  p.k = plan.shape.k;
  p.units_per_cta = plan.gemv_units_per_cta;
  p.units_per_task = plan.gemv_units_per_task;
  p.parts = plan.gemv_parts;
  p.blocks_per_cta = plan.gemv_blocks_per_cta;
  switch (plan.shape.format) {
    case GemmWeightFormat::bf16: launch_format<km::WFormat::bf16>(plan, p, stream); break;
    case GemmWeightFormat::fp8_channel: launch_format<km::WFormat::fp8_channel>(plan, p, stream); break;
    case GemmWeightFormat::fp8_block: launch_format<km::WFormat::fp8_block>(plan, p, stream); break;
    case GemmWeightFormat::int4_g32: launch_format<km::WFormat::int4_g32>(plan, p, stream); break;
    case GemmWeightFormat::int4_g128: launch_format<km::WFormat::int4_g128>(plan, p, stream); break;
  }
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace eaglesim::cuda
