// eaglesim gen --model CONFIG --tp N --tokens T [--draft DRAFT] [--kv-len L] [--weight-dtype D] -o OUT:
// a per-rank trace of one verify step (and the draft and plain-decode steps) from an HF config.json.
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "io/atomic_file.hpp"
#include "io/json_cursor.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "trace/trace_json.hpp"
#include "trace/trace_stats.hpp"

namespace eaglesim::cli {

namespace {

struct GenArgs {
  std::string model;
  std::string draft;
  std::string output;
  std::string weight_dtype = "bf16";
  int tp = 1;
  int tokens = 0;
  std::int64_t kv_len = 4096;
};

void run_gen(const GenArgs& a) {
  // Fail on an unusable output path before reading anything.
  check_writable(a.output);
  GenOptions opt;
  opt.tp = a.tp;
  opt.tokens = a.tokens;
  opt.kv_len = a.kv_len;
  parse_dtype(a.weight_dtype, opt.weight_dtype);  // CLI11 already restricted it to bf16|fp8|int4
  ModelConfig model = read_model_config(a.model);
  if (!a.draft.empty()) opt.draft = read_model_config(a.draft);
  Trace trace = generate_trace(model, opt);

  // Read the text back through the trace reader so that gen can never write a trace that
  // `inspect` or `run` would reject (e.g. a shape past the reader's limits).
  std::string text = trace_to_string(trace);
  parse_trace(JsonCursor::parse_text(text, a.output), a.output);
  write_file_atomic(a.output, text);

  StepStats verify = compute_stats(trace.verify());
  spdlog::info("wrote {}: verify step {} ops, {} allreduces", a.output, verify.op_count,
               verify.ops_by_kind[static_cast<int>(OpKind::allreduce)]);
}

}  // namespace

void add_gen(CLI::App& app) {
  auto* cmd = app.add_subcommand("gen", "Generate a per-rank trace (verify, draft, decode steps) from an HF config.json");
  auto a = std::make_shared<GenArgs>();
  cmd->add_option("--model", a->model, "Target model config.json (models/llm/...)")->required();
  cmd->add_option("--tp", a->tp, "Tensor-parallel ranks")->required();
  cmd->add_option("--tokens", a->tokens, "Tokens in the verify step (1 + draft tokens)")->required();
  cmd->add_option("--draft", a->draft, "EAGLE-3 draft head config.json: adds the draft step");
  cmd->add_option("--kv-len", a->kv_len, "Context length the attention ops attend over")->capture_default_str();
  cmd->add_option("--weight-dtype", a->weight_dtype, "Target linear-layer weights: bf16, fp8 or int4 (weight-only)")
      ->check(CLI::IsMember({"bf16", "fp8", "int4"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", a->output, "Trace file to write")->required();
  cmd->callback([a] {
    require_single_process("gen", kNoGpuWork);
    run_gen(*a);
  });
}

}  // namespace eaglesim::cli
