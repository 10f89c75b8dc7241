#include "cuda/replay_kernels.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "replay_attention.cuh"
#include "replay_fill.cuh"
#include "replay_rowwise.cuh"

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

void launch_rmsnorm(const void* x, const void* weight, void* out, int tokens, int hidden, float eps,
                    cudaStream_t stream) {
  k::rmsnorm_kernel<<<tokens, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(x),
                                                static_cast<const __nv_bfloat16*>(weight),
                                                static_cast<__nv_bfloat16*>(out), hidden, eps);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void launch_residual_add(void* residual, const void* x, std::size_t count, cudaStream_t stream) {
  const std::size_t work = count % 8 == 0 ? count / 8 : count;
  k::residual_add_kernel<<<grid_for(work, 256), 256, 0, stream>>>(
      static_cast<__nv_bfloat16*>(residual), static_cast<const __nv_bfloat16*>(x), count);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void launch_silu_mul(const void* gate_up, void* out, int tokens, int hidden, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(tokens) * hidden;
  k::silu_mul_kernel<<<grid_for(n, 256), 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(gate_up),
                                                           static_cast<__nv_bfloat16*>(out), tokens, hidden);
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
  const int rows = (s.heads / s.kv_heads) * s.q_tokens;
  plan.row_blocks = (rows + k::kAttnRowsPerBlock - 1) / k::kAttnRowsPerBlock;
  // Aim for about two blocks per SM over the whole grid, each split at least one tile long.
  const int max_splits = (s.kv_len + tile - 1) / tile;
  const int want = std::max(1, (2 * sm_count + s.kv_heads * plan.row_blocks - 1) / (s.kv_heads * plan.row_blocks));
  int splits = std::min(max_splits, want);
  int split_len = (s.kv_len + splits - 1) / splits;
  split_len = (split_len + tile - 1) / tile * tile;
  plan.split_len = split_len;
  plan.splits = (s.kv_len + split_len - 1) / split_len;
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
