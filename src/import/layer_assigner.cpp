#include "import/layer_assigner.hpp"

namespace eaglesim {

int assign_layers(std::vector<Op>& ops) {
  int n_ar = 0;
  for (const auto& op : ops) n_ar += op.kind == OpKind::allreduce;
  if (n_ar == 0) return 0;
  const int lead = n_ar % 2;  // an allreduce before the layers (embedding)
  const int layers = (n_ar - lead) / 2;

  int seen = 0;
  int prev_ar_layer = -2;  // layer of the allreduce just before, for the residual add after it
  for (auto& op : ops) {
    int layer = seen < lead ? -1 : (seen - lead) / 2;
    if (op.kind == OpKind::allreduce) {
      if (seen >= lead) op.site = (seen - lead) % 2 == 0 ? "attn_out" : "mlp_out";
      ++seen;
      prev_ar_layer = layer;
    } else if (op.kind == OpKind::residual_add && prev_ar_layer != -2) {
      layer = prev_ar_layer;
      prev_ar_layer = -2;
    } else {
      prev_ar_layer = -2;
    }
    op.layer = layer >= layers || op.kind == OpKind::embedding ? -1 : layer;
    // A GEMM after the last layer projects onto the vocabulary.
    if (layer >= layers && op.kind == OpKind::gemm) {
      op.kind = OpKind::lm_head;
      op.name = "lm_head";
    }
  }

  name_layer_roles(ops);
  return layers;
}

void name_layer_roles(std::vector<Op>& ops) {
  // Role names inside each layer, from the order of the block.
  int current = -1;
  bool attention = false, attn_ar = false, act = false;
  bool after_ar = false;
  for (auto& op : ops) {
    if (op.layer != current) {
      current = op.layer;
      attention = attn_ar = act = after_ar = false;
    }
    if (op.layer < 0) continue;
    const bool was_after_ar = after_ar;
    after_ar = false;
    switch (op.kind) {
      case OpKind::rmsnorm: op.name = attention ? "post_attn_norm" : "input_norm"; break;
      case OpKind::gemm:
        op.name = !attention ? "qkv_proj" : !attn_ar ? "o_proj" : !act ? "gate_up_proj" : "down_proj";
        break;
      case OpKind::attention: op.name = "attn"; attention = true; break;
      case OpKind::act: op.name = "silu_mul"; act = true; break;
      case OpKind::allreduce:
        op.name = op.site == "mlp_out" ? "mlp_allreduce" : "attn_allreduce";
        if (op.site == "attn_out") attn_ar = true;
        after_ar = true;
        break;
      case OpKind::residual_add:
        if (was_after_ar) op.name = act ? "mlp_residual" : "attn_residual";
        break;
      default: break;
    }
  }
}

}  // namespace eaglesim
