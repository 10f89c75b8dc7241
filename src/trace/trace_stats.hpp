#pragma once
// Per-step summary of a trace: what `eaglesim inspect` prints.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.hpp"

namespace eaglesim {

struct StepStats {
  std::array<int, kOpKindCount> ops_by_kind{};
  std::map<std::int64_t, int> allreduce_bytes;  // size -> count
  double gemm_flops = 0;    // gemm + grouped_gemm + lm_head
  double weight_bytes = 0;  // weights read by those
  std::map<std::string, double> weight_bytes_by_dtype;  // the same by their format ("bf16", "fp8", "int4")
  double measured_us = 0;   // sum of op us where present
  int ops_with_us = 0;
  int layers = 0;           // distinct layer indices >= 0
  std::array<int, kOpKindCount> layer_ops_by_kind{};  // ops inside decoder layers (layer >= 0)
  std::vector<std::string> first_layer_elementwise;   // names of the first layer's elementwise ops, in order
  int op_count = 0;
};

StepStats compute_stats(const Step& step);
nlohmann::ordered_json stats_to_json(const Trace& trace);
std::string stats_to_text(const Trace& trace);

}  // namespace eaglesim
