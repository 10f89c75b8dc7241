#include "trace/op_json.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "trace/trace_json.hpp"

namespace eaglesim {

namespace {

using ojson = nlohmann::ordered_json;

// The fields each kind carries, beside the common ones. Kept in one table so that the reader
// (which rejects anything else) and the documentation agree. Attention's batch, kv_lens and
// mask are version 2 (the reader says so when a version-1 file has them).
const std::vector<std::string>& kind_fields(OpKind kind) {
  static const std::vector<std::string> matmul{"m", "n", "k", "dtype"};
  static const std::vector<std::string> grouped{"tokens", "experts", "n", "k", "dtype"};
  static const std::vector<std::string> attention{"q_tokens", "kv_len",       "heads",    "kv_heads", "head_dim",
                                                  "variant",  "kv_lora_rank", "rope_dim", "batch",    "kv_lens",
                                                  "mask",     "kv_dtype"};
  static const std::vector<std::string> allreduce{"bytes", "dtype"};
  static const std::vector<std::string> rowwise{"tokens", "hidden"};
  static const std::vector<std::string> topk_select{"rows", "vocab", "topk"};
  static const std::vector<std::string> tree_build{"batch", "candidates", "tokens"};
  static const std::vector<std::string> sampling{"rows", "vocab"};
  static const std::vector<std::string> elementwise{"tokens", "hidden", "operands"};
  static const std::vector<std::string> all_to_all{"phase", "tokens", "hidden", "topk", "experts", "dtype"};
  static const std::vector<std::string> none{};
  switch (kind) {
    case OpKind::gemm:
    case OpKind::lm_head: return matmul;
    case OpKind::grouped_gemm: return grouped;
    case OpKind::attention: return attention;
    case OpKind::allreduce: return allreduce;
    case OpKind::rmsnorm:
    case OpKind::residual_add:
    case OpKind::act:
    case OpKind::embedding: return rowwise;
    case OpKind::topk_select: return topk_select;
    case OpKind::tree_build: return tree_build;
    case OpKind::sampling: return sampling;
    case OpKind::elementwise: return elementwise;
    case OpKind::all_to_all: return all_to_all;
    case OpKind::other:
    case OpKind::host_sync: return none;
  }
  return none;
}

std::string kind_list(int version) {
  std::string list;
  for (int k = 0; k < kOpKindCount; ++k)
    if (version >= kTraceVersionLatest || is_version1_kind(static_cast<OpKind>(k)))
      list += (list.empty() ? "" : ", ") + std::string(to_string(static_cast<OpKind>(k)));
  return list;
}

OpKind read_kind(const JsonCursor& kc, int version) {
  OpKind kind = OpKind::other;
  if (!kc.json().is_string() || !parse_op_kind(kc.json().get<std::string>(), kind))
    kc.fail("an op kind (one of " + kind_list(version) + ")");
  if (version < kTraceVersionLatest && !is_version1_kind(kind))
    fail_needs_version2(kc, fmt::format("op kind \"{}\"", to_string(kind)));
  return kind;
}

// Version 2: `batch` requests, each over kv_len positions or over its own entry of kv_lens, and
// the mask between a request's query tokens.
void read_attention_batch(const JsonCursor& c, int version, const TraceMeta& meta, Op& op) {
  for (const char* f : {"batch", "kv_lens", "mask"})
    if (c.has(f) && version < kTraceVersionLatest) fail_needs_version2(c.at(f), fmt::format("\"{}\"", f));
  if (auto b = c.find("batch")) op.batch = b->as_positive_int(kMaxBatch);
  if (auto l = c.find("kv_lens")) {
    if (c.has("kv_len")) c.at("kv_len").fail_raw("give kv_len (every request) or kv_lens (one per request), not both");
    l->expect_array();
    if (l->size() != static_cast<std::size_t>(op.batch))
      l->fail(fmt::format("one KV length per request (batch = {})", op.batch));
    op.kv_lens.reserve(l->size());
    for (std::size_t i = 0; i < l->size(); ++i) op.kv_lens.push_back(l->at(i).as_positive_int(kMaxKvLen));
    op.kv_len = *std::max_element(op.kv_lens.begin(), op.kv_lens.end());
  } else {
    op.kv_len = c.at("kv_len").as_positive_int(kMaxKvLen);
  }
  if (auto m = c.find("mask")) {
    const std::string name = m->as_enum(attention_mask_names());
    op.mask = name == "tree" ? AttentionMask::tree : name == "branches" ? AttentionMask::branches : AttentionMask::causal;
    if (op.mask == AttentionMask::tree) {
      const SpeculativeConfig* sc = meta.speculative ? &*meta.speculative : nullptr;
      if (!sc || sc->mask != VerifyMask::tree)
        m->fail_raw("\"tree\" needs the verify tree in meta.speculative (\"mask\": \"tree\" with its parents)");
      if (op.q_tokens != sc->num_draft_tokens)
        c.at("q_tokens").fail(fmt::format("the verify tree's num_draft_tokens ({}) with \"mask\": \"tree\"",
                                          sc->num_draft_tokens));
    }
  }
}

}  // namespace

void fail_needs_version2(const JsonCursor& c, const std::string& what) {
  c.fail_raw(fmt::format("{} needs version 2 (the file says \"version\": 1)", what));
}

DType read_dtype(const JsonCursor& c) {
  DType t;
  parse_dtype(c.as_enum(dtype_names()), t);
  return t;
}

Op parse_op(const JsonCursor& c, int version, const TraceMeta& meta) {
  c.expect_object();
  Op op;
  op.kind = read_kind(c.at("kind"), version);
  std::vector<std::string> allowed{"kind", "name", "layer", "us", "us_source", "site"};
  for (const auto& f : kind_fields(op.kind)) allowed.push_back(f);
  c.only_keys(allowed);

  op.name = c.at("name").as_string();
  if (auto l = c.find("layer")) op.layer = static_cast<int>(l->as_int(-1, 100000));
  if (auto u = c.find("us")) op.us = u->as_number(0.0, kMaxOpUs);
  if (auto s = c.find("us_source")) {
    op.us_source = s->as_enum({"measured", "aligned"}) == "aligned" ? UsSource::aligned : UsSource::measured;
    if (!op.us) s->fail_raw("us_source given without us");
  }
  if (auto s = c.find("site")) op.site = s->as_string();

  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head:
      op.m = c.at("m").as_positive_int(kMaxTokens);
      op.n = c.at("n").as_positive_int(kMaxDim);
      op.k = c.at("k").as_positive_int(kMaxDim);
      op.dtype = read_dtype(c.at("dtype"));
      break;
    case OpKind::grouped_gemm:
      op.tokens = c.at("tokens").as_positive_int(kMaxTokens);
      op.experts = c.at("experts").as_positive_int(kMaxExperts);
      op.n = c.at("n").as_positive_int(kMaxDim);
      op.k = c.at("k").as_positive_int(kMaxDim);
      op.dtype = read_dtype(c.at("dtype"));
      break;
    case OpKind::attention: {
      op.q_tokens = c.at("q_tokens").as_positive_int(kMaxTokens);
      op.heads = c.at("heads").as_positive_int(kMaxHeads);
      op.kv_heads = c.at("kv_heads").as_positive_int(kMaxHeads);
      op.head_dim = c.at("head_dim").as_positive_int(kMaxHeads * 4);
      if (auto v = c.find("variant"))
        op.variant = v->as_enum({"gqa", "mla"}) == "mla" ? AttentionVariant::mla : AttentionVariant::gqa;
      if (op.variant == AttentionVariant::mla) {
        op.kv_lora_rank = c.at("kv_lora_rank").as_positive_int(kMaxDim);
        op.rope_dim = c.at("rope_dim").as_nonnegative_int(kMaxDim);
      } else {
        for (const char* f : {"kv_lora_rank", "rope_dim"})
          if (c.has(f)) c.at(f).fail_raw("only allowed with \"variant\": \"mla\"");
        if (op.heads % op.kv_heads != 0)
          c.at("kv_heads").fail(fmt::format("a divisor of heads ({})", op.heads));
      }
      read_attention_batch(c, version, meta, op);
      if (auto kv = c.find("kv_dtype")) {  // the KV cache's format (the op's dtype); absent: bf16
        if (version < kTraceVersionLatest) fail_needs_version2(*kv, "\"kv_dtype\"");
        op.dtype = kv->as_enum({"bf16", "fp8"}) == "fp8" ? DType::fp8 : DType::bf16;
      }
      break;
    }
    case OpKind::allreduce:
      op.bytes = c.at("bytes").as_positive_int(kMaxBytes);
      op.dtype = read_dtype(c.at("dtype"));
      if (op.dtype == DType::int4) c.at("dtype").fail("bf16, fp16, fp32 or fp8 (allreduces cannot be int4)");
      if (op.bytes % static_cast<std::int64_t>(bytes_per_element(op.dtype)) != 0)
        c.at("bytes").fail(fmt::format("a multiple of the {} element size", to_string(op.dtype)));
      break;
    case OpKind::rmsnorm:
    case OpKind::residual_add:
    case OpKind::act:
    case OpKind::embedding:
      op.tokens = c.at("tokens").as_positive_int(kMaxTokens);
      op.hidden = c.at("hidden").as_positive_int(kMaxDim);
      break;
    case OpKind::other:
      if (!op.us) throw InputError::at(c.file(), c.path() + ".us",
                                       "missing required field (an \"other\" op needs its measured us)");
      break;
    case OpKind::topk_select:
      op.rows = c.at("rows").as_positive_int(kMaxTokens);
      op.vocab = c.at("vocab").as_positive_int(kMaxDim);
      op.topk = c.at("topk").as_positive_int(op.vocab);
      break;
    case OpKind::tree_build:
      op.batch = c.at("batch").as_positive_int(kMaxBatch);
      op.candidates = c.at("candidates").as_positive_int(kMaxTreeCandidates);
      op.tokens = c.at("tokens").as_positive_int(std::min<std::int64_t>(kMaxTokens, op.candidates + 1));
      break;
    case OpKind::sampling:
      op.rows = c.at("rows").as_positive_int(kMaxTokens);
      op.vocab = c.at("vocab").as_positive_int(kMaxDim);
      break;
    case OpKind::host_sync: break;
    case OpKind::elementwise:
      op.tokens = c.at("tokens").as_positive_int(kMaxTokens);
      op.hidden = c.at("hidden").as_positive_int(kMaxDim);
      op.operands = static_cast<std::int32_t>(c.at("operands").as_positive_int(kMaxElementwiseOperands));
      break;
    case OpKind::all_to_all:
      op.combine = c.at("phase").as_enum({"dispatch", "combine"}) == "combine";
      op.tokens = c.at("tokens").as_int(0, kMaxTokens);
      op.hidden = c.at("hidden").as_positive_int(kMaxDim);
      op.experts = c.at("experts").as_positive_int(kMaxExperts);
      op.topk = static_cast<std::int32_t>(c.at("topk").as_positive_int(op.experts));
      op.dtype = read_dtype(c.at("dtype"));
      if (op.combine ? op.dtype != DType::bf16 : op.dtype != DType::bf16 && op.dtype != DType::fp8)
        c.at("dtype").fail(op.combine ? "bf16 (the experts' outputs come back in bf16)"
                                      : "bf16 or fp8 (the dispatch's payload)");
      break;
  }
  return op;
}

ojson op_to_json(const Op& op) {
  ojson j;
  j["kind"] = to_string(op.kind);
  j["name"] = op.name;
  j["layer"] = op.layer;
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::lm_head:
      j["m"] = op.m; j["n"] = op.n; j["k"] = op.k; j["dtype"] = to_string(op.dtype);
      break;
    case OpKind::grouped_gemm:
      j["tokens"] = op.tokens; j["experts"] = op.experts; j["n"] = op.n; j["k"] = op.k;
      j["dtype"] = to_string(op.dtype);
      break;
    case OpKind::attention:
      j["q_tokens"] = op.q_tokens;
      if (op.kv_lens.empty()) j["kv_len"] = op.kv_len;
      j["heads"] = op.heads; j["kv_heads"] = op.kv_heads; j["head_dim"] = op.head_dim;
      j["variant"] = to_string(op.variant);
      if (op.variant == AttentionVariant::mla) { j["kv_lora_rank"] = op.kv_lora_rank; j["rope_dim"] = op.rope_dim; }
      if (op.batch != 1) j["batch"] = op.batch;
      if (!op.kv_lens.empty()) j["kv_lens"] = op.kv_lens;
      if (op.mask != AttentionMask::causal) j["mask"] = to_string(op.mask);
      if (op.dtype == DType::fp8) j["kv_dtype"] = to_string(op.dtype);
      break;
    case OpKind::allreduce:
      j["bytes"] = op.bytes; j["dtype"] = to_string(op.dtype);
      break;
    case OpKind::rmsnorm:
    case OpKind::residual_add:
    case OpKind::act:
    case OpKind::embedding:
      j["tokens"] = op.tokens; j["hidden"] = op.hidden;
      break;
    case OpKind::topk_select:
      j["rows"] = op.rows; j["vocab"] = op.vocab; j["topk"] = op.topk;
      break;
    case OpKind::tree_build:
      j["batch"] = op.batch; j["candidates"] = op.candidates; j["tokens"] = op.tokens;
      break;
    case OpKind::sampling:
      j["rows"] = op.rows; j["vocab"] = op.vocab;
      break;
    case OpKind::elementwise:
      j["tokens"] = op.tokens; j["hidden"] = op.hidden; j["operands"] = op.operands;
      break;
    case OpKind::all_to_all:
      j["phase"] = op.combine ? "combine" : "dispatch";
      j["tokens"] = op.tokens; j["hidden"] = op.hidden; j["topk"] = op.topk; j["experts"] = op.experts;
      j["dtype"] = to_string(op.dtype);
      break;
    case OpKind::other:
    case OpKind::host_sync: break;
  }
  if (!op.site.empty()) j["site"] = op.site;
  if (op.us) {
    j["us"] = *op.us;
    if (op.us_source != UsSource::measured) j["us_source"] = to_string(op.us_source);
  }
  return j;
}

}  // namespace eaglesim
