#include "cost/fitted_model.hpp"

#include <algorithm>
#include <cmath>

#include "cost/attention_geometry.hpp"
#include "cost/low_bit_gemm_kernel.hpp"
#include "topology/calibration_keys.hpp"
#include "trace/op_traffic.hpp"

namespace eaglesim {

namespace {

// The output tiles a GEMM kernel (cuBLASLt's, ours) chooses among: rows × columns of one CTA.
// cuBLAS picks per shape; the fit takes the choice that keeps the most of the GPU busy.
constexpr double kTileRows[] = {64, 128, 256};
constexpr double kTileCols[] = {128, 256};
// The rows of one MMA block of the grouped (MoE) kernel: an expert with 3 rows computes 8.
constexpr double kGroupedRowBlock = 8;
// Split-K: below one wave of tiles the k dimension is cut into slices that run on the idle SMs
// (then reduced), down to this many k per slice.
constexpr double kMinSplitK = 256;

// The share of the tensor-core work a shape keeps useful on `sms` SMs, over the tile shapes and
// split-K factors: (useful / padded tile area) · (tiles / (waves · SMs)). 1 for a shape that fills
// whole tiles and whole waves.
double tile_efficiency(double m, double n, double k, int sms) {
  const double slots = static_cast<double>(std::max(1, sms));
  m = std::max(m, 1.0);
  n = std::max(n, 1.0);
  double best = 0;
  for (double tm : kTileRows) {
    for (double tn : kTileCols) {
      const double row_tiles = std::ceil(m / tm), col_tiles = std::ceil(n / tn);
      const double tiles = row_tiles * col_tiles;
      const double fill = (m / (row_tiles * tm)) * (n / (col_tiles * tn));
      for (double split = 1;; ++split) {
        const double ctas = tiles * split;
        best = std::max(best, fill * ctas / (std::ceil(ctas / slots) * slots));
        if (tiles * (split + 1) > slots || k / (split + 1) < kMinSplitK) break;
      }
    }
  }
  return best;
}

// An attention op's features on the kernel whose launch geometry `g` is (the replay's or
// cuDNN's persistent one).
FittedFeatures attention_features(const Op& op, const AttentionGeometry& g, int sms) {
  const VerifyAttentionShape dims = verify_attention_shape(op);
  const double group = op.variant == AttentionVariant::mla
                           ? static_cast<double>(op.heads)
                           : static_cast<double>(op.heads) / static_cast<double>(std::max<std::int64_t>(1, op.kv_heads));
  const double rows = std::max(1.0, static_cast<double>(op.q_tokens) * group);
  const double sm_share = std::max(1.0, g.active_sms) / static_cast<double>(std::max(1, sms));
  FittedFeatures f;
  f.bytes = op.io_bytes() + 2.0 * g.partial_bytes;
  f.flops = op.flops() * std::max(rows, g.rows_computed) / rows / sm_share;
  f.waves = g.waves;
  // The geometry's K/V bytes per position are a bf16 cache's.
  f.crit_bytes = g.crit_tokens * g.block_bytes_per_token * op.kv_element_bytes() / 2.0;
  f.crit_flops = g.crit_tokens * g.rows_per_block * 2.0 * (dims.head_dim_qk + dims.head_dim_v);
  f.crit_steps = g.crit_steps;
  f.combine = g.combine ? 1.0 : 0.0;
  f.combine_bytes = g.combine ? 2.0 * g.partial_bytes : 0.0;
  return f;
}

}  // namespace

std::string fitted_model_key(const Op& op, int sms, bool fused_add_norm) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head: {
      // Dense int4 / fp8 GEMMs run on one of three kernels by shape, each with its own fixed cost
      // and rate: one fit each (find_fitted_model falls back to the stream-K kernel's).
      const std::string base = std::string("gemm:") + to_string(op.dtype);
      if (op.dtype != DType::int4 && op.dtype != DType::fp8) return base;
      switch (low_bit_gemm_kernel(op)) {
        case LowBitGemmKernel::gemv: return base + std::string(kGemvFitSuffix);
        case LowBitGemmKernel::cublas: return base + std::string(kCublasFitSuffix);
        case LowBitGemmKernel::stream_k: break;
      }
      return base;
    }
    case OpKind::grouped_gemm: return std::string("grouped_gemm:") + to_string(op.dtype);
    // A batch of requests runs many more CTAs than one request over the same positions, and the
    // split-KV decode kernel (one request the verify kernel does not take) computes on CUDA
    // cores: each has its own fit; find_fitted_model falls back to the one-request fit.
    case OpKind::attention: {
      const std::string base = std::string("attention:") + to_string(op.variant);
      if (op.batch > 1) return base + std::string(kBatchFitSuffix);
      return attention_geometry(op, sms).verify_kernel ? base : base + std::string(kDecodeFitSuffix);
    }
    case OpKind::rmsnorm: return fused_add_norm ? std::string("elementwise:") + kAddRmsnormTable : "elementwise:rmsnorm";
    case OpKind::residual_add:
    case OpKind::act:
    case OpKind::embedding:
    case OpKind::elementwise: return std::string("elementwise:") + to_string(op.kind);
    default: return "";
  }
}

FittedFeatures fitted_features(const Op& op, int sms, bool fused_add_norm) {
  FittedFeatures f;
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head: {
      const double m = static_cast<double>(op.m), n = static_cast<double>(op.n), k = static_cast<double>(op.k);
      f.bytes = op.weight_bytes() + op.io_bytes();
      if ((op.dtype == DType::int4 || op.dtype == DType::fp8) && low_bit_gemm_kernel(op) != LowBitGemmKernel::cublas) {
        // eaglesim's weight-only kernels: output channels are the MMA's M, the rows its N, padded
        // to the row tile the plan picks (dense_weight_only_row_tile); a persistent stream-K grid,
        // so no tile waves.
        const double tile = dense_weight_only_row_tile(op.dtype == DType::int4, op.m);
        f.flops = 2.0 * std::ceil(m / tile) * tile * n * k;
        return f;
      }
      f.flops = 2.0 * m * n * k / tile_efficiency(m, n, k, sms);
      return f;
    }
    case OpKind::grouped_gemm: {
      // The routed rows spread over the experts touched (as the replay routes them); each
      // expert's rows fill whole 8-row MMA blocks, and the work items of all experts share one
      // stream-K launch, so the waves stay full.
      const double experts = static_cast<double>(std::max<std::int64_t>(1, op.experts));
      const double rows = std::ceil(static_cast<double>(std::max<std::int64_t>(1, op.tokens)) / experts);
      f.bytes = op.weight_bytes() + op.io_bytes();
      f.flops = 2.0 * experts * std::ceil(rows / kGroupedRowBlock) * kGroupedRowBlock * static_cast<double>(op.n) *
                static_cast<double>(op.k);
      return f;
    }
    case OpKind::attention: return attention_features(op, attention_geometry(op, sms), sms);
    default:
      f.bytes = fused_add_norm && op.kind == OpKind::rmsnorm ? add_rmsnorm_traffic(op).bytes : op_traffic(op).bytes;
      return f;
  }
}

FittedFeatures persistent_attention_features(const Op& op, int sms) {
  return attention_features(op, persistent_attention_geometry(op, sms), sms);
}

double fitted_us(const FittedModel& model, const FittedFeatures& f) {
  const double memory = f.bytes / (model.bw_gbs * 1e3);
  const double compute = model.tflops > 0 ? f.flops / (model.tflops * 1e6) : 0.0;
  const double block = f.crit_steps * model.step_us +
                       (model.block_bw_gbs > 0 ? f.crit_bytes / (model.block_bw_gbs * 1e3) : 0.0) +
                       (model.block_tflops > 0 ? f.crit_flops / (model.block_tflops * 1e6) : 0.0);
  const double partials = model.combine_gbs > 0 ? f.combine_bytes / (model.combine_gbs * 1e3) : 0.0;
  return model.fixed_us + f.waves * model.wave_us + std::max({memory, compute, block}) + f.combine * model.combine_us +
         partials;
}

const FittedModel* find_fitted_model(const Op& op, const Topology& topo, bool fused_add_norm) {
  const std::string key = fitted_model_key(op, topo.gpu.sms, fused_add_norm);
  if (key.empty()) return nullptr;
  const auto& fitted = topo.calibration.fitted;
  auto it = fitted.find(key);
  if (it == fitted.end() && op.kind == OpKind::attention)
    it = fitted.find(std::string("attention:") + to_string(op.variant));
  if (it == fitted.end() && (op.kind == OpKind::gemm || op.kind == OpKind::lm_head))
    it = fitted.find(std::string("gemm:") + to_string(op.dtype));
  return it == fitted.end() ? nullptr : &it->second;
}

std::optional<double> fitted_cost(const Op& op, const Topology& topo, bool fused_add_norm) {
  const FittedModel* fit = find_fitted_model(op, topo, fused_add_norm);
  if (!fit) return std::nullopt;
  return fitted_us(*fit, fitted_features(op, topo.gpu.sms, fused_add_norm));
}

}  // namespace eaglesim
