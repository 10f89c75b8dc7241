#pragma once
// The weight formats a checkpoint ships, read from the `quantization_config` block of its
// config.json as the serving engines read it: per class of linear layer (attention, dense MLP,
// shared experts, routed experts) which format its weights are stored in. The router, the
// embedding and lm_head stay bf16 (the engines never quantise the router; every checkpoint below
// leaves lm_head out).
//
// quant_method (the rules and the checkpoints that ship each: docs/trace-format.md, "Weight
// formats"):
//   fp8                 DeepSeek-V3, Kimi-K2-Instruct, Qwen3-*-FP8: e4m3 weights, per 128x128
//                       block (weight_block_size) or per tensor, activations quantised on the fly
//                       (activation_scheme dynamic); `modules_to_not_convert` / `ignored_layers`
//                       exclude modules.
//   compressed-tensors  llm-compressor checkpoints (RedHatAI FP8-dynamic, W4A16; Kimi-K2-Thinking's
//                       int4 experts): `config_groups` each name `targets` ("Linear" or "re:"
//                       regexes) and their `weights` (8-bit float: fp8; 4-bit int: int4 with its
//                       group_size); `ignore` excludes modules; `kv_cache_scheme` quantises the
//                       KV cache.
//   awq, gptq           4-bit integer weights in groups (`bits`, `group_size`); AWQ's
//                       `modules_to_not_convert` excludes modules.
//   modelopt            NVIDIA ModelOpt FP8 (`quant_algo` FP8); `exclude_modules` / `ignore`;
//                       `kv_cache_quant_algo` FP8 quantises the KV cache.
//   mxfp4               gpt-oss: the routed experts' weights as 4-bit e2m1 values with one e8m0
//                       scale byte per 32 (4.25 bits a weight); every other layer bf16, as the
//                       checkpoints' quantizer converts only the experts. Priced as int4 weights,
//                       stored with their scale bytes; `modules_to_not_convert` excludes modules. A
//                       model without routed experts is refused.
// NVFP4 and 8-bit integer weights are not modelled: the block is refused naming the field, and
// `--weight-dtype` prices the checkpoint in a modelled format.
//
// Module names are matched as the engines match them (SGLang quantization/utils.py, vLLM
// compressed_tensors_utils.py): "re:" + a regex matched from the start of the name; a pattern with
// '*' as a glob over the whole name; any other pattern as a part of the name.
#include <optional>
#include <string>

#include "core/dtype.hpp"
#include "io/json_cursor.hpp"

namespace eaglesim {

// The formats of a target's linear layers by class.
struct LinearFormats {
  DType attention = DType::bf16;       // QKV and O projections (MLA: its q/kv projections and absorbed BMMs)
  DType dense_mlp = DType::bf16;       // dense layers' gate/up and down
  DType shared_experts = DType::bf16;  // MoE layers' shared experts
  DType routed_experts = DType::bf16;  // MoE layers' routed experts
  // Bytes of block scales stored beside each routed-expert weight (mxfp4: one e8m0 byte per 32
  // weights, 1/32); 0 where a format's scales are not counted. Weights held, not GEMM traffic:
  // the trace's ops carry the dtype alone.
  double routed_scale_bytes = 0.0;
  static LinearFormats all(DType d) { return {d, d, d, d}; }
  bool uniform() const;
  // The one dtype that stands for the set (a trace's meta.weight_dtype): the common one, else the
  // routed experts' of an MoE model (most of its weights), else the dense MLP's.
  DType summary(bool moe) const { return uniform() ? attention : moe ? routed_experts : dense_mlp; }
  bool operator==(const LinearFormats& o) const;
  // "attention fp8, dense MLP fp8, shared experts fp8, routed experts int4"; with `moe` false the
  // experts are left out, and a uniform set is one word ("fp8").
  std::string describe(bool moe) const;
};

struct CheckpointQuantization {
  std::string method;             // quant_method as written
  LinearFormats formats;
  int group_size = 0;             // int4: weights per scale; fp8: block rows (0: per tensor or channel)
  bool activations_quantized = false;  // the linear layers quantise their inputs (fp8 w8a8)
  std::optional<DType> kv_cache;  // the checkpoint's KV-cache format when it names one (fp8)
  std::string summary;            // what was read, in words (inspect, the trace's notes)
};

// The block at `root`'s "quantization_config", or nothing without one; module names are those of
// the first dense and the first MoE layer. Throws InputError naming the field on a block that is
// malformed or of a format not modelled.
std::optional<CheckpointQuantization> read_checkpoint_quantization(const JsonCursor& root, int dense_layer,
                                                                   int moe_layer);

// Whether `pattern` (as a quantization_config lists modules) names `module`.
bool module_pattern_matches(const std::string& pattern, const std::string& module);

}  // namespace eaglesim
