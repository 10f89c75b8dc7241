#pragma once
// Iteration costs from the engine-faithful step models: the generated engine traces of a model
// on a topology (gen --engine-cycle with the engine's kernels and its host work) priced by the
// simulator under one allreduce strategy (the engine's own dispatch, `sglang` or `vllm`), at a
// grid of batch sizes and KV lengths for decode and the speculative cycle, and of token counts
// and contexts for prefill; between grid points linearly (a forward's cost is close to linear in
// the batch between neighbouring sizes, and its attention linear in the KV length), beyond the
// last point by the last segment's slope. Building the grid is most of a serve run's time; the
// simulation then reads it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "model/model_config.hpp"
#include "serve/iteration_costs.hpp"
#include "topology/topology.hpp"
#include "trace/serving_engine.hpp"
#include "trace/speculative.hpp"

namespace eaglesim {

struct StepCostRequest {
  const ModelConfig* target = nullptr;
  const ModelConfig* draft = nullptr;           // the EAGLE-3 head; null: plain decoding (or mtp)
  const Topology* topology = nullptr;
  int tp = 1;
  // The layout (GenOptions): expert-parallel groups, data-parallel attention (the grid's batch is
  // then the instance's, ceil(batch / tp) requests on each rank), and the target's own MTP layer
  // as the draft (with `speculative`, instead of `draft`).
  int ep = 1;
  bool dp_attention = false;
  bool mtp = false;
  std::optional<LinearFormats> formats;         // the checkpoint's; absent: weight_dtype
  DType weight_dtype = DType::bf16;
  DType kv_cache_dtype = DType::bf16;
  ServingEngine engine = ServingEngine::sglang;
  std::string strategy;                          // the allreduce strategy (default: the engine's own)
  std::optional<SpeculativeConfig> speculative;  // with draft
  RunOptions options;                            // options.a2a: the MoE all-to-all strategy (DP attention)
  int max_batch = 256;                          // the grid's largest batch
  std::int64_t max_kv = 8192;                   // the grid's longest context
  std::int64_t max_prefill_tokens = 8192;       // the grid's largest prefill forward
};

class StepCostTable : public IterationCosts {
 public:
  // Prices the grid. Throws InputError when the strategy cannot run on the topology or the model
  // cannot be laid out at this TP (the generator's message).
  explicit StepCostTable(const StepCostRequest& request);

  double decode_us(int batch, double kv) const override;
  double cycle_us(int batch, double kv) const override;
  double prefill_us(const std::vector<PrefillChunk>& chunks, bool speculative) const override;

  const std::vector<int>& batches() const { return batches_; }
  const std::vector<double>& kvs() const { return kvs_; }
  std::size_t points_priced() const { return points_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  // `table` ([batch index * kvs + kv index]) between the grid's points, linearly in both.
  double bilinear(const std::vector<double>& table, int batch, double kv) const;

  std::vector<int> batches_;
  std::vector<double> batch_axis_;  // batches_ as the interpolation's axis
  std::vector<double> kvs_;
  std::vector<double> decode_, cycle_;  // [batch index * kvs + kv index]
  // Prefill of one fresh prompt of prefill_tokens_[i] tokens: its time, its attention's share, and
  // the attention's extra time per position of prefix before it.
  std::vector<double> prefill_tokens_, prefill_us_, prefill_attention_us_, prefill_attention_per_prefix_us_;
  double draft_prefill_factor_ = 1.0;
  std::size_t points_ = 0;
  std::vector<std::string> notes_;
};

// The allreduce strategy an engine runs its allreduces with: its own dispatch.
std::string engine_strategy(ServingEngine engine);

}  // namespace eaglesim
