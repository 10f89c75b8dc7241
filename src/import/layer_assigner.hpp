#pragma once
// Numbers the decoder layers of one step from its allreduce pattern and names the ops by their
// role in the layer. At TP>1 each layer ends its attention block and its MLP block with an
// allreduce, so allreduces come in pairs (attn_out, mlp_out); the residual add right after an
// allreduce closes the same block. An odd count means one allreduce outside the layers (a
// vocab-parallel embedding) before them. Ops after the last pair (final norm, lm_head) and
// before the first layer's ops get layer -1. Role names (qkv_proj, o_proj, gate_up_proj,
// down_proj, input_norm, ...) follow the Llama-style order; ops that do not fit keep the name
// they were imported with.
#include <vector>

#include "trace/op.hpp"

namespace eaglesim {

// Returns the number of layers found (0 when the step has no allreduces: then all ops keep
// layer -1 and their names).
int assign_layers(std::vector<Op>& step_ops);

// The role names alone, for ops whose `layer` is already set (the model-config path numbers
// layers from the repetition of the kernel sequence, not from allreduces).
void name_layer_roles(std::vector<Op>& step_ops);

}  // namespace eaglesim
