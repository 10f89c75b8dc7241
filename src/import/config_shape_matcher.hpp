#pragma once
// Shapes for kernels that carry none. Kernels replayed from a CUDA graph (how SGLang and vLLM
// run decode and verify) have no CPU op with `Input Dims`, only a name; but a decoder step is
// the same layer N times, and the model config says what N is and what every GEMM, attention,
// norm and allreduce of a layer computes. The matcher finds the run of num_hidden_layers
// identical kernel patterns in a step, numbers the layers from it (so layers are numbered at
// TP=1, where there are no allreduces to count), and gives each op of a layer the shape of its
// role: the four GEMMs in order are qkv_proj, o_proj, gate_up_proj, down_proj; the attention
// has the rank's heads and the recorded KV length; norms, adds and the activation are
// [rows, hidden] or [rows, intermediate / tp]; allreduces move rows x hidden x 2 bytes.
// Kernels that fit no role (copies, RoPE, unknown kernels) keep their measured µs as `other`.
#include <cstdint>
#include <string>
#include <vector>

#include "import/imported_op.hpp"
#include "trace/rank_layer_shape.hpp"

namespace eaglesim {

struct RecordedRun {
  int tp = 1;                 // tensor-parallel ranks of the recorded run
  std::int64_t tokens = 1;    // query tokens per request in the step (1 + draft tokens)
  std::int64_t batch = 1;     // requests in the step
  std::int64_t kv_len = 0;    // KV positions each request attends over
  std::int64_t rows() const { return tokens * batch; }
};

struct ConfigMatch {
  int layers = 0;
  std::size_t first = 0;     // index (within the step) of the first op of layer 0
  std::size_t period = 0;    // ops per layer
  int typed = 0;             // ops given a shape
  bool shapes = false;       // false: the config's architecture has no layer template (ops kept measured)
};

// `step` indexes `ops` (one step of one rank, in order). Sets kind, shape, layer and site of the
// ops it recognises. Throws InputError naming `file` and the config file when the step holds no
// run of exactly `layer.layers` repeating layers, or when a layer's GEMMs and attention are not
// what the config's architecture has.
ConfigMatch match_config_shapes(std::vector<ImportedOp>& ops, const std::vector<std::size_t>& step,
                                const RankLayerShape& layer, const RecordedRun& run, const std::string& file);

}  // namespace eaglesim
