#pragma once
// Reads one rank's Chrome-trace JSON as written by torch.profiler (export_chrome_trace), gzipped
// or not, and keeps only what the importer needs: CPU ops (with their nesting and arguments),
// the CUDA launch calls (to link a kernel to the CPU op that launched it by `correlation`), the
// GPU activities (kernels, memcpys, memsets) and the ProfilerStep#N marks. Every field that is
// used is validated through JsonCursor, so a malformed file fails with FILE: PATH: expected X.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace eaglesim {

// A CPU-side event: an ATen op, a c10d op, record_param_comms, a user annotation.
struct CpuOp {
  std::string name;
  double ts = 0, dur = 0;
  std::int64_t external_id = -1;
  std::int64_t thread = 0;  // (pid, tid) folded into one key
  int parent = -1;          // index of the innermost enclosing CpuOp on the same thread
  const nlohmann::json* args = nullptr;  // the event's "args" object (or nullptr)
};

enum class GpuActivityType { kernel, memcpy, memset };

struct GpuActivity {
  GpuActivityType type = GpuActivityType::kernel;
  std::string name;
  double ts = 0, dur = 0;
  std::int64_t stream = 0;
  std::int64_t external_id = -1;
  std::int64_t correlation = -1;
  std::int64_t bytes = 0;  // memcpy / memset size, 0 when not given
  const nlohmann::json* args = nullptr;
  int cpu_op = -1;         // launching CpuOp (innermost), -1 when it cannot be found
  double launch_ts = -1;   // CPU time of the launch call, -1 when unknown
  // CUDA graphs: a kernel replayed from a graph carries the correlation id of the
  // cudaGraphLaunch that replayed it (CUPTI stamps every node of one launch with it), and
  // kineto built against CUDA 12+ adds args "graph id" / "graph node id". Such a kernel has no
  // CPU op of its own: the op open at the launch is whatever wrapped the replay, so cpu_op is
  // -1 and its shape has to come from elsewhere (the model config).
  std::int64_t graph_launch = -1;  // correlation of the graph launch, -1 for a stream launch
  std::int64_t graph_node = -1;    // "graph node id", -1 when not given
  bool in_graph() const { return graph_launch >= 0; }
};

struct ProfilerStepMark {
  std::int64_t number = 0;
  double ts = 0, end = 0;
};

struct RankTrace {
  std::string file;
  std::shared_ptr<const nlohmann::json> doc;  // owns what CpuOp/GpuActivity::args point into
  std::optional<int> rank;          // distributedInfo.rank
  std::optional<int> world_size;    // distributedInfo.world_size
  std::optional<std::int64_t> base_time_ns;
  bool record_shapes = false;       // top-level "record_shapes" or any "Input Dims" seen
  std::string device_name;          // deviceProperties[0].name
  int graph_launches = 0;           // cudaGraphLaunch calls seen
  std::vector<CpuOp> cpu_ops;       // sorted by (thread, ts)
  std::vector<GpuActivity> gpu;     // sorted by ts
  std::vector<ProfilerStepMark> profiler_steps;  // sorted by ts

  // Ancestors of a CPU op, innermost first (the op itself included).
  std::vector<int> ancestry(int cpu_op) const;
  // Outermost CPU op enclosing `cpu_op` on its thread.
  int top_level(int cpu_op) const;
};

RankTrace read_kineto_rank(const std::string& file);
// Same, from already-loaded text (tests); `file` names it in messages.
RankTrace parse_kineto_rank(const std::string& text, const std::string& file);

}  // namespace eaglesim
