#include "cuda/ops/replay_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cost/attention_geometry.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/ops/elementwise_plan.hpp"
#include "grid_dependency.cuh"
#include "pointwise_bf16.cuh"
#include "replay_attention.cuh"
#include "replay_fill.cuh"
#include "replay_rowwise.cuh"
#include "row_norm.cuh"

namespace eaglesim::cuda {

namespace k = eaglesim::kernels::replay;

namespace {
unsigned grid_for(std::size_t n, unsigned block) {
  // Grid-stride kernels: enough blocks to fill any current GPU, no more.
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((n + block - 1) / block, 4096)));
}
}  // namespace

void fill_uniform(void* p, std::size_t count, DType dtype, std::uint64_t seed, float scale, cudaStream_t stream) {
  if (count == 0) return;
  const unsigned block = 256, grid = grid_for(count, block);
  switch (dtype) {
    case DType::bf16:
      k::fill_uniform_kernel<<<grid, block, 0, stream>>>(static_cast<__nv_bfloat16*>(p), count, seed, scale);
      break;
    case DType::fp16:
      k::fill_uniform_kernel<<<grid, block, 0, stream>>>(static_cast<__half*>(p), count, seed, scale);
      break;
    case DType::fp8:
      k::fill_uniform_kernel<<<grid, block, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(p), count, seed, scale);
      break;
    case DType::fp32:
      k::fill_uniform_kernel<<<grid, block, 0, stream>>>(static_cast<float*>(p), count, seed, scale);
      break;
    case DType::int4:
      k::fill_bytes_kernel<<<grid, block, 0, stream>>>(static_cast<std::uint8_t*>(p), count, seed);
      break;
  }
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void fill_random(void* p, std::size_t count, DType dtype, std::uint64_t seed, float scale, cudaStream_t stream) {
  // fp16 buffers are replayed as bf16 (same bytes, same speed).
  fill_uniform(p, count, dtype == DType::fp16 ? DType::bf16 : dtype, seed, scale, stream);
}

void fill_random_ids(int* p, std::size_t count, int rows, std::uint64_t seed, cudaStream_t stream) {
  k::fill_ids_kernel<<<grid_for(count, 256), 256, 0, stream>>>(p, count, seed, rows);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------- row norms and point-wise ops

static_assert(k::kRowNormMaxThreads == kRowNormMaxThreads, "row_norm.cuh and elementwise_plan.hpp disagree");
static_assert(k::kRowNormWarpRowsThreads == 32 * kRowNormWarpRowsPerBlock, "row_norm.cuh and elementwise_plan.hpp disagree");
static_assert(k::kPointwiseThreads == kPointwiseThreads, "pointwise_bf16.cuh and elementwise_plan.hpp disagree");

namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// One launch of a glue kernel. early_start on an explicit stream: with programmatic stream
// serialization, so the kernel starts while the kernel ahead of it finishes and waits for it
// inside (kernels/grid_dependency.cuh) before it touches its operands.
template <typename... Params, typename... Args>
void launch_glue(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, bool early_start,
                 Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr = kernels::early_start_attribute();
  cfg.attrs = &attr;
  cfg.numAttrs = early_start && kernels::early_start_allowed(stream) ? 1 : 0;
  EAGLESIM_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

int current_sm_count() {
  int device = 0, sms = 0;
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
  EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

template <int V, bool ADD, bool PACKED, bool WARP_ROWS>
void launch_row_norm_kernel(const RowNormGeometry& g, const k::RowNormArgs& a, cudaStream_t stream, bool early) {
  launch_glue(k::row_norm_kernel<V, ADD, PACKED, WARP_ROWS>, dim3(static_cast<unsigned>(g.blocks)),
              dim3(static_cast<unsigned>(g.threads)), stream, early, a);
}

template <bool ADD, bool PACKED, bool WARP_ROWS>
void launch_row_norm_v(const RowNormGeometry& g, const k::RowNormArgs& a, cudaStream_t stream, bool early) {
  switch (g.vectors_per_thread) {
    case 1: launch_row_norm_kernel<1, ADD, PACKED, WARP_ROWS>(g, a, stream, early); break;
    case 2: launch_row_norm_kernel<2, ADD, PACKED, WARP_ROWS>(g, a, stream, early); break;
    default: launch_row_norm_kernel<4, ADD, PACKED, WARP_ROWS>(g, a, stream, early); break;
  }
}

template <bool ADD>
void launch_row_norm(const k::RowNormArgs& a, cudaStream_t stream, bool early) {
  if (a.rows <= 0) return;
  const bool aligned = aligned16(a.x) && aligned16(a.weight) && aligned16(a.out) && (!ADD || aligned16(a.residual));
  const RowNormGeometry g = row_norm_geometry(a.rows, a.hidden, aligned);
  if (g.packed) {
    if (g.warp_per_row) launch_row_norm_v<ADD, true, true>(g, a, stream, early);
    else launch_row_norm_v<ADD, true, false>(g, a, stream, early);
  } else {
    if (g.warp_per_row) launch_row_norm_v<ADD, false, true>(g, a, stream, early);
    else launch_row_norm_v<ADD, false, false>(g, a, stream, early);
  }
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace

namespace {
k::RowNormArgs row_norm_args(const void* x, void* residual, const void* weight, void* out, int tokens, int hidden,
                             float eps) {
  k::RowNormArgs a;
  a.x = static_cast<const __nv_bfloat16*>(x);
  a.residual = static_cast<__nv_bfloat16*>(residual);
  a.weight = static_cast<const __nv_bfloat16*>(weight);
  a.out = static_cast<__nv_bfloat16*>(out);
  a.rows = tokens;
  a.hidden = hidden;
  a.eps = eps;
  return a;
}
}  // namespace

void launch_rmsnorm(const void* x, const void* weight, void* out, int tokens, int hidden, float eps,
                    cudaStream_t stream, bool early_start) {
  launch_row_norm<false>(row_norm_args(x, nullptr, weight, out, tokens, hidden, eps), stream, early_start);
}

void launch_add_rmsnorm(const void* x, void* residual, const void* weight, void* out, int tokens, int hidden,
                        float eps, cudaStream_t stream, bool early_start) {
  launch_row_norm<true>(row_norm_args(x, residual, weight, out, tokens, hidden, eps), stream, early_start);
}

void launch_residual_add(void* residual, const void* x, std::size_t count, cudaStream_t stream, bool early_start) {
  if (count == 0) return;
  const bool packed = aligned16(residual) && aligned16(x);
  const std::size_t vectors = packed ? count / 8 : 0;
  PointwiseGeometry g = pointwise_geometry(1, static_cast<std::int64_t>(vectors), current_sm_count());
  if (vectors == 0) g.grid_x = static_cast<std::int64_t>(grid_for(count, kPointwiseThreads));  // all scalar
  auto* r = static_cast<__nv_bfloat16*>(residual);
  const auto* xb = static_cast<const __nv_bfloat16*>(x);
  const auto grid = static_cast<unsigned>(g.grid_x);
  const dim3 block(kPointwiseThreads);
  switch (g.units_per_thread) {
    case 4: launch_glue(k::residual_add_kernel<4>, dim3(grid), block, stream, early_start, r, xb, vectors, count); break;
    case 2: launch_glue(k::residual_add_kernel<2>, dim3(grid), block, stream, early_start, r, xb, vectors, count); break;
    default: launch_glue(k::residual_add_kernel<1>, dim3(grid), block, stream, early_start, r, xb, vectors, count); break;
  }
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

namespace {
template <bool PACKED>
void launch_silu_mul_kernel(const PointwiseGeometry& g, const __nv_bfloat16* in, __nv_bfloat16* out, int tokens,
                            int hidden, cudaStream_t stream, bool early) {
  const dim3 grid(static_cast<unsigned>(g.grid_x), static_cast<unsigned>(g.grid_y));
  const dim3 block(kPointwiseThreads);
  switch (g.units_per_thread) {
    case 4: launch_glue(k::silu_mul_kernel<4, PACKED>, grid, block, stream, early, in, out, tokens, hidden); break;
    case 2: launch_glue(k::silu_mul_kernel<2, PACKED>, grid, block, stream, early, in, out, tokens, hidden); break;
    default: launch_glue(k::silu_mul_kernel<1, PACKED>, grid, block, stream, early, in, out, tokens, hidden); break;
  }
}
}  // namespace

void launch_silu_mul(const void* gate_up, void* out, int tokens, int hidden, cudaStream_t stream, bool early_start) {
  if (tokens <= 0 || hidden <= 0) return;
  const bool packed = hidden % 8 == 0 && aligned16(gate_up) && aligned16(out);
  const PointwiseGeometry g = pointwise_geometry(tokens, packed ? hidden / 8 : hidden, current_sm_count());
  const auto* in = static_cast<const __nv_bfloat16*>(gate_up);
  auto* o = static_cast<__nv_bfloat16*>(out);
  if (packed) launch_silu_mul_kernel<true>(g, in, o, tokens, hidden, stream, early_start);
  else launch_silu_mul_kernel<false>(g, in, o, tokens, hidden, stream, early_start);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void launch_embedding(const void* table, const int* ids, void* out, int tokens, int hidden, cudaStream_t stream) {
  k::embedding_gather_kernel<<<tokens, 128, 0, stream>>>(static_cast<const __nv_bfloat16*>(table), ids,
                                                         static_cast<__nv_bfloat16*>(out), hidden);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void launch_spin(double us, cudaStream_t stream) {
  k::spin_kernel<<<1, 32, 0, stream>>>(static_cast<std::uint64_t>(std::llround(us * 1000.0)));
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------- attention

namespace {

enum class AttnKernel { none, gqa128, gqa256, mla512_64, mla512_0 };

AttnKernel pick(const AttentionShape& s) {
  if (!s.shared_kv) {
    if (s.dk == 128 && s.dv == 128) return AttnKernel::gqa128;
    if (s.dk == 256 && s.dv == 256) return AttnKernel::gqa256;
  } else {
    if (s.dv == 512 && s.dk == 576) return AttnKernel::mla512_64;
    if (s.dv == 512 && s.dk == 512) return AttnKernel::mla512_0;
  }
  return AttnKernel::none;
}

// The instantiations: tile length keeps shared memory under ~60 KB per block.
template <int DK, int DV, int TILE, bool SHARED>
struct AttnInst {
  static constexpr int tile = TILE;
  static void prepare() {
    EAGLESIM_CUDA_CHECK(cudaFuncSetAttribute(k::decode_attention_split_kernel<DK, DV, TILE, SHARED>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(k::AttnSmem<DK, DV, TILE, SHARED>::total)));
  }
  static void launch(dim3 grid, const k::AttnParams& p, cudaStream_t stream) {
    k::decode_attention_split_kernel<DK, DV, TILE, SHARED>
        <<<grid, k::kAttnThreads, k::AttnSmem<DK, DV, TILE, SHARED>::total, stream>>>(p);
  }
};

// The split heuristic the cost model shares (cost/attention_geometry.hpp) must see these kernels.
static_assert(k::kAttnRowsPerBlock == kDecodeAttentionRowsPerBlock, "decode attention rows per block");
static_assert(decode_attention_tile(128, false) == 64 && decode_attention_tile(256, false) == 32 &&
                  decode_attention_tile(576, true) == 32 && decode_attention_tile(512, true) == 32,
              "decode attention tiles");

template <typename F>
void dispatch(AttnKernel which, F&& f) {
  switch (which) {
    case AttnKernel::gqa128: f(AttnInst<128, 128, 64, false>{}); break;
    case AttnKernel::gqa256: f(AttnInst<256, 256, 32, false>{}); break;
    case AttnKernel::mla512_64: f(AttnInst<576, 512, 32, true>{}); break;
    case AttnKernel::mla512_0: f(AttnInst<512, 512, 32, true>{}); break;
    case AttnKernel::none: throw InputError("attention shape has no replay kernel");
  }
}

}  // namespace

std::string attention_unsupported_reason(const AttentionShape& s) {
  if (s.q_tokens < 1 || s.kv_len < 1 || s.heads < 1 || s.kv_heads < 1 || s.heads % s.kv_heads != 0)
    return "needs q_tokens, kv_len, heads >= 1 and kv_heads dividing heads";
  if (s.kv_len < s.q_tokens) return "needs kv_len >= q_tokens (the verify tokens are part of the cache)";
  if (pick(s) == AttnKernel::none)
    return s.shared_kv ? fmt::format("MLA replay supports kv_lora_rank 512 with rope_dim 0 or 64 (got {} + {})",
                                     s.dv, s.dk - s.dv)
                       : fmt::format("GQA replay supports head_dim 128 or 256 (got {})", s.dk);
  return "";
}

AttentionPlan plan_attention(const AttentionShape& s, int sm_count) {
  const std::string why = attention_unsupported_reason(s);
  if (!why.empty()) throw InputError("attention: " + why);
  AttentionPlan plan;
  int tile = 0;
  dispatch(pick(s), [&](auto inst) {
    decltype(inst)::prepare();
    tile = decltype(inst)::tile;
  });
  const DecodeAttentionSplit split = decode_attention_split(s.kv_len, tile, s.kv_heads, (s.heads / s.kv_heads) * s.q_tokens, sm_count);
  plan.row_blocks = split.row_blocks;
  plan.split_len = split.split_len;
  plan.splits = split.splits;
  const std::size_t rows_all = static_cast<std::size_t>(s.q_tokens) * s.heads;
  plan.part_acc_floats = static_cast<std::size_t>(plan.splits) * rows_all * s.dv;
  plan.part_ml_floats = static_cast<std::size_t>(plan.splits) * rows_all * 2;
  return plan;
}

void launch_attention(const AttentionShape& s, const AttentionPlan& plan, const void* q, const void* kc,
                      const void* vc, std::int64_t k_pitch, std::int64_t v_pitch, float* part_acc, float* part_ml,
                      void* out, cudaStream_t stream) {
  k::AttnParams p{};
  p.q = static_cast<const __nv_bfloat16*>(q);
  p.k = static_cast<const __nv_bfloat16*>(kc);
  p.v = static_cast<const __nv_bfloat16*>(vc);
  p.k_row_pitch = k_pitch;
  p.v_row_pitch = v_pitch;
  p.part_acc = part_acc;
  p.part_ml = part_ml;
  p.q_tokens = s.q_tokens;
  p.heads = s.heads;
  p.kv_heads = s.kv_heads;
  p.kv_len = s.kv_len;
  p.split_len = plan.split_len;
  p.scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(s.dk)));
  const dim3 grid(plan.splits, s.kv_heads, plan.row_blocks);
  dispatch(pick(s), [&](auto inst) { decltype(inst)::launch(grid, p, stream); });
  EAGLESIM_CUDA_CHECK_LAUNCH();
  const int rows_all = s.q_tokens * s.heads;
  auto* o = static_cast<__nv_bfloat16*>(out);
  if (s.dv == 128) k::decode_attention_combine_kernel<128><<<rows_all, k::kAttnThreads, 0, stream>>>(part_acc, part_ml, o, plan.splits, rows_all);
  else if (s.dv == 256) k::decode_attention_combine_kernel<256><<<rows_all, k::kAttnThreads, 0, stream>>>(part_acc, part_ml, o, plan.splits, rows_all);
  else k::decode_attention_combine_kernel<512><<<rows_all, k::kAttnThreads, 0, stream>>>(part_acc, part_ml, o, plan.splits, rows_all);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace eaglesim::cuda
