#pragma once
// The least an op must do: the fewest bytes it moves through HBM (weights read once, activations
// read and written once, the KV cache read once) and its FLOPs. Together with a device's read
// bandwidth and tensor throughput this gives the op's floor, the time no kernel can beat.
#include <array>
#include <vector>

#include "trace/op.hpp"

namespace eaglesim {

struct OpTraffic {
  double bytes = 0;
  double flops = 0;  // a multiply-add counts as 2
};

// Per op kind, indexed by static_cast<int>(OpKind).
using KindTraffic = std::array<OpTraffic, kOpKindCount>;

// Activations are bf16 (2 B), weights in the op's dtype.
//   gemm, lm_head:  n·k weights + m·k in + m·n out;                  2·m·n·k
//   grouped_gemm:   experts·n·k weights + tokens·(k + n);            2·tokens·n·k
//   attention gqa:  KV kv_len·kv_heads·(D + D) + Q in and O out;     2·(q·heads)·kv_len·(D + D)
//   attention mla:  KV kv_len·(lora + rope) + Q (lora + rope) in, O (lora) out per head;
//                                                                     2·(q·heads)·kv_len·((lora + rope) + lora)
//   elementwise:    tokens·hidden·2 B·(inputs + outputs): rmsnorm 1 + 1, residual_add 2 + 1,
//                   act 2 + 1 (gate and up in), embedding 1 row read + 1 written
//   allreduce, other: nothing (an allreduce's floor is the links, not HBM; `other` has no shape)
OpTraffic op_traffic(const Op& op);

// The fused residual-add + RMSNorm kernel (fused_add_rmsnorm: residual = x + residual;
// out = rmsnorm(residual) * w) of the pair whose rmsnorm is `norm`: x and residual read, the
// weight row read, residual and out written, tokens·hidden·2 B each (the weight row hidden·2 B);
// no flops, like every elementwise op.
OpTraffic add_rmsnorm_traffic(const Op& norm);

// One op of a step as the time reported for it sees it: the traffic of the kernel it runs under
// the kind that kernel's time is reported as. `counted` is false for an op that launches no kernel
// of its own (the rmsnorm of a fused add + RMSNorm, the ops a fusing allreduce absorbs): its
// traffic is the kernel's that runs it, or none, and its kind and traffic stay the defaults. A
// step's units are indexed by op index
// (backend/evaluate.hpp, step_unit_traffic).
struct UnitTraffic {
  bool counted = false;
  OpKind kind = OpKind::other;
  OpTraffic traffic;
};

// The counted units' traffic summed per kind.
KindTraffic sum_kind_traffic(const std::vector<UnitTraffic>& units);

}  // namespace eaglesim
