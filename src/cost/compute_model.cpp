// Roofline cost of non-communication ops on one GPU of a topology, with the two effects that
// decide small-batch (verify-step) kernels:
//   - a kernel streaming B bytes reaches at most kMaxBwEfficiency of peak memory bandwidth and
//     needs kBwRampUs to fill the memory pipeline (first wave of tiles, tail), i.e.
//       eff_bw(B) = kMaxBwEfficiency * B / (B + kMaxBwEfficiency * peak_bw * kBwRampUs)
//       time      = B / (peak_bw * eff_bw(B)) = kBwRampUs + B / (kMaxBwEfficiency * peak_bw)
//   - tensor cores work on whole tiles: a small m is padded to kMmaRows (cuBLAS/Marlin put a
//     small m on the MMA's narrow side: mma.m16n8k16, wgmma N >= 8), so m = 4 costs the flops of
//     m = 16; same ramp form for flops with kMaxFlopsEfficiency / kFlopsRampUs.
// A GEMM costs max(memory time, compute time); nothing costs less than the launch gap (the
// minimum time per kernel back to back in a CUDA graph). Calibration tables win in range. A
// residual add and the RMSNorm after it that a serving engine runs as one fused kernel are priced
// as that kernel: one launch gap, or its bytes streamed, not two.
//
// The per-cycle ops of speculative decoding are small kernels over logits and tree indices:
// each kernel streams its bytes at the bandwidth ceiling, never under the launch gap, and the
// host synchronisation is a fixed cost (kHostSyncUs, below).
//
// Where the constants come from: kMaxBwEfficiency and kBwRampUs are a least-squares line through
// the bf16 GEMM kernels of Llama-3.1-8B TP2 at m=4 measured on an H200 (PyTorch profiler, cuBLAS
// nvjet kernels; docs/topology-format.md, "Compute model"): o_proj 16.8 MB in 6.6 us, qkv 25.2 MB in
// 11.3 us (split-K, incl. its reduce kernel), down 58.7 MB in 18.1 us, gate_up 117 MB in 33.9 us
// -> slope 3.71 TB/s (0.77 of 4.8 TB/s), intercept 2.3 us. That ceiling is also typical of
// published STREAM-like results on HBM GPUs (75-90 % of peak). The flops constants are
// assumptions (large bf16 GEMMs reach 70-80 % of dense peak in cuBLAS).
#include "cost/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "cost/table_interpolation.hpp"
#include "cost/fitted_model.hpp"
#include "cost/local_correction.hpp"
#include "topology/calibration_keys.hpp"
#include "trace/op_traffic.hpp"

namespace eaglesim {

namespace {

constexpr double kMaxBwEfficiency = 0.78;
constexpr double kBwRampUs = 2.3;
constexpr double kMaxFlopsEfficiency = 0.75;
constexpr double kFlopsRampUs = 3.0;
constexpr double kMmaRows = 16;
// int4 weights (Marlin-style kernels) are unpacked, converted and scaled on CUDA cores once per
// weight per kMmaRows-row tile of m: ~4 operations per weight at 1/16 of the dense bf16 tensor rate
// (CUDA-core FP throughput is roughly that fraction of tensor throughput on H100/B200).
constexpr double kInt4DequantOpsPerWeight = 4;
constexpr double kCudaCoreShareOfTensor = 1.0 / 16.0;
// Kernels of SGLang's tree building per cycle (eagle_utils.py organize_draft_results and
// build_tree_kernel_efficient): the top-k over the candidates' scores, its sort, the gather of the
// chosen tokens, the concatenation with the verified token and the tree kernel.
constexpr double kTreeBuildKernels = 5;
// A small device-to-host copy and the host's wait for it: 5-7 us per cudaMemcpyAsync measured in
// DualPath (Wu et al., arXiv 2602.21548, section 5.2); the GPU idles that long, then waits one
// launch gap for the first kernel the host issues after it. The host's own work between (SGLang's
// per-request bookkeeping) is not in it: a trace can carry a measured `us` for the op.
constexpr double kHostSyncUs = 6.0;

double launch_gap(const Topology& t) {
  return t.calibration.launch_gap_us ? *t.calibration.launch_gap_us : t.gpu.launch_gap_us;
}

// Memory-bound time of a tiled kernel (GEMM, attention) streaming `bytes`, ramp included.
double tiled_memory_us(const Topology& t, double bytes) {
  return kBwRampUs + bytes / (t.gpu.mem_bw_gbs * 1e3 * kMaxBwEfficiency);
}

// Element-wise kernels have no tile pipeline to fill: bytes at the bandwidth ceiling.
double streaming_memory_us(const Topology& t, double bytes) {
  return bytes / (t.gpu.mem_bw_gbs * 1e3 * kMaxBwEfficiency);
}

double compute_us(double flops, double tflops) {
  return kFlopsRampUs + flops / (tflops * 1e6 * kMaxFlopsEfficiency);
}

double tensor_tflops(const Topology& t, DType weights) {
  // fp8 weights run fp8 MMAs (activations quantised) where the GPU has them; everything else bf16.
  if (weights == DType::fp8 && t.gpu.fp8_tflops > 0) return t.gpu.fp8_tflops;
  return t.gpu.bf16_tflops;
}

double padded(double rows) { return std::ceil(rows / kMmaRows) * kMmaRows; }

// Shared by gemm, lm_head and grouped_gemm. `rows_per_group`: rows one weight matrix sees.
double matmul_us(const Topology& t, const Op& op, double rows_per_group, double groups) {
  double padded_flops = 2.0 * groups * padded(rows_per_group) * static_cast<double>(op.n) * op.k;
  double compute = compute_us(padded_flops, tensor_tflops(t, op.dtype));
  if (op.dtype == DType::int4) {
    double weights = groups * static_cast<double>(op.n) * op.k;
    double dequant_ops = weights * kInt4DequantOpsPerWeight * (padded(rows_per_group) / kMmaRows);
    compute += dequant_ops / (t.gpu.bf16_tflops * 1e6 * kCudaCoreShareOfTensor);
  }
  double memory = tiled_memory_us(t, op.weight_bytes() + op.io_bytes());
  return std::max(compute, memory);
}

// Triton's fused_moe_kernel (SGLang fused_moe_triton/fused_moe.py, vLLM fused_moe.py) at the
// sizes of decode and verify steps: the routed rows are sorted by expert and each touched
// expert's rows padded to BLOCK_M; one CTA computes BLOCK_M rows x BLOCK_N columns over the whole
// K (no split-K), streaming that expert's K x BLOCK_N weight tile (the rows' activations are
// shared by the CTAs of an expert and come from L2). With few routed rows the grid has few CTAs
// and each is latency-bound: the kernel takes its waves of CTAs times one CTA's weight bytes at
// `cta_gbs`, and never less than the roofline. BLOCK_M 16 and BLOCK_N 64 are the small-M
// configurations the engines' tuned Hopper configs use; two CTAs per SM (a 3-4 stage pipeline of
// 16 x 128 and 128 x 64 bf16 tiles is ~80 KB of shared memory).
constexpr double kFusedMoeBlockM = 16;
constexpr double kFusedMoeBlockN = 64;
constexpr double kFusedMoeCtasPerSm = 2;
// Past one BLOCK_M of rows per expert (prefill chunks, large batches), the CTAs of an expert's
// further row blocks read the same weight tiles, which the first block's CTAs brought into L2:
// the latency-bound streaming counts each (expert, BLOCK_N) tile once, and the extra row blocks
// cost their FLOPs (the roofline term).
double fused_moe_us(const Topology& t, const Op& op, double cta_gbs) {
  const double experts = static_cast<double>(std::max<std::int64_t>(1, op.experts));
  const double ctas = experts * std::ceil(static_cast<double>(op.n) / kFusedMoeBlockN);
  const double waves = std::ceil(ctas / (kFusedMoeCtasPerSm * std::max(1, t.gpu.sms)));
  const double cta_bytes = static_cast<double>(op.k) * kFusedMoeBlockN * bytes_per_element(op.dtype);
  const double geometry = kBwRampUs + waves * cta_bytes / (cta_gbs * 1e3);
  return std::max(geometry, matmul_us(t, op, static_cast<double>(op.tokens) / experts, experts));
}

double attention_us(const Topology& t, const Op& op) {
  // Decode/verify attention kernels (FlashInfer, FlashAttention split-KV) pack the query rows
  // that share a KV head into one tile; MLA shares one latent KV across all heads.
  double group = op.variant == AttentionVariant::mla
                     ? static_cast<double>(op.heads)
                     : static_cast<double>(op.heads) / std::max<std::int64_t>(1, op.kv_heads);
  double rows = static_cast<double>(op.q_tokens) * group;
  double padded_flops = op.flops() * padded(rows) / rows;
  double compute = compute_us(padded_flops, t.gpu.bf16_tflops);
  double memory = tiled_memory_us(t, op.io_bytes());
  // Split-KV kernels finish with a second, small kernel that merges the partial results.
  return std::max(compute, memory) + launch_gap(t);
}

// A kernel streaming `bytes`, never under the launch gap.
double small_kernel_us(const Topology& t, double bytes) { return std::max(launch_gap(t), streaming_memory_us(t, bytes)); }

// The per-cycle ops: softmax then top-k over the logits; the tree kernels; argmax over the logits
// then the acceptance walk over the tree; the host's round trip.
double cycle_op_us(const Topology& t, const Op& op) {
  const double logits = 4.0 * static_cast<double>(op.rows) * static_cast<double>(op.vocab);
  switch (op.kind) {
    case OpKind::topk_select: return small_kernel_us(t, 2.0 * logits) + small_kernel_us(t, op.io_bytes() - 2.0 * logits);
    case OpKind::tree_build: return (kTreeBuildKernels - 1) * launch_gap(t) + small_kernel_us(t, op.io_bytes());
    case OpKind::sampling: return small_kernel_us(t, logits) + launch_gap(t);
    case OpKind::host_sync: return kHostSyncUs + launch_gap(t);
    default: break;
  }
  throw std::invalid_argument("cycle_op_us: not a per-cycle op kind");
}

OpCost from_table(const TableLookup& l, double model_us) {
  OpCost c;
  if (l.inside) {
    c.us = l.us;
    c.calibrated = true;
    return c;
  }
  c.us = model_us;
  c.extrapolated = l.has_table;
  return c;
}

const std::vector<SizeCalPoint>* find_table(const std::map<std::string, std::vector<SizeCalPoint>>& m,
                                            const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

const FittedModel* find_fitted(const Topology& topo, const std::string& key) {
  auto it = topo.calibration.fitted.find(key);
  return it == topo.calibration.fitted.end() ? nullptr : &it->second;
}

// A fitted prediction `us` at `size` with the local correction of its shape family's measured
// table (none: the fit alone). `fit_at(s)`: the same op's fitted µs at size s.
OpCost corrected(double us, const std::vector<SizeCalPoint>* table, double size,
                 const std::function<double(double)>& fit_at) {
  OpCost c;
  c.us = us;
  c.calibrated = true;
  if (table) c.us *= local_correction(*table, size, fit_at).factor;
  return c;
}

std::vector<SizeCalPoint> gemm_family(const Calibration& cal, const Op& op) {
  std::vector<SizeCalPoint> pts;
  for (const auto& p : cal.gemm)
    if (p.n == op.n && p.k == op.k && p.dtype == op.dtype) pts.push_back({p.m, p.us});
  std::sort(pts.begin(), pts.end(), [](const SizeCalPoint& a, const SizeCalPoint& b) { return a.size < b.size; });
  return pts;
}

// `op` with its KV positions over all requests scaled to `total` (each request's in proportion).
Op with_kv_total(const Op& op, double total) {
  Op o = op;
  const double f = total / std::max(1.0, op.kv_len_total());
  if (o.kv_lens.empty()) {
    o.kv_len = std::max<std::int64_t>(1, std::llround(static_cast<double>(op.kv_len) * f));
  } else {
    for (auto& l : o.kv_lens) l = std::max<std::int64_t>(1, std::llround(static_cast<double>(l) * f));
    o.kv_len = *std::max_element(o.kv_lens.begin(), o.kv_lens.end());
  }
  return o;
}

// A chain cost in a step: the calibration's sequence overhead added.
OpCost in_step(OpCost c, const Topology& topo) {
  if (topo.calibration.sequence_overhead_us) c.us = std::max(0.0, c.us + *topo.calibration.sequence_overhead_us);
  return c;
}

// Element-wise kernels streaming `bytes`, priced by the elementwise table `key` at tokens x hidden.
OpCost elementwise_cost(const Topology& topo, double bytes, const std::string& key, const Op& op) {
  // An engine kernel's table is kept by all its operands' elements (calibrate measures it so).
  const double operands = op.kind == OpKind::elementwise ? std::max<std::int32_t>(1, op.operands) : 1;
  const double elements = static_cast<double>(op.tokens) * static_cast<double>(op.hidden) * operands;
  const FittedModel* fit = find_fitted(topo, "elementwise:" + key);
  // An engine's other small kernels (RoPE, KV store, copies, MoE routing: one memory-bound model
  // over them all, by bytes) without a fit of their own stream like a residual add, the fitted
  // element-wise kernel closest to them.
  if (!fit && op.kind == OpKind::elementwise) fit = find_fitted(topo, "elementwise:residual_add");
  if (fit) {
    // The bytes the fit was made on (fitted_features), which grow with the elements at a fixed
    // width: the same op at `s` elements streams s / elements of them.
    const double fb = fitted_features(op, topo.gpu.sms, key == kAddRmsnormTable).bytes;
    return corrected(fitted_us(*fit, {fb, 0}), find_table(topo.calibration.elementwise, key), elements,
                     [&](double s) { return fitted_us(*fit, {fb * s / std::max(1.0, elements), 0}); });
  }
  const double model = std::max(launch_gap(topo), streaming_memory_us(topo, bytes));
  TableLookup l;
  if (const auto* table = find_table(topo.calibration.elementwise, key))
    l = interpolate_table(*table, elements);
  return from_table(l, model);
}

}  // namespace

OpCost compute_cost(const Op& op, const Topology& topo) { return in_step(chain_cost(op, topo), topo); }

// The kernel classes where eaglesim's replay runs its own kernel, not the engine's, are priced by
// the datasheet roofline, whatever the topology's calibration fitted to our kernels: the grouped
// MoE GEMMs (the engines run Triton fused MoE: its grid, fused_moe_us), the fp8 / int4 dense
// GEMMs (the engines run DeepGEMM, CUTLASS or Marlin; ours are weight-only stream-K kernels) and
// attention (FlashInfer, FlashAttention, FlashMLA; ours is eaglesim's verify kernel). bf16 GEMMs
// (cuBLAS, as the engines) and the element-wise kernels keep the calibration.
OpCost compute_cost(const Op& op, const Topology& topo, const EngineProfile& engine) {
  OpCost c;
  if (engine.engine == ServingEngine::torch) {
    // The torch reference step runs cuBLAS and PyTorch's own kernels, which a calibration prices
    // as they are, and cuDNN's persistent SDPA kernel, which a fit to recordings of the step
    // prices by its grid where the topology has one.
    const FittedModel* fit = op.kind == OpKind::attention && op.variant == AttentionVariant::gqa
                                 ? find_fitted(topo, kPersistentAttentionKey)
                                 : nullptr;
    if (!fit) return compute_cost(op, topo);
    c.us = std::max(launch_gap(topo), fitted_us(*fit, persistent_attention_features(op, topo.gpu.sms)));
    c.calibrated = true;
    return in_step(c, topo);
  }
  if (op.kind == OpKind::grouped_gemm) c.us = fused_moe_us(topo, op, engine.moe_cta_gbs);
  else if ((op.kind == OpKind::gemm || op.kind == OpKind::lm_head) && op.dtype != DType::bf16)
    c.us = matmul_us(topo, op, static_cast<double>(op.m), 1.0);
  else if (op.kind == OpKind::attention) c.us = attention_us(topo, op);
  else return compute_cost(op, topo);
  c.us = std::max(launch_gap(topo), c.us);
  return in_step(c, topo);
}

OpCost add_rmsnorm_cost(const Op& norm, const Topology& topo) { return in_step(add_rmsnorm_chain_cost(norm, topo), topo); }

OpCost add_rmsnorm_chain_cost(const Op& norm, const Topology& topo) {
  if (norm.kind != OpKind::rmsnorm)
    throw std::invalid_argument("add_rmsnorm_cost: op '" + norm.name + "' is a " + to_string(norm.kind) + ", not the pair's rmsnorm");
  return elementwise_cost(topo, add_rmsnorm_traffic(norm).bytes, kAddRmsnormTable, norm);
}

OpCost chain_cost(const Op& op, const Topology& topo) {
  const double gap = launch_gap(topo);
  const Calibration& cal = topo.calibration;
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head: {
      if (const FittedModel* fit = find_fitted_model(op, topo)) {
        const std::vector<SizeCalPoint> family = gemm_family(cal, op);
        auto at = [&](double m) {
          Op o = op;
          o.m = std::max<std::int64_t>(1, std::llround(m));
          return fitted_us(*fit, fitted_features(o, topo.gpu.sms));
        };
        return corrected(at(static_cast<double>(op.m)), family.empty() ? nullptr : &family, static_cast<double>(op.m), at);
      }
      double model = std::max(gap, matmul_us(topo, op, static_cast<double>(op.m), 1.0));
      return from_table(lookup_gemm(cal, op.m, op.n, op.k, op.dtype), model);
    }
    case OpKind::grouped_gemm: {
      // A calibration's fit when it has one (no table: the fit alone); else the roofline with the
      // routed rows spread evenly over the experts touched, each expert's rows in whole tiles.
      OpCost c;
      if (const FittedModel* fit = find_fitted_model(op, topo)) {
        c.us = fitted_us(*fit, fitted_features(op, topo.gpu.sms));
        c.calibrated = true;
        return c;
      }
      double experts = static_cast<double>(std::max<std::int64_t>(1, op.experts));
      c.us = std::max(gap, matmul_us(topo, op, static_cast<double>(op.tokens) / experts, experts));
      return c;
    }
    case OpKind::attention: {
      // A table measured at this op's query-token count first, then one for any q_tokens.
      const auto* table = find_table(cal.attention, attention_calibration_key_q(op));
      if (!table) table = find_table(cal.attention, attention_calibration_key(op));
      if (const FittedModel* fit = find_fitted_model(op, topo)) {
        auto at = [&](double total) { return fitted_us(*fit, fitted_features(with_kv_total(op, total), topo.gpu.sms)); };
        return corrected(fitted_us(*fit, fitted_features(op, topo.gpu.sms)), table, op.kv_len_total(), at);
      }
      double model = std::max(gap, attention_us(topo, op));
      TableLookup l;
      // A split-KV kernel over a batch streams every request's KV once: its time follows the
      // KV positions of all requests together, as one request's does its own.
      if (table) l = interpolate_table(*table, op.kv_len_total());
      return from_table(l, model);
    }
    case OpKind::rmsnorm:
    case OpKind::residual_add:
    case OpKind::act:
    case OpKind::embedding:
    case OpKind::elementwise: return elementwise_cost(topo, op.weight_bytes() + op.io_bytes(), to_string(op.kind), op);
    case OpKind::other: {
      if (!op.us) throw std::invalid_argument("compute_cost: op '" + op.name + "' of kind other has no us");
      OpCost c;
      c.us = *op.us;
      c.measured = true;
      // A replay runs an `other` op as a timed kernel of that length; the "other" table (µs of
      // such a kernel by requested nanoseconds) adds what a kernel boundary costs on top.
      if (const auto* table = find_table(cal.elementwise, "other")) {
        TableLookup l = interpolate_table(*table, *op.us * 1000.0);
        if (l.inside) c.us = l.us;
      }
      return c;
    }
    case OpKind::topk_select:
    case OpKind::tree_build:
    case OpKind::sampling:
    case OpKind::host_sync: {
      OpCost c;
      c.us = cycle_op_us(topo, op);
      return c;
    }
    case OpKind::allreduce:
    case OpKind::all_to_all:
      throw std::invalid_argument("compute_cost: " + std::string(to_string(op.kind)) + " '" + op.name +
                                  "' is priced by a communicator");
  }
  throw std::invalid_argument("compute_cost: unknown op kind");
}

}  // namespace eaglesim
