#include "cuda/ops/fp8_act_quant.hpp"

#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "fp8_act_quant.cuh"
#include "fp8_act_quant_reference.cuh"

namespace eaglesim::cuda {

namespace kf = eaglesim::kernels::fp8;

namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

kf::ActScaling act_scaling(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::channel: return kf::ActScaling::per_token;
    case Fp8Scaling::block: return kf::ActScaling::per_group;
    case Fp8Scaling::tensor: break;
  }
  return kf::ActScaling::tensor_static;
}

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, bool early_start, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = stream;
  cudaLaunchAttribute attr = kernels::early_start_attribute();
  cfg.attrs = &attr;
  cfg.numAttrs = early_start && kernels::early_start_allowed(stream) ? 1 : 0;
  EAGLESIM_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

void check_args(const Fp8QuantArgs& a) {
  if (std::string why = fp8_act_quant_unsupported_reason(a); !why.empty())
    throw InputError("fp8 activation quantisation: " + why);
}

}  // namespace

std::string fp8_act_quant_unsupported_reason(const Fp8QuantArgs& a) {
  if (a.rows < 1 || a.k < 1) return fmt::format("empty input (rows={} k={})", a.rows, a.k);
  if (a.k % 8 != 0) return fmt::format("k={} is not a multiple of 8 (16-byte loads)", a.k);
  if (a.k > (1 << 24) || a.rows > (1 << 28)) return fmt::format("rows={} k={} beyond the kernels' grid", a.rows, a.k);
  if (!a.x || !a.q || !a.scales) return "null buffer";
  if (!aligned16(a.x) || !aligned16(a.q) || !aligned16(a.scales)) return "buffers not 16-byte aligned";
  return {};
}

void launch_fp8_act_quant(Fp8Scaling scaling, const Fp8QuantArgs& a, cudaStream_t stream, bool early_start) {
  check_args(a);
  kf::QuantParams p;
  p.x = static_cast<const __nv_bfloat16*>(a.x);
  p.q = static_cast<std::uint8_t*>(a.q);
  p.scales = a.scales;
  p.rows = a.rows;
  p.k = a.k;
  p.rows_padded = static_cast<int>(fp8_gemm_rows(scaling, a.rows));
  const dim3 block(kf::kQuantThreads);
  switch (scaling) {
    case Fp8Scaling::block: {
      const int groups = kf::groups_along_k(a.k);
      const dim3 grid(static_cast<unsigned>(p.rows_padded),
                      static_cast<unsigned>((groups + kf::kGroupsPerCta - 1) / kf::kGroupsPerCta));
      launch(kf::quant_per_group_kernel, grid, block, stream, early_start, p);
      break;
    }
    case Fp8Scaling::channel:
      launch(kf::quant_per_row_kernel<false>, dim3(static_cast<unsigned>(a.rows)), block, stream, early_start, p);
      break;
    case Fp8Scaling::tensor:
      launch(kf::quant_per_row_kernel<true>, dim3(static_cast<unsigned>(a.rows)), block, stream, early_start, p);
      break;
  }
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void launch_fp8_act_quant_reference(Fp8Scaling scaling, const Fp8QuantArgs& a, cudaStream_t stream) {
  check_args(a);
  kf::ReferenceQuantParams p;
  p.x = static_cast<const __nv_bfloat16*>(a.x);
  p.q = static_cast<std::uint8_t*>(a.q);
  p.scales = a.scales;
  p.rows = a.rows;
  p.k = a.k;
  p.rows_padded = static_cast<int>(fp8_gemm_rows(scaling, a.rows));
  p.scaling = act_scaling(scaling);
  const long long threads =
      static_cast<long long>(p.rows_padded) * (scaling == Fp8Scaling::block ? kf::groups_along_k(a.k) : 1);
  constexpr int kBlock = 128;
  kf::quant_reference_kernel<<<static_cast<unsigned>((threads + kBlock - 1) / kBlock), kBlock, 0, stream>>>(p);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace eaglesim::cuda
