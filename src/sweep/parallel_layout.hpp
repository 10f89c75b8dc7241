#pragma once
// The sweep's parallel-layout axis: how a model is laid over a TP group's ranks. Tensor
// parallelism alone (SGLang --tp N), with expert parallelism (--ep-size E: the routed experts over
// E groups of N / E ranks, the MoE's allreduce kept), or with data-parallel attention
// (--enable-dp-attention --dp N, which needs E = N: attention, dense layers and lm_head unsharded
// on each rank's share of the requests, the MoE reached by all-to-all dispatch and combine).
// Whether the GPUs sit in one node or several is the topology's: a layout of 16 ranks runs on a
// two-node topology, not on an eight-GPU one.
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace eaglesim {

struct ParallelLayout {
  int tp = 1;                 // ranks in the group (GPUs a deployment of this layout takes)
  int ep = 1;                 // expert-parallel groups; 1: TP-MoE
  bool dp_attention = false;  // data-parallel attention (needs ep == tp)
  bool operator==(const ParallelLayout& o) const {
    return tp == o.tp && ep == o.ep && dp_attention == o.dp_attention;
  }
};

// "TP16", "TP16 EP2", "TP16 EP16 DPA": the label the tables and JSON carry.
std::string layout_label(const ParallelLayout& l);

// Plain tensor-parallel layouts, one per TP.
std::vector<ParallelLayout> tp_layouts(const std::vector<int>& tps);

// Whether every layout is tensor parallelism alone (no EP, no DP attention).
bool tensor_parallel_only(const std::vector<ParallelLayout>& layouts);

// A combination of the --tp, --ep and --dp-attention lists that is not a layout, and why.
struct SkippedLayout {
  ParallelLayout layout;
  std::string reason;
};

struct LayoutAxis {
  std::vector<ParallelLayout> layouts;  // by TP, then EP, then without DP attention first
  std::vector<SkippedLayout> skipped;   // combinations that are not layouts (EP not dividing TP, ...)
};

// Every combination of the lists that is a layout for some model. InputError naming --ep or
// --dp-attention when none is.
LayoutAxis build_layout_axis(const std::vector<int>& tps, const std::vector<int>& eps,
                             const std::vector<bool>& dp_attention);

// Why `model` cannot take `layout` beyond the TP sharding check_tp makes (no routed experts to
// split, EP not dividing them), or "" when it can.
std::string layout_problem(const ModelConfig& model, const ParallelLayout& layout);

}  // namespace eaglesim
