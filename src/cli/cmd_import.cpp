// eaglesim import kineto RANK0.json[.gz] [RANK1.json[.gz] ...] -o OUT: a PyTorch profiler trace
// (one file per rank) -> native trace. The summary of what was recognised goes to stdout; the
// warnings about what was lost or estimated go to stderr.
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "import/kineto_import.hpp"
#include "io/atomic_file.hpp"
#include "model/model_config.hpp"
#include "model/sharded_layer_shape.hpp"
#include "sweep/sweep_inputs.hpp"
#include "trace/trace_json.hpp"

namespace eaglesim::cli {

namespace {

struct KinetoArgs {
  std::vector<std::string> files;
  std::string out;
  int step = -1;
  bool all_steps = false;
  int layers = 0;
  std::string model;
  std::string config;
  std::string like;
  int tp = 0;
  std::int64_t tokens = 0, batch = 0, kv_len = -1;
  bool quiet = false;
};

void add_kineto(CLI::App& import) {
  auto a = std::make_shared<KinetoArgs>();
  auto* cmd = import.add_subcommand(
      "kineto", "Import a torch.profiler Chrome-trace JSON (.json or .json.gz), one file per tensor-parallel rank");
  cmd->add_option("files", a->files, "Trace files, one per rank (rank order from distributedInfo.rank)")->required();
  cmd->add_option("-o,--output", a->out, "Native trace to write")->required();
  auto* step = cmd->add_option("--step", a->step, "Step to import (index among the steps found; default: the last complete one)");
  auto* all = cmd->add_flag("--all-steps", a->all_steps, "Import every complete step, each as a verify step");
  step->excludes(all);
  auto* layers = cmd->add_option("--layers", a->layers,
                  "Decoder layers per step, for traces without ProfilerStep#N marks whose steps cannot be told "
                  "apart from their layers");
  cmd->add_option("--model", a->model, "meta.model of the trace (default: from the first file name)");
  // A model config tells how many decoder layers a step has, which is what splits traces
  // recorded without ProfilerStep marks (the steps are otherwise an unbroken run of layers).
  cmd->add_option("--config", a->config,
                  "HF config.json (a name in models/llm or a path) of the traced model: its num_hidden_layers "
                  "splits the steps, its name becomes meta.model, and kernels without shapes (CUDA graph "
                  "replays) take theirs from it")
      ->excludes(layers);
  cmd->add_option("--like", a->like,
                  "A trace generated for the recorded engine and shape (eaglesim gen --engine ...): each recorded op "
                  "takes the kind, shape and layer of the op at the same place in its verify step, keeping its "
                  "measured us (docs/engine-steps.md)")
      ->excludes("--config");
  // What the engine ran, which a graph replay does not record: its kernels have no shapes.
  cmd->add_option("--tp", a->tp, "Tensor-parallel size of the recorded run (default: distributedInfo.world_size, "
                                 "else the number of files)")->check(CLI::Range(1, 1024));
  cmd->add_option("--tokens", a->tokens, "Query tokens per request of the recorded step (1 + draft tokens), for "
                                         "shapes from --config")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 22));
  cmd->add_option("--batch", a->batch, "Requests in the recorded step (default 1), for shapes from --config")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
  cmd->add_option("--kv-len", a->kv_len, "KV length each request attended over, for shapes from --config")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 24));
  cmd->add_flag("-q,--quiet", a->quiet, "Do not print the summary");
  cmd->callback([a, step] {
    require_single_process("import kineto", kNoGpuWork);
    check_writable(a->out);  // fail before the (seconds-long) import rather than after
    KinetoImportOptions opt;
    if (step->count() > 0) opt.step = a->step;
    opt.all_steps = a->all_steps;
    if (a->layers != 0) opt.layers_per_step = a->layers;
    opt.model = a->model;
    if (!a->config.empty()) {
      ModelConfig cfg = read_model_config(resolve_model_path("--config", a->config));
      opt.layers_per_step = cfg.layers;
      if (opt.model.empty()) opt.model = cfg.name;
      opt.layer_shape = [cfg](int tp) { return rank_layer_shape(cfg, tp); };
    }
    if (!a->like.empty()) {
      opt.like = read_trace(a->like);
      opt.like_file = a->like;
      if (opt.like->meta.source != "generated")
        throw InputError(fmt::format("--like {}: meta.source: expected a generated trace (eaglesim gen), got {}", a->like,
                                     opt.like->meta.source));
    }
    if (a->tp > 0) opt.tp = a->tp;
    if (a->tokens > 0) opt.tokens = a->tokens;
    if (a->batch > 0) opt.batch = a->batch;
    if (a->kv_len >= 0) opt.kv_len = a->kv_len;
    KinetoImport r = import_kineto_with_summary(a->files, opt);
    write_trace(r.trace, a->out);
    for (const auto& w : r.summary.warnings) spdlog::warn("{}", w);
    if (!a->quiet) std::cout << summary_to_text(r.summary) << "wrote " << a->out << "\n";
  });
}

}  // namespace

void add_import(CLI::App& app) {
  auto* cmd = app.add_subcommand("import", "Import a trace recorded elsewhere into the native trace format");
  cmd->require_subcommand(1);
  add_kineto(*cmd);
}

}  // namespace eaglesim::cli
