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
  // The small per-cycle ops of speculative decoding (trace version 2; docs/trace-format.md).
  topk_select,   // rows, vocab, topk: softmax over fp32 logits and the top-k tokens of each row
  tree_build,    // batch, candidates, tokens: pick tokens - 1 of candidates drafts, build the verify tree
  sampling,      // rows, vocab: the target's sampling / acceptance over fp32 logits
  host_sync,     // none: the accepted tokens copied to the host and the host's wait for them
  // A serving engine's small memory-bound kernel besides the ones above (trace version 2): RoPE,
  // the KV-cache store, copies, q/k norms' reshapes, router top-k, MoE align/sort and combine,
  // activation quantisation. tokens, hidden, operands: it reads and writes `operands` bf16
  // tensors of tokens x hidden; `name` says which kernel it is.
  elementwise,
  // Expert parallelism's exchange of a MoE layer's tokens (trace version 2): tokens, hidden, topk,
  // experts, phase (dispatch: the rank's tokens out to the ranks of their routed experts, bf16 or
  // fp8 payload; combine: the experts' bf16 outputs back), dtype. Priced by the --a2a strategy.
  all_to_all,
};

const char* to_string(OpKind k);
bool parse_op_kind(const std::string& name, OpKind& out);
const std::vector<std::string>& op_kind_names();
constexpr int kOpKindCount = 16;
// Kinds a version-1 trace may hold: every kind before topk_select.
bool is_version1_kind(OpKind k);

enum class AttentionVariant { gqa, mla };
const char* to_string(AttentionVariant v);

// Which of a request's query tokens each query token sees (all of them see the request's KV):
//   causal:   token j sees tokens 0..j (a chain of drafts, decode, a draft-extend pass)
//   tree:     token i sees its ancestors and itself in the verify tree (TraceMeta::speculative)
//   branches: every token sees only itself (the top-k branches a draft forward extends)
enum class AttentionMask { causal, tree, branches };
const char* to_string(AttentionMask m);
const std::vector<std::string>& attention_mask_names();

// Where a measured duration came from. `aligned`: a collective's cost estimated from several
// ranks' timelines (latest start to common end), not the raw kernel duration, which includes
// waiting for the slowest rank.
enum class UsSource { measured, aligned };
const char* to_string(UsSource s);

struct Op {
  // The small fields first, together: the simulator walks a step's ops once per plan, so the
  // struct's size is what that walk reads.
  OpKind kind = OpKind::other;
  int layer = -1;                 // -1: not inside a decoder layer (embedding, final norm, lm_head)
  UsSource us_source = UsSource::measured;
  AttentionVariant variant = AttentionVariant::gqa;  // attention
  AttentionMask mask = AttentionMask::causal;        // attention
  bool combine = false;       // all_to_all: the combine (experts' outputs back); false: the dispatch
  DType dtype = DType::bf16;  // GEMMs, allreduces: their elements; attention: the KV cache's format
  std::string name;
  std::optional<double> us;       // measured duration on the recording machine
  std::string site;               // attn_out, mlp_out, embed, ... (empty: none)

  // Shape fields; which are used depends on kind.
  std::int64_t m = 0, n = 0, k = 0;     // gemm, lm_head; grouped_gemm uses n, k
  std::int64_t tokens = 0;              // grouped_gemm, rmsnorm, residual_add, act, embedding, elementwise, tree_build
  std::int64_t experts = 0;             // grouped_gemm; all_to_all: routed experts in all
  std::int64_t hidden = 0;              // rmsnorm, residual_add, act, embedding, elementwise
  std::int64_t bytes = 0;               // allreduce
  // attention: `batch` requests of q_tokens query tokens each. Every request attends over kv_len
  // positions, or, when kv_lens is not empty, request r over kv_lens[r] (then kv_len is the
  // longest of them).
  std::int64_t q_tokens = 0, kv_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
  std::int64_t kv_lora_rank = 0, rope_dim = 0;  // mla only
  std::int64_t candidates = 0;                  // tree_build: drafts scored per request
  std::int32_t batch = 1;                       // attention, tree_build: requests (at most 4096)
  // topk_select, sampling: rows of `vocab` fp32 logits (at most 2^22 and 2^24); topk_select
  // keeps `topk` per row. tree_build: per request, tokens - 1 drafts chosen among `candidates`.
  // all_to_all: topk routed experts per token.
  std::int32_t rows = 0, vocab = 0, topk = 0;
  std::int32_t operands = 0;                    // elementwise: tensors of tokens x hidden read + written
  std::vector<std::int64_t> kv_lens;            // attention: per request; empty: kv_len for all

  // Derived quantities used by inspect, the cost models and the report.
  double flops() const;          // multiply-adds count as 2
  double weight_bytes() const;   // bytes of weights read (gemm, grouped_gemm, lm_head, embedding rows)
  double io_bytes() const;       // bytes of activations/KV read + written (memory traffic besides weights)
  double kv_len_total() const;   // attention: KV positions over all requests
  double kv_element_bytes() const;  // attention: bytes per KV-cache element (1 for an fp8 cache, else 2)
  bool has_version2_fields() const;  // a kind or field only trace version 2 has
  bool is_comm() const { return kind == OpKind::allreduce || kind == OpKind::all_to_all; }
  bool is_matmul() const {
    return kind == OpKind::gemm || kind == OpKind::grouped_gemm || kind == OpKind::lm_head;
  }
  std::string shape_string() const;  // "m=4 n=3072 k=4096 bf16", "32768 B bf16", ...
};

}  // namespace eaglesim
