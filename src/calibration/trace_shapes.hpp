#pragma once
// What a set of traces contains, deduplicated: the GEMM shapes, attention layouts and KV lengths,
// elementwise sizes, spin times, allreduce sizes, each with the widest tensor-parallel degree that
// uses it (the number of GPUs whose slowest time its calibration entries take). The plan measures
// these points; the tables mark a point a trace uses as exact.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "trace/trace.hpp"

namespace eaglesim {

// The kinds priced by the elementwise tables (tokens x hidden).
bool is_elementwise(OpKind k);
// The width an element-wise op's table is kept at: its hidden, or for an engine's `elementwise`
// kernel hidden x operands (the kernel streams operands tensors of tokens x hidden; calibrate
// measures it as one op of that width and one operand, the same bytes through the same kernel).
std::int64_t elementwise_table_width(const Op& op);

// What the traces contain, deduplicated.
struct TraceShapes {
  std::map<std::tuple<std::int64_t, std::int64_t, int>, int> gemm;      // n, k, dtype -> widest tp using it
  std::set<std::int64_t> gemm_m;
  // The widest tensor-parallel degree among the traces that use a shape is the number of GPUs
  // whose slowest time its entries take (CalibrationRequest::compute_gpus).
  struct AttentionUse {
    Op tmpl;                       // the first op with this q-key
    std::set<std::int64_t> kv;     // kv lens used
    int tp = 1;                    // widest tp using it
  };
  struct ElementwiseUse {
    std::set<std::int64_t> tokens;  // token counts used
    int tp = 1;                     // widest tp using it
  };
  std::map<std::string, AttentionUse> attention;                          // q-key ->
  std::map<std::pair<int, std::int64_t>, ElementwiseUse> elementwise;     // (kind, hidden) ->
  // hidden -> residual adds followed by the RMSNorm of the same rows (one fused kernel in the
  // replay, the table kAddRmsnormTable)
  std::map<std::int64_t, ElementwiseUse> add_rmsnorm;
  std::set<double> other_us;
  std::set<std::pair<std::int64_t, int>> allreduce;                       // bytes, dtype
  std::set<std::int64_t> fused_hidden;                                    // hidden of rows after an allreduce
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int>, int> before_allreduce;  // GEMM -> count
  Op first_gemm;
  bool has_gemm = false;
  int other_tp = 1;  // widest tp of the traces with `other` ops
};

TraceShapes collect_trace_shapes(const std::vector<Trace>& traces);

}  // namespace eaglesim
