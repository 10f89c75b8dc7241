// eaglesim gen --model CONFIG --tp N (--tokens T | --speculative-num-steps S [--speculative-eagle-topk K]
//   [--speculative-num-draft-tokens D]) [--batch B] [--kv-len L | --kv-lens a,b,...] [--draft DRAFT]
//   [--engine-cycle] [--engine sglang|vllm|trtllm|torch] [--weight-dtype D] -o OUT:
// a per-rank trace of one verify step (and the draft and plain-decode steps) from an HF config.json.
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "io/atomic_file.hpp"
#include "io/json_cursor.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "model/speculative_flags.hpp"
#include "model/default_eagle3_head.hpp"
#include "sweep/sweep_inputs.hpp"
#include "trace/trace_json.hpp"
#include "trace/trace_stats.hpp"

namespace eaglesim::cli {

namespace {

struct GenArgs {
  std::string model;
  std::string draft;
  std::string output;
  std::string weight_dtype;  // empty: the checkpoint's quantization_config, bf16 without one
  std::string kv_cache_dtype;  // empty: the checkpoint's KV-cache format when it names one, else bf16
  std::string kv_lens;
  int tp = 1;
  int ep = 1;
  bool dp_attention = false;
  int tokens = 0;
  int batch = 1;
  std::int64_t kv_len = 4096;
  bool engine_cycle = false;
  std::string engine = "sglang";
  SpeculativeFlags speculative;
};

// "--kv-lens 1024,4096": one length per request, in request order (repeats allowed).
std::vector<std::int64_t> parse_kv_lens(const std::string& text) {
  std::vector<std::int64_t> out;
  for (const std::string& item : split_comma_list("--kv-lens", text)) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (errno != 0 || end == item.c_str() || *end != '\0')
      throw InputError(fmt::format("--kv-lens: expected comma-separated integers (one KV length per request), got '{}'",
                                   item));
    out.push_back(v);
  }
  return out;
}

void run_gen(const GenArgs& a, bool tokens_given) {
  // Fail on an unusable output path before reading anything.
  check_writable(a.output);
  GenOptions opt;
  opt.tp = a.tp;
  opt.ep = a.ep;
  opt.dp_attention = a.dp_attention;
  opt.kv_len = a.kv_len;
  opt.batch = a.batch;
  opt.engine_cycle = a.engine_cycle;
  opt.engine = *parse_serving_engine(a.engine);  // CLI11 already restricted it to the engines' names
  if (!a.kv_lens.empty()) opt.kv_lens = parse_kv_lens(a.kv_lens);
  if (a.speculative.any()) {
    ResolvedSpeculative r = resolve_speculative_flags(a.speculative);
    for (const std::string& note : r.notes) spdlog::warn("{}", note);
    opt.speculative = r.config;
  } else if (!tokens_given) {
    throw InputError("--tokens: required (the verify step's tokens per request), unless the SGLang flags "
                     "--speculative-num-steps [--speculative-eagle-topk --speculative-num-draft-tokens] give them");
  } else {
    opt.tokens = a.tokens;
  }
  ModelConfig model = read_model_config(resolve_model_path("--model", a.model));
  // --weight-dtype prices every linear layer in one format; without it, the checkpoint's own.
  if (!a.weight_dtype.empty()) parse_dtype(a.weight_dtype, opt.weight_dtype);  // CLI11 restricted it to bf16|fp8|int4
  else if (model.quantization) opt.formats = model.quantization->formats;
  // --kv-cache-dtype as SGLang's and vLLM's: "auto" is the checkpoint's KV format when its
  // quantization_config names one (kv_cache_scheme, kv_cache_quant_algo), else the model's bf16.
  if (!a.kv_cache_dtype.empty() && a.kv_cache_dtype != "auto") parse_dtype(a.kv_cache_dtype, opt.kv_cache_dtype);
  else if (model.quantization && model.quantization->kv_cache) opt.kv_cache_dtype = *model.quantization->kv_cache;
  // --draft auto: the head beside the model (MODEL-eagle3.json), else one derived from its dimensions.
  if (a.draft == "auto") {
    const std::string beside = find_draft_beside(resolve_model_path("--model", a.model));
    if (!beside.empty()) {
      opt.draft = read_model_config(beside);
    } else {
      opt.draft = default_eagle3_head(model);
      spdlog::warn("{}", describe_default_head(model, *opt.draft));
    }
  } else if (a.draft == "mtp") {
    opt.mtp_draft = true;
  } else if (!a.draft.empty() && a.draft != "none") {
    opt.draft = read_model_config(resolve_model_path("--draft", a.draft));
  }
  Trace trace = generate_trace(model, opt);
  // SGLang's server_args.py caps running requests at 48 by default under speculative decoding
  // (max_running_requests), the largest batch its EAGLE graphs capture.
  if (opt.engine == ServingEngine::sglang && trace.meta.speculative && trace.meta.speculative->method != SpecMethod::none &&
      opt.batch > 48)
    spdlog::warn("SGLang runs at most 48 requests at once with speculative decoding unless --max-running-requests "
                 "raises it (server_args.py); this step has {}", opt.batch);

  // Read the text back through the trace reader so that gen can never write a trace that
  // `inspect` or `run` would reject (e.g. a shape past the reader's limits).
  std::string text = trace_to_string(trace);
  parse_trace(JsonCursor::parse_text(text, a.output), a.output);
  write_file_atomic(a.output, text);

  // What was written, on stdout: the file is the result, this line says what it holds.
  const StepStats verify = compute_stats(trace.verify());
  std::vector<std::string> allreduces;
  for (const auto& [bytes, count] : verify.allreduce_bytes)
    allreduces.push_back(fmt::format("{} x {:.1f} KiB", count, bytes / 1024.0));
  std::vector<std::string> steps;
  for (const Step& st : trace.steps) steps.push_back(st.name);
  // Parameters in all (any format: two bf16 bytes each) and the rank's weights in the trace's formats.
  const double params = weight_bytes_per_rank(model, 1, DType::bf16) / 2.0;
  const LinearFormats formats = opt.formats ? *opt.formats : LinearFormats::all(opt.weight_dtype);
  // A multimodal checkpoint's vision tower is neither traced nor in the count: said beside it.
  const std::string vision = model.vision_params > 0 ? fmt::format(" and a {:.2f} B vision tower not priced",
                                                                    static_cast<double>(model.vision_params) / 1e9)
                                                      : "";
  const int a2a = verify.ops_by_kind[static_cast<int>(OpKind::all_to_all)];
  std::string layout = fmt::format("TP{}", opt.tp);
  if (opt.ep > 1) layout += fmt::format(" EP{}", opt.ep);
  if (opt.dp_attention) layout += " DP-attention";
  fmt::print("wrote {}: {} {} ({:.2f} B parameters{}, {:.2f} GB of weights per rank), batch {}, {} tokens per request "
             "verified ({} engine); steps {}; verify step {} ops, allreduces {}{}\n",
             a.output, model.name, layout, params / 1e9, vision,
             weight_bytes_per_rank(model, opt.tp, formats, opt.dp_attention) / 1e9, opt.batch, trace.meta.tokens, a.engine,
             fmt::join(steps, ", "), verify.op_count,
             allreduces.empty() ? "none" : fmt::format("{}", fmt::join(allreduces, ", ")),
             a2a > 0 ? fmt::format(", all-to-alls {}", a2a) : std::string());
}

}  // namespace

void add_gen(CLI::App& app) {
  auto* cmd = app.add_subcommand("gen", "Generate a per-rank trace (verify, draft, decode steps) from an HF config.json");
  auto a = std::make_shared<GenArgs>();
  cmd->add_option("--model", a->model, "Target model: a name in models/llm (llama-3.1-8b) or a config.json path")->required();
  cmd->add_option("--tp", a->tp, "Tensor-parallel ranks")->required();
  cmd->add_option("--ep", a->ep,
                  "Expert-parallel groups the routed experts split over (a divisor of --tp and of the experts; "
                  "SGLang --ep-size); default 1: TP-MoE")
      ->capture_default_str();
  cmd->add_flag("--dp-attention", a->dp_attention,
                "Data-parallel attention (SGLang --enable-dp-attention, --dp = --tp): each rank runs attention, "
                "dense layers and lm_head unsharded on its share of --batch; the MoE exchanges tokens by all-to-all "
                "(needs --ep = --tp)");
  auto* tokens = cmd->add_option("--tokens", a->tokens, "Tokens in the verify step (1 + draft tokens, a chain)");
  auto* steps = cmd->add_option_function<int>(
      "--speculative-num-steps", [a](const int& v) { a->speculative.num_steps = v; },
      "SGLang's draft steps per cycle (draft depth)");
  auto* topk = cmd->add_option_function<int>(
      "--speculative-eagle-topk", [a](const int& v) { a->speculative.eagle_topk = v; },
      "SGLang's branches kept per draft step (default 1: a chain)");
  auto* draft_tokens = cmd->add_option_function<int>(
      "--speculative-num-draft-tokens", [a](const int& v) { a->speculative.num_draft_tokens = v; },
      "SGLang's tokens verified per request (default with topk 1: steps + 1)");
  for (CLI::Option* o : {steps, topk, draft_tokens}) tokens->excludes(o);
  cmd->add_option("--batch", a->batch, "Concurrent requests (1-4096)")->capture_default_str();
  cmd->add_option("--draft", a->draft,
                  "EAGLE-3 draft head, adding the draft step: a name in models/llm, a config.json path, auto (the "
                  "head beside the model, else one derived from its dimensions), or mtp (the model's own "
                  "multi-token-prediction layer, num_nextn_predict_layers: DeepSeek-V3, GLM-4.5); without it the "
                  "trace has no draft step");
  auto* kv_len = cmd->add_option("--kv-len", a->kv_len, "Context length every request's attention attends over")
                     ->capture_default_str();
  auto* kv_lens = cmd->add_option("--kv-lens", a->kv_lens, "Context length per request, comma-separated (one per --batch request)");
  kv_len->excludes(kv_lens);
  cmd->add_flag("--engine-cycle", a->engine_cycle,
                "The cycle as SGLang runs it: draft-extend step, top-k selection, tree building, sampling, host sync");
  cmd->add_option("--engine", a->engine,
                  "Whose kernels the steps list: sglang, vllm, trtllm, or torch (the PyTorch reference step, "
                  "one GPU, bf16; docs/engine-steps.md)")
      ->check(CLI::IsMember(serving_engine_names()))
      ->capture_default_str();
  cmd->add_option("--weight-dtype", a->weight_dtype,
                  "Target linear-layer weights, all of them: bf16, fp8 or int4 (weight-only) (default: as the "
                  "config.json's quantization_config gives them per layer class, bf16 without one)")
      ->check(CLI::IsMember({"bf16", "fp8", "int4"}));
  cmd->add_option("--kv-cache-dtype", a->kv_cache_dtype,
                  "KV cache format: auto (the checkpoint's when its quantization_config names one, else bf16), bf16 "
                  "or fp8 (the attention's KV bytes)")
      ->check(CLI::IsMember({"auto", "bf16", "fp8"}));
  cmd->add_option("-o,--output", a->output, "Trace file to write")->required();
  cmd->callback([a, tokens] {
    require_single_process("gen", kNoGpuWork);
    run_gen(*a, tokens->count() > 0);
  });
}

}  // namespace eaglesim::cli
