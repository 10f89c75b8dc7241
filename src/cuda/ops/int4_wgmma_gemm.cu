// The dense int4 wgmma GEMM's instances and launch (kernels/int4_wgmma_gemm.cuh), built for sm_90a.
#include "cuda/ops/int4_wgmma_gemm.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "int4_wgmma_gemm.cuh"

namespace eaglesim::cuda {

namespace wg = eaglesim::kernels::int4wg;

namespace {

// fn(the plan's kernel instance).
template <typename Fn>
void dispatch(const GroupedGemmPlan& plan, Fn&& fn) {
  wg::with_layout(plan.wgmma_rows, plan.shape.format == GemmWeightFormat::int4_g32 ? 32 : 128, [&](auto layout) {
    using L = decltype(layout);
    fn(wg::int4_wgmma_gemm_kernel<L::kRows, L::kGroup>);
  });
}

void check_device() {
  int device = 0, major = 0, minor = 0;
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
  EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major != 9 || minor != 0)
    throw InputError(fmt::format("int4 wgmma GEMM: needs compute capability 9.0 (sm_90a code), this GPU is {}.{}; "
                                 "plan with GroupedGemmShape::wgmma = 0 on it",
                                 major, minor));
}

}  // namespace

void prepare_int4_wgmma_gemm(const GroupedGemmPlan& plan) {
  check_device();
  dispatch(plan, [&](auto kernel) {
    EAGLESIM_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(plan.smem_bytes)));
  });
}

void launch_int4_wgmma_gemm(const GroupedGemmPlan& plan, const GroupedGemmArgs& args, void* workspace,
                            cudaStream_t stream) {
  if (!plan.wgmma) throw InputError("int4 wgmma GEMM: the plan is not a wgmma plan");
  if (args.rows > plan.shape.max_rows)
    throw InputError(fmt::format("int4 wgmma GEMM: {} rows, the plan holds {}", args.rows, plan.shape.max_rows));
  if (plan.wgmma_splits > 1 && !workspace) throw InputError("int4 wgmma GEMM: a split plan needs its workspace");
  wg::Params p;
  p.x = static_cast<const __nv_bfloat16*>(args.x);
  p.w = static_cast<const std::uint8_t*>(args.weights);
  p.scales = static_cast<const std::uint8_t*>(args.scales);
  p.y = static_cast<__nv_bfloat16*>(args.y);
  auto* ws = static_cast<unsigned char*>(workspace);
  p.counters = reinterpret_cast<int*>(ws);
  p.partials = ws ? reinterpret_cast<float*>(ws + plan.counter_bytes) : nullptr;
  p.m = args.rows;
  p.n = plan.shape.n;
  p.k = plan.shape.k;
  p.splits = plan.wgmma_splits;
  // The grid is the plan's: with fewer rows than planned, the tiles past them compute zeros and
  // write nothing (a tile's splits still meet, so the grid must not change).
  p.row_tiles = plan.wgmma_row_tiles;
  dispatch(plan, [&](auto kernel) {
    kernel<<<plan.grid, wg::kThreads, plan.smem_bytes, stream>>>(p);
  });
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace eaglesim::cuda
