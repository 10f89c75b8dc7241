#include "trace/trace_json.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"
#include "io/json_cursor.hpp"
#include "trace/op_json.hpp"

namespace eaglesim {

namespace {

using ojson = nlohmann::ordered_json;

const char* speculative_field_name(SpecField f) {
  switch (f) {
    case SpecField::method: return "method";
    case SpecField::num_steps: return "num_steps";
    case SpecField::eagle_topk: return "eagle_topk";
    case SpecField::num_draft_tokens: return "num_draft_tokens";
    case SpecField::mask: return "mask";
    case SpecField::parents: return "parents";
  }
  return "method";
}

// meta.speculative: SGLang's configuration and the verify tree, checked by the rules of
// trace/speculative.hpp (the path names the field, or the parent list's element, at fault).
SpeculativeConfig parse_speculative(const JsonCursor& c) {
  c.expect_object();
  c.only_keys({"method", "num_steps", "eagle_topk", "num_draft_tokens", "mask", "parents"});
  SpeculativeConfig sc;
  const std::string method = c.at("method").as_enum(spec_method_names());
  sc.method = method == "eagle3" ? SpecMethod::eagle3 : method == "eagle" ? SpecMethod::eagle : SpecMethod::none;
  auto count = [&](const char* f) {
    if (sc.method == SpecMethod::none) {
      if (c.has(f)) c.at(f).fail_raw("not allowed with \"method\": \"none\" (no drafts)");
      return 0;
    }
    return static_cast<int>(c.at(f).as_int(-(1 << 30), 1 << 30));
  };
  sc.num_steps = count("num_steps");
  sc.eagle_topk = count("eagle_topk");
  sc.num_draft_tokens = count("num_draft_tokens");
  if (auto m = c.find("mask")) sc.mask = m->as_enum({"chain", "tree"}) == "tree" ? VerifyMask::tree : VerifyMask::chain;
  if (auto p = c.find("parents")) {
    if (sc.mask != VerifyMask::tree) p->fail_raw("only allowed with \"mask\": \"tree\"");
    p->expect_array();
    for (std::size_t i = 0; i < p->size(); ++i)
      sc.parents.push_back(static_cast<int>(p->at(i).as_int(-(1 << 30), 1 << 30)));
  } else if (sc.mask == VerifyMask::tree) {
    throw InputError::at(c.file(), c.path() + ".parents", "missing required field (\"mask\": \"tree\" needs the parent list)");
  }
  if (auto problem = find_speculative_problem(sc)) {
    const char* name = speculative_field_name(problem->field);
    JsonCursor at = c.has(name) ? c.at(name) : c;
    if (problem->field == SpecField::parents && problem->index >= 0) at = at.at(static_cast<std::size_t>(problem->index));
    const std::string path = c.has(name) ? at.path() : c.path() + "." + name;
    throw InputError::at(c.file(), path, fmt::format("expected {}, got {}", problem->expected, problem->got));
  }
  return sc;
}

// The version-2 meta fields: the batch, per-request KV lengths, the speculative configuration,
// and how they agree with the version-1 fields.
void parse_meta_version2(const JsonCursor& meta, int version, TraceMeta& m) {
  for (const char* f : {"batch", "kv_lens", "speculative", "engine"})
    if (meta.has(f) && version < kTraceVersionLatest) fail_needs_version2(meta.at(f), fmt::format("\"{}\"", f));
  if (auto b = meta.find("batch")) m.batch = static_cast<int>(b->as_positive_int(kMaxBatch));
  if (auto l = meta.find("kv_lens")) {
    if (meta.has("kv_len")) meta.at("kv_len").fail_raw("give kv_len (every request) or kv_lens (one per request), not both");
    l->expect_array();
    if (l->size() != static_cast<std::size_t>(m.batch_size()))
      l->fail(fmt::format("one KV length per request (batch = {})", m.batch_size()));
    for (std::size_t i = 0; i < l->size(); ++i) m.kv_lens.push_back(l->at(i).as_positive_int(kMaxKvLen));
  }
  if (auto e = meta.find("engine")) m.engine = parse_serving_engine(e->as_enum(serving_engine_names()));
  if (auto s = meta.find("speculative")) {
    m.speculative = parse_speculative(*s);
    const SpeculativeConfig& sc = *m.speculative;
    const int verify_tokens = sc.method == SpecMethod::none ? 1 : sc.num_draft_tokens;
    if (m.tokens != verify_tokens)
      meta.at("tokens").fail(fmt::format("the tokens a request verifies, {} (meta.speculative)", verify_tokens));
    if (m.draft_tokens && *m.draft_tokens != sc.num_steps)
      meta.at("draft_tokens").fail(fmt::format("meta.speculative.num_steps ({})", sc.num_steps));
  }
}

ojson speculative_to_json(const SpeculativeConfig& sc) {
  ojson j;
  j["method"] = to_string(sc.method);
  if (sc.method != SpecMethod::none) {
    j["num_steps"] = sc.num_steps;
    j["eagle_topk"] = sc.eagle_topk;
    j["num_draft_tokens"] = sc.num_draft_tokens;
    j["mask"] = to_string(sc.mask);
    if (sc.mask == VerifyMask::tree) j["parents"] = sc.parents;
  }
  return j;
}

}  // namespace

namespace {
// Other files a trace is mistaken for: say what the file is and which command takes it, rather
// than the first field the trace reader does not know.
void reject_other_documents(const nlohmann::json& doc, const std::string& file) {
  if (!doc.is_object()) return;
  const auto format = doc.find("format");
  if (format == doc.end()) {
    if (doc.contains("model_type") || doc.contains("architectures"))
      throw InputError::at(file, "", "this is a model config (Hugging Face config.json), not a trace: generate the "
                                     "step with `eaglesim gen --model " + file + " --tp N --tokens T -o trace.json`, "
                                     "or price every setting with `eaglesim sweep --model " + file + "`");
    if (doc.contains("traceEvents"))
      throw InputError::at(file, "", "this is a PyTorch-profiler (Kineto) trace, not an eaglesim trace: convert it with "
                                     "`eaglesim import kineto " + file + " -o trace.json`");
    return;
  }
  if (!format->is_string() || *format == kTraceFormat) return;
  const std::string other = format->get<std::string>();
  if (other == "eaglesim-topology")
    throw InputError::at(file, "format", "this is a topology, not a trace: pass it with --topology " + file);
  if (other.rfind("eaglesim-", 0) == 0)
    throw InputError::at(file, "format", fmt::format("this is an {} file, not a trace (\"format\": \"{}\")", other,
                                                     kTraceFormat));
}
}  // namespace

Trace parse_trace(const nlohmann::json& doc, const std::string& file) {
  reject_other_documents(doc, file);
  JsonCursor root(doc, file);
  root.expect_object();
  root.only_keys({"format", "version", "meta", "steps"});
  if (root.at("format").as_string() != kTraceFormat)
    root.at("format").fail(fmt::format("\"{}\"", kTraceFormat));
  const std::int64_t version = root.at("version").as_positive_int();
  if (version != kTraceVersion1 && version != kTraceVersionLatest)
    root.at("version").fail(fmt::format("{} or {} (the trace versions this build reads)", kTraceVersion1, kTraceVersionLatest));
  const int v = static_cast<int>(version);

  Trace t;
  auto meta = root.at("meta");
  meta.only_keys({"model", "tp", "tokens", "dtype", "source", "notes", "draft_tokens", "kv_len",
                  "weight_dtype", "draft_model", "batch", "kv_lens", "speculative", "engine"});
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
  parse_meta_version2(meta, v, t.meta);

  auto steps = root.at("steps");
  steps.expect_array();
  if (steps.size() == 0) steps.fail("at least one step");
  bool has_verify = false;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto sc = steps.at(i);
    sc.expect_object();
    sc.only_keys({"name", "measured_us", "ops"});
    Step s;
    {
      auto nc = sc.at("name");
      s.name = nc.as_enum(v < kTraceVersionLatest && !(nc.json().is_string() && nc.json() == "draft_extend")
                              ? version1_step_names()
                              : step_names());
      if (s.name == "draft_extend") {
        if (v < kTraceVersionLatest) fail_needs_version2(nc, "step \"draft_extend\"");
        if (!t.meta.speculative || t.meta.speculative->method == SpecMethod::none)
          nc.fail_raw("\"draft_extend\" needs meta.speculative with drafts (its num_steps says how often the draft "
                      "step runs)");
      }
    }
    if (auto m = sc.find("measured_us")) s.measured_us = m->as_positive_number(kMaxOpUs);
    auto ops = sc.at("ops");
    ops.expect_array();
    if (ops.size() == 0) ops.fail("at least one op");
    s.ops.reserve(ops.size());
    for (std::size_t j = 0; j < ops.size(); ++j) s.ops.push_back(parse_op(ops.at(j), v, t.meta));
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
  if (t.meta.batch) meta["batch"] = *t.meta.batch;
  if (!t.meta.kv_lens.empty()) meta["kv_lens"] = t.meta.kv_lens;
  if (t.meta.speculative) meta["speculative"] = speculative_to_json(*t.meta.speculative);
  if (t.meta.engine) meta["engine"] = to_string(*t.meta.engine);
  if (!t.meta.notes.empty()) meta["notes"] = t.meta.notes;

  // Hand-laid-out: one op per line keeps files diffable and small.
  std::string out;
  out += "{\n";
  out += fmt::format("  \"format\": \"{}\",\n", kTraceFormat);
  out += fmt::format("  \"version\": {},\n", required_version(t));
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
