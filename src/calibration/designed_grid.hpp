#pragma once
// The shapes `calibrate` measures beyond the traces': a designed grid per op kind, wide enough
// that the fitted models (cost/fitted_model.hpp) see both regimes of every kind and every width a
// planned model uses, so that a shape no trace had is priced by a fit made over its neighbours,
// not by an uncalibrated formula.
//   GEMM         rows {1, 2, 4, ..., 4096} (full: and the halfway points 3, 6, 12, ...) x every
//                (n, k, dtype) of the grid's models (gemm and lm_head); points of more than
//                kGridMaxGemmFlops are left out (the compute regime is set by the others, and the
//                five-minute budget by them)
//   attention    each head layout of the grid's models (GQA and MLA) x query tokens {1, 4, 16, 64}
//                x KV {512, 2048, 8192, 32768} (full: also 2, 8, 32 and 1024, 4096, 16384). One
//                request with a causal mask. Then the serving engines' batch x tree verify shapes
//                on every layout (GQA and MLA): batch {8, 64} (full: {2, 8, 32, 64}) x per request KV ragged
//                around {512, 4096} (full: {512, 2048, 8192}; at most kGridMaxBatchPositions in
//                all) x (steps, topk, draft tokens) {decode 1, chain (3,1,4), tree (5,4,8), tree
//                (6,8,32)}, the trees SGLang derives (trace/eagle_tree.hpp), as the replay runs them
//   grouped GEMM each MoE expert GEMM of the grid's models (n, k, dtype) x tokens per step over the
//                GEMM rows, routed as the generator routes them: tokens x experts per token rows
//                over the experts a uniform router touches (model/generator.hpp
//                experts_touched); points over kGridMaxGemmFlops or kGridMaxGroupedWeightBytes
//                of expert weights left out
//   elementwise  rmsnorm, residual_add, embedding at each hidden width, act at each intermediate
//                width, and the fused add + RMSNorm at each hidden width, x the GEMM rows
// The launch gap and the kernel transitions come from calibrate's other phases. The grid's models
// are generated in each weight format the calibration traces use (grid_weight_dtypes), so an
// int4 or fp8 calibration fits its own GEMM models over the same widths and rows.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace eaglesim {

enum class GridDensity { traces, coarse, full };
// "traces" (only the traces' shapes), "coarse", "full"; false on anything else.
bool parse_grid_density(const std::string& name, GridDensity& out);

inline constexpr double kGridMaxGemmFlops = 4e11;
inline constexpr double kGridMaxBatchPositions = 64.0 * 4096;
// A grouped GEMM point reading more expert weights than this is not one GPU's layer (a TP1
// Kimi-K2 layer touching all 384 experts: 22 GB); its copies would fill the GPU for one point.
inline constexpr double kGridMaxGroupedWeightBytes = 4e9;
// The name of the batch attention points (the fit takes them, the tables do not).
inline constexpr const char* kGridBatchAttentionName = "grid_attention_batch";

struct DesignedGrid {
  std::vector<Op> compute;      // gemm, attention, elementwise points
  std::vector<Op> add_rmsnorm;  // residual adds (tokens, hidden) measured as the fused add + RMSNorm kernel
  std::vector<std::vector<int>> verify_trees;  // the trees of the tree-mask attention points (parent lists)
};

const std::vector<std::int64_t>& grid_rows(GridDensity d);

// The weight formats of `traces` (a trace that does not say is bf16), each once, bf16 first:
// the formats the grid's models are generated in.
std::vector<DType> grid_weight_dtypes(const std::vector<Trace>& traces);

// The grid over the shapes of `family_traces` (traces of the grid's models, every step); empty
// for GridDensity::traces.
DesignedGrid designed_grid(const std::vector<Trace>& family_traces, GridDensity d);

}  // namespace eaglesim
