#include "trace/trace_json.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"
#include "io/json_cursor.hpp"

namespace eaglesim {

namespace {

using ojson = nlohmann::ordered_json;

DType read_dtype(const JsonCursor& c) {
  DType t;
  parse_dtype(c.as_enum(dtype_names()), t);
  return t;
}

// The fields each kind carries, beside the common ones. Kept in one table so that the reader
// (which rejects anything else) and the documentation agree.
const std::vector<std::string>& kind_fields(OpKind kind) {
  static const std::vector<std::string> matmul{"m", "n", "k", "dtype"};
  static const std::vector<std::string> grouped{"tokens", "experts", "n", "k", "dtype"};
  static const std::vector<std::string> attention{"q_tokens", "kv_len",  "heads",        "kv_heads",
                                                  "head_dim", "variant", "kv_lora_rank", "rope_dim"};
  static const std::vector<std::string> allreduce{"bytes", "dtype"};
  static const std::vector<std::string> rowwise{"tokens", "hidden"};
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
    case OpKind::other: return none;
  }
  return none;
}

Op parse_op(const JsonCursor& c) {
  c.expect_object();
  Op op;
  {
    auto kc = c.at("kind");
    std::string list;
    for (const auto& n : op_kind_names()) list += (list.empty() ? "" : ", ") + n;
    if (!kc.json().is_string() || !parse_op_kind(kc.json().get<std::string>(), op.kind))
      kc.fail("an op kind (one of " + list + ")");
  }
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
      op.kv_len = c.at("kv_len").as_positive_int(kMaxKvLen);
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
      j["q_tokens"] = op.q_tokens; j["kv_len"] = op.kv_len; j["heads"] = op.heads;
      j["kv_heads"] = op.kv_heads; j["head_dim"] = op.head_dim; j["variant"] = to_string(op.variant);
      if (op.variant == AttentionVariant::mla) { j["kv_lora_rank"] = op.kv_lora_rank; j["rope_dim"] = op.rope_dim; }
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
    case OpKind::other: break;
  }
  if (!op.site.empty()) j["site"] = op.site;
  if (op.us) {
    j["us"] = *op.us;
    if (op.us_source != UsSource::measured) j["us_source"] = to_string(op.us_source);
  }
  return j;
}

}  // namespace

const std::vector<std::string>& step_names() {
  static const std::vector<std::string> names{"verify", "draft", "decode"};
  return names;
}

const Step* Trace::find_step(const std::string& name) const {
  for (const auto& s : steps)
    if (s.name == name) return &s;
  return nullptr;
}

const Step& Trace::verify() const {
  const Step* s = find_step("verify");
  if (!s) throw InputError("trace has no \"verify\" step");
  return *s;
}

Trace parse_trace(const nlohmann::json& doc, const std::string& file) {
  JsonCursor root(doc, file);
  root.expect_object();
  root.only_keys({"format", "version", "meta", "steps"});
  if (root.at("format").as_string() != kTraceFormat)
    root.at("format").fail(fmt::format("\"{}\"", kTraceFormat));
  // Only one version exists; name it rather than a one-value range.
  if (root.at("version").as_positive_int() != kTraceVersion)
    root.at("version").fail(fmt::format("{} (the trace version this build reads)", kTraceVersion));

  Trace t;
  auto meta = root.at("meta");
  meta.only_keys({"model", "tp", "tokens", "dtype", "source", "notes", "draft_tokens", "kv_len",
                  "weight_dtype", "draft_model"});
  t.meta.model = meta.at("model").as_string();
  t.meta.tp = static_cast<int>(meta.at("tp").as_positive_int(kMaxTp));
  t.meta.tokens = static_cast<int>(meta.at("tokens").as_positive_int(kMaxTokens));
  t.meta.dtype = read_dtype(meta.at("dtype"));
  t.meta.source = meta.at("source").as_enum({"generated", "imported"});
  if (auto n = meta.find("notes")) t.meta.notes = n->as_string_allow_empty();
  if (auto d = meta.find("draft_tokens")) t.meta.draft_tokens = static_cast<int>(d->as_nonnegative_int(1024));
  if (auto k = meta.find("kv_len")) t.meta.kv_len = k->as_nonnegative_int(kMaxKvLen);
  if (auto w = meta.find("weight_dtype")) t.meta.weight_dtype = read_dtype(*w);
  if (auto d = meta.find("draft_model")) t.meta.draft_model = d->as_string();

  auto steps = root.at("steps");
  steps.expect_array();
  if (steps.size() == 0) steps.fail("at least one step");
  bool has_verify = false;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto sc = steps.at(i);
    sc.expect_object();
    sc.only_keys({"name", "measured_us", "ops"});
    Step s;
    s.name = sc.at("name").as_enum(step_names());
    if (auto m = sc.find("measured_us")) s.measured_us = m->as_positive_number(kMaxOpUs);
    auto ops = sc.at("ops");
    ops.expect_array();
    if (ops.size() == 0) ops.fail("at least one op");
    s.ops.reserve(ops.size());
    for (std::size_t j = 0; j < ops.size(); ++j) s.ops.push_back(parse_op(ops.at(j)));
    has_verify = has_verify || s.name == "verify";
    t.steps.push_back(std::move(s));
  }
  if (!has_verify) steps.fail("a step named \"verify\"");
  return t;
}

Trace read_trace(const std::string& path) { return parse_trace(JsonCursor::parse_file(path), path); }

std::string trace_to_string(const Trace& t) {
  ojson meta;
  meta["model"] = t.meta.model;
  meta["tp"] = t.meta.tp;
  meta["tokens"] = t.meta.tokens;
  meta["dtype"] = to_string(t.meta.dtype);
  meta["source"] = t.meta.source;
  if (t.meta.draft_tokens) meta["draft_tokens"] = *t.meta.draft_tokens;
  if (t.meta.kv_len) meta["kv_len"] = *t.meta.kv_len;
  if (t.meta.weight_dtype) meta["weight_dtype"] = to_string(*t.meta.weight_dtype);
  if (!t.meta.draft_model.empty()) meta["draft_model"] = t.meta.draft_model;
  if (!t.meta.notes.empty()) meta["notes"] = t.meta.notes;

  // Hand-laid-out: one op per line keeps files diffable and small.
  std::string out;
  out += "{\n";
  out += fmt::format("  \"format\": \"{}\",\n", kTraceFormat);
  out += fmt::format("  \"version\": {},\n", kTraceVersion);
  out += "  \"meta\": " + meta.dump() + ",\n";
  out += "  \"steps\": [\n";
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const Step& s = t.steps[i];
    out += "    {\"name\": " + ojson(s.name).dump();
    if (s.measured_us) out += ", \"measured_us\": " + ojson(*s.measured_us).dump();
    out += ", \"ops\": [\n";
    for (std::size_t j = 0; j < s.ops.size(); ++j) {
      out += "      " + op_to_json(s.ops[j]).dump();
      out += j + 1 < s.ops.size() ? ",\n" : "\n";
    }
    out += "    ]}";
    out += i + 1 < t.steps.size() ? ",\n" : "\n";
  }
  out += "  ]\n}\n";
  return out;
}

void write_trace(const Trace& trace, const std::string& path) {
  write_file_atomic(path, trace_to_string(trace));
}

}  // namespace eaglesim
