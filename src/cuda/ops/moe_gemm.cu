// Launchers of the grouped MoE GEMM / dense weight-only GEMM (kernels/moe_grouped_gemm.cuh) and
// of its reference (kernels/moe_gemm_reference.cuh). The plan (moe_gemm_plan.cpp) picks the
// instantiation; this file owns the template instances and the launch checks.
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/ops/int4_wgmma_gemm.hpp"
#include "cuda/ops/moe_gemm_plan.hpp"
#include "cuda/ops/weight_only_gemv.hpp"
#include "grid_dependency.cuh"
#include "moe_gemm_reference.cuh"
#include "moe_grouped_gemm.cuh"
#include "weight_only_gemm.cuh"

namespace eaglesim::cuda {

namespace km = eaglesim::kernels::moe;

namespace {

template <km::WFormat F, int R, int V>
struct Inst {
  static void prepare(std::size_t smem) {
    EAGLESIM_CUDA_CHECK(cudaFuncSetAttribute(km::moe_grouped_gemm_kernel<F, R, V>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    if constexpr (km::kVariants[V].ctas_per_sm >= 3)
      // three CTAs need the largest shared-memory carveout; ask for it rather than leave it to the driver
      EAGLESIM_CUDA_CHECK(cudaFuncSetAttribute(km::moe_grouped_gemm_kernel<F, R, V>,
                                               cudaFuncAttributePreferredSharedMemoryCarveout,
                                               cudaSharedmemCarveoutMaxShared));
  }
  static int resident(std::size_t smem) {
    int blocks = 0;
    EAGLESIM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, km::moe_grouped_gemm_kernel<F, R, V>,
                                                                      km::kThreads, smem));
    return blocks;
  }
  static void launch(int grid, std::size_t smem, const km::GemmParams& p, cudaStream_t stream) {
    if constexpr (km::kVariants[V].pdl) {
      // programmatic dependent launch: this grid may start while the previous kernel in the
      // stream finishes (the kernel waits for it before touching anything it may have written)
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(grid);
      cfg.blockDim = dim3(km::kThreads);
      cfg.dynamicSmemBytes = smem;
      cfg.stream = stream;
      cudaLaunchAttribute attr[1] = {kernels::early_start_attribute()};
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      EAGLESIM_CUDA_CHECK(cudaLaunchKernelEx(&cfg, km::moe_grouped_gemm_kernel<F, R, V>, p));
    } else {
      km::moe_grouped_gemm_kernel<F, R, V><<<grid, km::kThreads, smem, stream>>>(p);
    }
  }
};

// Instantiates only the variants that exist for (F, R) (km::variant_applies).
template <km::WFormat F, int R, int V, typename Fn>
void try_variant(int v, Fn&& fn, bool& found) {
  if constexpr (km::variant_applies(F, R, V)) {
    if (v == V) {
      fn(Inst<F, R, V>{});
      found = true;
    }
  }
}

// The plan's variant at R row tiles (km::variant_applies says which exist).
template <km::WFormat F, int R, typename Fn, int... Vs>
void dispatch_variant(int v, Fn&& fn, std::integer_sequence<int, Vs...>) {
  bool found = false;
  (try_variant<F, R, Vs>(v, fn, found), ...);
  if (!found) throw InputError(fmt::format("grouped GEMM: no kernel variant {} for {} rows", v, 8 * R));
}

template <km::WFormat F, typename Fn>
void dispatch_rows(int row_tile, int v, Fn&& fn) {
  constexpr auto vs = std::make_integer_sequence<int, km::kVariantCount>{};
  switch (row_tile) {
    case 8: dispatch_variant<F, 1>(v, fn, vs); break;
    case 16: dispatch_variant<F, 2>(v, fn, vs); break;
    case 32: dispatch_variant<F, 4>(v, fn, vs); break;
    case 64: dispatch_variant<F, 8>(v, fn, vs); break;
    default: throw InputError(fmt::format("grouped GEMM: no kernel for row tile {}", row_tile));
  }
}

template <typename Fn>
void dispatch(const GroupedGemmPlan& plan, Fn&& fn) {
  const int v = plan.kernel_variant;
  switch (plan.shape.format) {
    case GemmWeightFormat::bf16: dispatch_rows<km::WFormat::bf16>(plan.row_tile, v, fn); break;
    case GemmWeightFormat::fp8_channel: dispatch_rows<km::WFormat::fp8_channel>(plan.row_tile, v, fn); break;
    case GemmWeightFormat::fp8_block: dispatch_rows<km::WFormat::fp8_block>(plan.row_tile, v, fn); break;
    case GemmWeightFormat::int4_g32: dispatch_rows<km::WFormat::int4_g32>(plan.row_tile, v, fn); break;
    case GemmWeightFormat::int4_g128: dispatch_rows<km::WFormat::int4_g128>(plan.row_tile, v, fn); break;
  }
}

// The shared-memory opt-in of each (device, kernel instance; the wgmma kernel's instances keyed
// apart from the stream-K kernel's): the largest any plan needed so far.
// The attribute is per device (threads may drive several), and it only ever grows, so a plan
// with fewer experts (smaller tables) never lowers it under a plan with more.
std::mutex g_prepared_mu;
std::map<std::pair<int, int>, std::size_t> g_prepared;

int instance_key(const GroupedGemmPlan& plan) {
  return ((plan.wgmma ? 10 : 0) + static_cast<int>(plan.shape.format)) * 100000 + plan.row_tile * 100 +
         plan.kernel_variant;
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

km::GemmParams params_of(const GroupedGemmPlan& plan, const GroupedGemmArgs& a, void* workspace) {
  km::GemmParams p;
  p.x = static_cast<const __nv_bfloat16*>(a.x);
  p.expert_offsets = a.expert_offsets;
  p.dense_rows = a.rows;
  p.w = static_cast<const std::uint8_t*>(a.weights);
  p.scales = static_cast<const std::uint8_t*>(a.scales);
  p.y = static_cast<__nv_bfloat16*>(a.y);
  p.experts = plan.shape.experts;
  p.n = plan.shape.n;
  p.k = plan.shape.k;
  p.w_expert_bytes = plan.weight_bytes_per_expert;
  p.s_expert_bytes = plan.scale_bytes_per_expert;
  auto* ws = static_cast<unsigned char*>(workspace);
  p.counters = reinterpret_cast<int*>(ws);
  p.partials = ws ? reinterpret_cast<float*>(ws + plan.counter_bytes) : nullptr;
  p.max_items = plan.max_items;
  return p;
}

void check_args(const GroupedGemmPlan& plan, const GroupedGemmArgs& a) {
  if (!a.x || !a.weights || !a.y) throw InputError("grouped GEMM: x, weights and y are required");
  if (plan.shape.format != GemmWeightFormat::bf16 && !a.scales)
    throw InputError(fmt::format("grouped GEMM: {} weights need scales", to_string(plan.shape.format)));
  if (!aligned16(a.x) || !aligned16(a.weights) || (a.scales && !aligned16(a.scales)))
    throw InputError("grouped GEMM: x, weights and scales must be 16-byte aligned");
  if (a.rows < 0 || a.rows > plan.shape.max_rows)
    throw InputError(fmt::format("grouped GEMM: {} rows, the plan was made for at most {}", a.rows,
                                 plan.shape.max_rows));
  if (!a.expert_offsets && plan.shape.experts != 1)
    throw InputError("grouped GEMM: expert_offsets are required with more than one expert");
}

}  // namespace

void prepare_grouped_gemm(const GroupedGemmPlan& plan) {
  int device = 0;
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
  const auto key = std::make_pair(device, instance_key(plan));
  std::lock_guard<std::mutex> lock(g_prepared_mu);
  const auto it = g_prepared.find(key);
  if (it != g_prepared.end() && it->second >= plan.smem_bytes) return;
  if (plan.wgmma)
    prepare_int4_wgmma_gemm(plan);
  else
    dispatch(plan, [&](auto inst) { decltype(inst)::prepare(plan.smem_bytes); });
  g_prepared[key] = plan.smem_bytes;
}

int grouped_gemm_resident_ctas(const GroupedGemmPlan& plan) {
  prepare_grouped_gemm(plan);
  if (plan.wgmma) return 1;  // its shared memory leaves room for one
  int blocks = 0;
  dispatch(plan, [&](auto inst) { blocks = decltype(inst)::resident(plan.smem_bytes); });
  return blocks;
}

void launch_grouped_gemm(const GroupedGemmPlan& plan, const GroupedGemmArgs& args, void* workspace,
                         cudaStream_t stream) {
  check_args(plan, args);
  if (!workspace) throw InputError("grouped GEMM: a workspace of plan.workspace_bytes is required");
  if (args.rows == 0) return;
  if (plan.gemv) {
    launch_weight_only_gemv(plan, args, stream);
    return;
  }
  prepare_grouped_gemm(plan);
  if (plan.wgmma) {
    launch_int4_wgmma_gemm(plan, args, workspace, stream);
    return;
  }
  const km::GemmParams p = params_of(plan, args, workspace);
  dispatch(plan, [&](auto inst) { decltype(inst)::launch(plan.grid, plan.smem_bytes, p, stream); });
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void launch_grouped_gemm_reference(const GroupedGemmPlan& plan, const GroupedGemmArgs& args, cudaStream_t stream) {
  check_args(plan, args);
  if (args.rows == 0) return;
  if (args.rows > 65535) throw InputError("grouped GEMM reference: at most 65535 rows (one grid row each)");
  const km::GemmParams p = params_of(plan, args, nullptr);
  constexpr int kBlock = 128;
  const dim3 grid((plan.shape.n + kBlock - 1) / kBlock, args.rows);
  switch (plan.shape.format) {
    case GemmWeightFormat::bf16: km::moe_gemm_reference_kernel<km::WFormat::bf16><<<grid, kBlock, 0, stream>>>(p); break;
    case GemmWeightFormat::fp8_channel:
      km::moe_gemm_reference_kernel<km::WFormat::fp8_channel><<<grid, kBlock, 0, stream>>>(p);
      break;
    case GemmWeightFormat::fp8_block:
      km::moe_gemm_reference_kernel<km::WFormat::fp8_block><<<grid, kBlock, 0, stream>>>(p);
      break;
    case GemmWeightFormat::int4_g32:
      km::moe_gemm_reference_kernel<km::WFormat::int4_g32><<<grid, kBlock, 0, stream>>>(p);
      break;
    case GemmWeightFormat::int4_g128:
      km::moe_gemm_reference_kernel<km::WFormat::int4_g128><<<grid, kBlock, 0, stream>>>(p);
      break;
  }
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace eaglesim::cuda
