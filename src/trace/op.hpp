#pragma once
// One operation of a traced forward pass, as one rank sees it. Kinds are semantic (not kernel
// names) so that a strategy can fuse (allreduce + residual add + RMSNorm) and a cost model can
// price shapes it has never seen. Which fields are meaningful depends on the kind; the trace
// format (docs/trace-format.md) lists them, and trace_json.cpp enforces exactly that list.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace eaglesim {

enum class OpKind {
  gemm,          // m, n, k, dtype (dtype = what the weights are stored as)
  grouped_gemm,  // MoE experts: tokens (routed rows = T * top_k), experts touched, k, n, dtype
  attention,     // q_tokens, kv_len, heads, kv_heads, head_dim; variant gqa | mla (+ kv_lora_rank, rope_dim)
  allreduce,     // bytes, dtype
  rmsnorm,       // tokens, hidden
  residual_add,  // tokens, hidden
  act,           // tokens, hidden (output width of SiLU(gate) * up)
  embedding,     // tokens, hidden
  lm_head,       // m, n, k, dtype
  other,         // us (measured) is required
};

const char* to_string(OpKind k);
bool parse_op_kind(const std::string& name, OpKind& out);
const std::vector<std::string>& op_kind_names();
constexpr int kOpKindCount = 10;

enum class AttentionVariant { gqa, mla };
const char* to_string(AttentionVariant v);

// Where a measured duration came from. `aligned`: a collective's cost estimated from several
// ranks' timelines (latest start to common end), not the raw kernel duration, which includes
// waiting for the slowest rank.
enum class UsSource { measured, aligned };
const char* to_string(UsSource s);

struct Op {
  OpKind kind = OpKind::other;
  std::string name;
  int layer = -1;                 // -1: not inside a decoder layer (embedding, final norm, lm_head)
  std::optional<double> us;       // measured duration on the recording machine
  UsSource us_source = UsSource::measured;
  std::string site;               // attn_out, mlp_out, embed, ... (empty: none)

  // Shape fields; which are used depends on kind.
  std::int64_t m = 0, n = 0, k = 0;     // gemm, lm_head; grouped_gemm uses n, k
  std::int64_t tokens = 0;              // grouped_gemm, rmsnorm, residual_add, act, embedding
  std::int64_t experts = 0;             // grouped_gemm
  std::int64_t hidden = 0;              // rmsnorm, residual_add, act, embedding
  std::int64_t bytes = 0;               // allreduce
  // attention
  std::int64_t q_tokens = 0, kv_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
  AttentionVariant variant = AttentionVariant::gqa;
  std::int64_t kv_lora_rank = 0, rope_dim = 0;  // mla only
  DType dtype = DType::bf16;

  // Derived quantities used by inspect, the cost models and the report.
  double flops() const;          // multiply-adds count as 2
  double weight_bytes() const;   // bytes of weights read (gemm, grouped_gemm, lm_head, embedding rows)
  double io_bytes() const;       // bytes of activations/KV read + written (memory traffic besides weights)
  bool is_comm() const { return kind == OpKind::allreduce; }
  bool is_matmul() const {
    return kind == OpKind::gemm || kind == OpKind::grouped_gemm || kind == OpKind::lm_head;
  }
  std::string shape_string() const;  // "m=4 n=3072 k=4096 bf16", "32768 B bf16", ...
};

}  // namespace eaglesim
