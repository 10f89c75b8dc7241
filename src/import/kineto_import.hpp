#pragma once
// Kineto / Chrome-trace JSON (torch.profiler export_chrome_trace), one file per rank -> native
// trace. See docs/import-kineto.md for what is recognised and how costs are derived.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "import/import_summary.hpp"
#include "trace/rank_layer_shape.hpp"
#include "trace/trace.hpp"

namespace eaglesim {

struct KinetoImportOptions {
  std::optional<int> step;             // index among the steps found; default: the last complete one
  bool all_steps = false;              // every complete step, each as a `verify` step
  std::optional<int> layers_per_step;  // needed when steps cannot be told apart from layers
  std::string model;                   // meta.model; default: derived from the first file name
  // Kernels without shapes (CUDA-graph replays, profiles without record_shapes) take theirs from
  // the model config and the recorded run (config_shape_matcher.hpp). tokens and kv_len are
  // required then; tp defaults to distributedInfo.world_size or the number of files.
  // The traced model's layer on one rank, for the run's tp (throws InputError when the model
  // cannot be sharded so); empty: no model config given.
  std::function<RankLayerShape(int tp)> layer_shape;
  std::optional<int> tp;
  std::optional<std::int64_t> tokens;  // query tokens per request (1 + draft tokens)
  std::optional<std::int64_t> batch;   // requests; default 1
  std::optional<std::int64_t> kv_len;  // KV positions per request
  // Shapes from a generated trace of the engine that was recorded (gen --engine ...): each op of
  // an imported step takes the kind, shape, name and layer of the op at the same place in the
  // generated trace's verify step, and keeps its measured us. The step must have exactly as many
  // ops, and every GEMM and attention kernel must meet a GEMM or attention op; otherwise an
  // InputError names the first op where they part (the engine's inventory is not what ran).
  // Excludes layer_shape.
  std::optional<Trace> like;
  std::string like_file;  // for messages
};

struct KinetoImport {
  Trace trace;
  ImportSummary summary;
};

// Throws InputError (file named) for unreadable or malformed files, files that are not
// profiler traces or have no GPU kernels, and ranks that do not match each other.
KinetoImport import_kineto_with_summary(const std::vector<std::string>& rank_files, const KinetoImportOptions& options);
Trace import_kineto(const std::vector<std::string>& rank_files, const KinetoImportOptions& options);

}  // namespace eaglesim
