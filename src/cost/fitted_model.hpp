#pragma once
// The fitted cost models of a calibration (Calibration::fitted): one formula per op kind with few
// parameters, fitted by `calibrate` to a designed grid of measured shapes and used for every
// shape of the kind,
//   us = fixed_us + max(bytes / bw_gbs, flops_effective / tflops)
// A kernel streams its bytes at an achieved bandwidth or runs its FLOPs at an achieved rate,
// whichever is slower, after a fixed cost (launch, the first wave, the tail, the gap to the next
// kernel in a graph). What makes FLOPs effective:
//   - GEMMs: 2·m·n·k divided by the best tile efficiency over the output tiles a GEMM library
//     picks among (64, 128 or 256 rows by 128 or 256 columns) and split-K factors (k cut into
//     slices of ≥ 256 while the tiles stay within one wave): the useful share of the padded
//     tiles times tiles / (waves · SMs). A last partial wave leaves SMs idle (a GEMM of 1.1 waves
//     costs nearly as much as one of 2); a shape of a few tiles runs split-K on the idle SMs; the
//     library's choice is whichever wastes least, and so is the formula's.
//   - attention: the query rows the kernel's tiles compute per KV head (its row blocks times
//     their rows: a group of 5 x 32 tokens computes 192 rows in three 64-row blocks), at the share
//     of the SMs its grid occupies; bytes are the KV cache, Q and O, and the split partials
//     written and read back. The attention models add the launch geometry of
//     cost/attention_geometry.hpp (the grid the replay's kernel launches, from the same planner):
//       us = fixed_us + waves · wave_us
//            + max(bytes / bw_gbs, flops_effective / tflops,
//                  crit_bytes / block_bw_gbs + crit_flops / block_tflops)
//            + (splits merged ? combine_us + combine_bytes / combine_gbs : 0)
//     waves: the grid's CTAs over the GPU's resident slots, rounded up; the busiest CTA: the KV
//     positions the busiest slot streams one block after another, times a block's K/V bytes per
//     position (crit_bytes) and times the FLOPs its tile spends per position (crit_flops: rows
//     per block x 2 (dk + dv), padding included) — a grid too small to fill the GPU is bound by
//     what one block streams and computes in turn, and a 64-row tile costs more per position than
//     a 16-row one. combine_bytes: the fp32 partials the splits write and the combine reads.
//     One request on the verify kernel, a batch, and one request on the split-KV decode kernel
//     each have their own fit (fitted_model_key): the same formula, different kernels.
//   - elementwise kinds: bytes only (op_traffic; add_rmsnorm: the fused kernel's traffic).
#include <optional>
#include <string>

#include "topology/topology.hpp"
#include "trace/op.hpp"

namespace eaglesim {

// What the formula reads of an op.
struct FittedFeatures {
  double bytes = 0;
  double flops = 0;  // effective FLOPs (padding and waves included); 0 for elementwise kinds
  // Attention's launch geometry (0 for the other kinds).
  double waves = 0;
  double crit_bytes = 0;  // bytes the busiest slot streams one block after another
  double crit_flops = 0;  // FLOPs its tiles spend over those positions (rows per block, padding included)
  double combine = 0;     // 1 when a combine pass merges split partials
  double combine_bytes = 0;  // the partials written by the splits and read by the combine (0 without one)
  double crit_steps = 0;     // KV steps the busiest CTA takes (the persistent kernel's; 0 for the replay's)
};

// The features of cuDNN's persistent SDPA kernel (kPersistentAttentionKey), which the torch
// reference step runs: fitted from recordings of that step (`calibrate --from-recordings`), used
// for the GQA attention of `--engine torch` traces. The geometry terms are the persistent grid's,
// bytes and FLOPs as for any attention.
FittedFeatures persistent_attention_features(const Op& op, int sms);

// The Calibration::fitted key that prices `op` ("gemm:bf16", "attention:gqa", "attention:gqa:batch",
// "attention:gqa:decode", "elementwise:act"), or "" for kinds no fitted model covers
// (grouped_gemm, allreduce, other, the per-cycle ops). `sms`: the GPU's, for the attention kernel
// the shape runs on.
// `fused_add_norm`: the op is the rmsnorm of a residual add + RMSNorm run as one kernel.
std::string fitted_model_key(const Op& op, int sms, bool fused_add_norm = false);

// The topology's fitted model for `op`: its key's, else (a batch or decode-kernel key without a
// fit of its own) the one-request fit of its variant; nullptr when neither is there.
const FittedModel* find_fitted_model(const Op& op, const Topology& topo, bool fused_add_norm = false);

// The formula's inputs for `op` on a GPU with `sms` streaming multiprocessors.
FittedFeatures fitted_features(const Op& op, int sms, bool fused_add_norm = false);

// The formula above, µs; a rate of 0 leaves its term out (bw_gbs must be positive).
double fitted_us(const FittedModel& model, const FittedFeatures& f);

// The fitted model's µs for `op` when the topology has the model of its key, else nothing.
std::optional<double> fitted_cost(const Op& op, const Topology& topo, bool fused_add_norm = false);

}  // namespace eaglesim
