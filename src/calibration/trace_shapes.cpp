#include "calibration/trace_shapes.hpp"

#include <algorithm>

#include "backend/op_pricing.hpp"
#include "topology/calibration_keys.hpp"

namespace eaglesim {

bool is_elementwise(OpKind k) {
  return k == OpKind::rmsnorm || k == OpKind::residual_add || k == OpKind::act || k == OpKind::embedding ||
         k == OpKind::elementwise;
}

std::int64_t elementwise_table_width(const Op& op) {
  return op.kind == OpKind::elementwise ? op.hidden * std::max<std::int32_t>(1, op.operands) : op.hidden;
}

TraceShapes collect_trace_shapes(const std::vector<Trace>& traces) {
  TraceShapes s;
  for (const Trace& t : traces) {
    const int tp = std::max(1, t.meta.tp);
    for (const Step& step : t.steps)
      for (std::size_t i = 0; i < step.ops.size(); ++i) {
        const Op& op = step.ops[i];
        switch (op.kind) {
          case OpKind::gemm:
          case OpKind::lm_head: {
            int& widest = s.gemm[{op.n, op.k, static_cast<int>(op.dtype)}];
            widest = std::max(widest, tp);
            s.gemm_m.insert(op.m);
            if (!s.has_gemm) { s.first_gemm = op; s.has_gemm = true; }
            break;
          }
          case OpKind::attention: {
            // A batch is priced as one request over every request's KV positions
            // (cost/compute_model.cpp), so that is the shape measured.
            TraceShapes::AttentionUse& use = s.attention[attention_calibration_key_q(op)];
            const auto positions = static_cast<std::int64_t>(op.kv_len_total());
            if (use.kv.empty()) {
              use.tmpl = op;
              use.tmpl.batch = 1;
              use.tmpl.kv_lens.clear();
              use.tmpl.kv_len = positions;
              use.tmpl.mask = AttentionMask::causal;
            }
            use.kv.insert(positions);
            use.tp = std::max(use.tp, tp);
            break;
          }
          case OpKind::allreduce:
            s.allreduce.insert({op.bytes, static_cast<int>(op.dtype)});
            if (i > 0 && (step.ops[i - 1].kind == OpKind::gemm || step.ops[i - 1].kind == OpKind::lm_head)) {
              const Op& g = step.ops[i - 1];
              ++s.before_allreduce[{g.m, g.n, g.k, static_cast<int>(g.dtype)}];
            }
            if (i + 1 < step.ops.size() && step.ops[i + 1].kind == OpKind::residual_add &&
                step.ops[i + 1].tokens * step.ops[i + 1].hidden * 2 == op.bytes)
              s.fused_hidden.insert(step.ops[i + 1].hidden);
            break;
          case OpKind::other:
            if (op.us) s.other_us.insert(*op.us);
            s.other_tp = std::max(s.other_tp, tp);
            break;
          case OpKind::grouped_gemm:
            break;  // no table in the simulator: priced by its model (see docs/fidelity.md)
          default:
            if (is_elementwise(op.kind)) {
              TraceShapes::ElementwiseUse& use = s.elementwise[{static_cast<int>(op.kind), elementwise_table_width(op)}];
              use.tokens.insert(op.tokens);
              use.tp = std::max(use.tp, tp);
            }
            if (fusable_add_norm(step.ops, i)) {
              TraceShapes::ElementwiseUse& use = s.add_rmsnorm[op.hidden];
              use.tokens.insert(op.tokens);
              use.tp = std::max(use.tp, tp);
            }
            break;
        }
      }
  }
  return s;
}

}  // namespace eaglesim
