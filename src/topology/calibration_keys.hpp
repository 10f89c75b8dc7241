#pragma once
// Keys of calibration tables. Attention: an attention kernel's cost depends on its head
// layout, so measured µs-by-kv_len tables are kept per layout.
//   gqa: "gqa:HEADS:KV_HEADS:HEAD_DIM"      mla: "mla:HEADS:KV_LORA_RANK:ROPE_DIM"
// A table measured at one query-token count adds ":qQ_TOKENS" (e.g. "gqa:16:4:128:q4"); the
// simulator looks that key up first and falls back to the key without q (any q_tokens).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/op.hpp"

namespace eaglesim {

// The elementwise table of the fused residual-add + RMSNorm kernel (fused_add_rmsnorm), µs by
// tokens x hidden like the tables named after an op kind; no op kind has this name, the simulator
// prices a residual_add + rmsnorm pair it runs as one kernel by it.
inline constexpr const char* kAddRmsnormTable = "add_rmsnorm";

// Keys of the fitted models (Calibration::fitted): "gemm:DTYPE" (bf16, fp8, int4; lm_head too;
// for fp8 and int4 the stream-K weight-only kernel, + kGemvFitSuffix the GEMV kernel and +
// kCublasFitSuffix cuBLASLt, the three kernels that run them by shape: cost/low_bit_gemm_kernel.hpp),
// "attention:gqa", "attention:mla" (one request on the verify-attention kernel), the same +
// kBatchFitSuffix (batches of requests) or + kDecodeFitSuffix (one request on the split-KV decode
// kernel, a CUDA-core kernel an order of magnitude slower per FLOP than the verify kernel's MMA), and "elementwise:" + rmsnorm, residual_add, act, embedding or
// add_rmsnorm. The GEMM and attention models have a FLOP term, the elementwise ones bytes only.
// kPersistentAttentionKey: cuDNN's persistent SDPA kernel of the torch reference step
// (cost/attention_geometry.hpp, persistent_attention_geometry), fitted to recordings of it.
inline constexpr const char* kPersistentAttentionKey = "attention:gqa:cudnn_sdpa";
inline constexpr std::string_view kBatchFitSuffix = ":batch";
inline constexpr std::string_view kDecodeFitSuffix = ":decode";
inline constexpr std::string_view kGemvFitSuffix = ":gemv";
inline constexpr std::string_view kCublasFitSuffix = ":cublas";
const std::vector<std::string>& fitted_model_keys();
bool fitted_model_has_flops(const std::string& key);
// The attention models also price the kernel's launch geometry (waves, the busiest CTA, the combine).
bool fitted_model_has_geometry(const std::string& key);

std::string attention_calibration_key(const Op& op);
std::string attention_calibration_key_q(const Op& op);  // the key above + ":q" + op.q_tokens
bool valid_attention_key(const std::string& key);

// Keys of the kernel-transition table, "FROM>TO": by kind pair ("rmsnorm>gemm", the mean over
// every measured pair of those kinds) or by the two ops' shapes without their token count
// ("rmsnorm:4096>gemm:6144:4096:bf16", see transition_shape), which the simulator tries first.
std::string transition_key(OpKind from, OpKind to);
std::string transition_key(const Op& from, const Op& to);
// An op's side of a shape key: KIND:HIDDEN for elementwise ops, KIND:N:K:DTYPE for GEMMs,
// attention:LAYOUT (attention_calibration_key) for attention.
std::string transition_shape(const Op& op);
// The level between the two, by kinds and a GEMM side's weight format ("rmsnorm>gemm:int4",
// "grouped_gemm:fp8>act"): how much of a kernel's start hides behind the one before depends on
// which kernel runs it (the weight-only kernels start streaming weights early, cuBLASLt does not),
// which the weight format decides. The simulator tries shapes, then this, then the kinds.
std::string transition_family_key(const Op& from, const Op& to);
// What a shape key ("rmsnorm:7168>gemm:1536:7168:int4") is an entry of, one level up:
// "rmsnorm>gemm:int4" (transition_family_key) and "rmsnorm>gemm" (transition_key by kinds).
// Empty strings when `key` is not a shape key (a side of it has no all-digit field).
struct TransitionLevels {
  std::string family;
  std::string kinds;
};
TransitionLevels transition_levels_of(const std::string& shape_key);
// Whether a key is FROM>TO where each side is a compute op kind (not allreduce, not other),
// alone or followed by ':' and a shape of letters, digits, '_' and ':'.
bool valid_transition_key(const std::string& key);

// Keys of the allreduce-in-its-context table, "STRATEGY:BYTES@FROM>TO": an allreduce of BYTES by
// STRATEGY measured between the compute op FROM before it and the compute op TO after it (after
// the ops the strategy absorbs), each side a transition_shape, e.g.
// "oneshot:32768@gemm:4096:2048:bf16>residual_add:4096".
std::string allreduce_context_key(const std::string& strategy, std::int64_t bytes, const Op& from, const Op& to);
// STRATEGY a calibratable strategy (comm/strategy_facts.hpp); BYTES a positive integer; then '@' and a
// valid_transition_key with both sides carrying a shape.
bool valid_allreduce_context_key(const std::string& key);

}  // namespace eaglesim
