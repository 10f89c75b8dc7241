#include "import/kineto_reader.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/atomic_file.hpp"
#include "io/json_cursor.hpp"

namespace eaglesim {

namespace {

// Chrome traces give pid/tid as integers for real threads and as strings for pseudo rows
// ("Spans", "Traces"); only CPU ops of the same thread can nest, so fold both into one key.
std::int64_t thread_key(const nlohmann::json& ev) {
  auto part = [&](const char* key) -> std::size_t {
    auto it = ev.find(key);
    if (it == ev.end()) return 0;
    if (it->is_number_integer()) return static_cast<std::size_t>(it->get<std::int64_t>());
    return std::hash<std::string>{}(it->dump());
  };
  return static_cast<std::int64_t>(part("pid") * 1000003u ^ part("tid"));
}

std::optional<std::int64_t> int_arg(const JsonCursor& ev, const char* key) {
  auto args = ev.find("args");
  if (!args) return std::nullopt;
  auto v = args->find(key);
  if (!v) return std::nullopt;
  return v->as_int(std::numeric_limits<std::int64_t>::min() / 2, std::numeric_limits<std::int64_t>::max() / 2);
}

constexpr double kMaxTs = 1e18;  // µs; anything beyond is not a timestamp

// eaglesim prices and replays CUDA kernels on NVIDIA GPUs. A ROCm profile (kineto over
// roctracer) has the same layout, so it would import "fine" and then be priced as if its
// hipBLASLt/CK kernels had run on an H200; refuse it instead.
bool names_another_vendor(const std::string& device) {
  for (const char* v : {"AMD", "Radeon", "Instinct", "Intel", "Gaudi"})
    if (device.find(v) != std::string::npos) return true;
  return false;
}

const char* kNvidiaOnly = "eaglesim imports profiles of NVIDIA GPUs (CUDA kernels) only";

bool is_graph_launch(const std::string& name) {
  return name.find("GraphLaunch") != std::string::npos;  // cudaGraphLaunch, cuGraphLaunch (+ _v10000)
}

// A CUDA runtime or driver call that launched kernels: when and on which thread, and whether
// it replayed a CUDA graph. The kernels it launched carry its `correlation`.
struct Launch {
  double ts;
  std::int64_t thread;
  bool graph;
};
using LaunchByCorrelation = std::unordered_map<std::int64_t, Launch>;

// What every kept event has, read (and checked) in this order.
struct EventBasics {
  std::string name;
  double ts = 0, dur = 0;
  const nlohmann::json* args = nullptr;
};

EventBasics read_event_basics(const JsonCursor& ev) {
  EventBasics e;
  e.name = ev.at("name").as_string_allow_empty();
  e.ts = ev.at("ts").as_number(-kMaxTs, kMaxTs);
  e.dur = ev.at("dur").as_number(0.0, kMaxTs);
  if (auto a = ev.find("args")) a->expect_object();
  if (auto it = ev.json().find("args"); it != ev.json().end()) e.args = &*it;
  return e;
}

// distributedInfo, the time base, record_shapes and the device, from the top-level object.
void read_run_properties(const JsonCursor& root, RankTrace& rt) {
  if (auto d = root.find("distributedInfo")) {
    d->expect_object();
    if (auto r = d->find("rank")) rt.rank = static_cast<int>(r->as_nonnegative_int(1 << 20));
    if (auto w = d->find("world_size")) rt.world_size = static_cast<int>(w->as_positive_int(1 << 20));
  }
  if (auto b = root.find("baseTimeNanoseconds")) rt.base_time_ns = b->as_nonnegative_int(std::int64_t{1} << 62);
  if (auto r = root.find("record_shapes")) {
    rt.record_shapes = r->json().is_boolean() ? r->as_bool() : r->as_int(0, 1) == 1;
  }
  if (auto dp = root.find("deviceProperties"); dp && dp->json().is_array() && dp->size() > 0) {
    if (auto n = dp->at(std::size_t{0}).find("name"); n && n->json().is_string()) rt.device_name = n->as_string_allow_empty();
    for (std::size_t i = 0; i < dp->size(); ++i) {
      auto n = dp->at(i).find("name");
      if (n && n->json().is_string() && names_another_vendor(n->json().get<std::string>()))
        n->fail(fmt::format("an NVIDIA GPU ({})", kNvidiaOnly));
    }
  }
}

void read_launch_call(const JsonCursor& ev, const EventBasics& e, RankTrace& rt, LaunchByCorrelation& launches) {
  if (e.name.rfind("hip", 0) == 0)
    ev.at("name").fail(fmt::format("a CUDA runtime or driver call ({}; this one is from ROCm/HIP)", kNvidiaOnly));
  const bool graph = is_graph_launch(e.name);
  rt.graph_launches += graph;
  if (auto c = int_arg(ev, "correlation")) launches[*c] = Launch{e.ts, thread_key(ev.json()), graph};
}

// A CPU op or user annotation; the profiler's own ProfilerStep#N ranges are step marks.
void read_cpu_event(const JsonCursor& ev, const EventBasics& e, RankTrace& rt) {
  if (e.name.rfind("ProfilerStep#", 0) == 0) {
    ProfilerStepMark m;
    try {
      m.number = std::stoll(e.name.substr(13));
    } catch (const std::exception&) {
      ev.at("name").fail("\"ProfilerStep#\" followed by a step number");
    }
    m.ts = e.ts;
    m.end = e.ts + e.dur;
    rt.profiler_steps.push_back(m);
    return;
  }
  CpuOp op;
  op.name = e.name;
  op.ts = e.ts;
  op.dur = e.dur;
  op.external_id = int_arg(ev, "External id").value_or(-1);
  op.thread = thread_key(ev.json());
  op.args = e.args;
  if (e.args && e.args->contains("Input Dims")) rt.record_shapes = true;
  rt.cpu_ops.push_back(std::move(op));
}

void read_gpu_activity(const JsonCursor& ev, const std::string& cat, const EventBasics& e, RankTrace& rt) {
  GpuActivity g;
  g.type = cat == "kernel" ? GpuActivityType::kernel
           : cat == "gpu_memcpy" ? GpuActivityType::memcpy : GpuActivityType::memset;
  g.name = e.name;
  g.ts = e.ts;
  g.dur = e.dur;
  g.stream = int_arg(ev, "stream").value_or(0);
  g.external_id = int_arg(ev, "External id").value_or(-1);
  g.correlation = int_arg(ev, "correlation").value_or(-1);
  g.bytes = int_arg(ev, "bytes").value_or(0);
  // "graph id" 0 is CUPTI's "not launched from a graph".
  if (int_arg(ev, "graph id").value_or(0) > 0) g.graph_launch = g.correlation >= 0 ? g.correlation : 0;
  g.graph_node = int_arg(ev, "graph node id").value_or(-1);
  g.args = e.args;
  rt.gpu.push_back(std::move(g));
}

// CPU ops, GPU activities and step marks into `rt`, in file order; the launch calls are kept
// aside until the kernels are linked to them.
LaunchByCorrelation read_events(const JsonCursor& events, RankTrace& rt) {
  LaunchByCorrelation launches;
  for (std::size_t i = 0; i < events.size(); ++i) {
    JsonCursor ev = events.at(i);
    ev.expect_object();
    auto cat_c = ev.find("cat");
    if (!cat_c || !cat_c->json().is_string()) continue;  // metadata rows, flow arrows, instants
    const std::string cat = cat_c->json().get<std::string>();
    const bool is_cpu = cat == "cpu_op" || cat == "user_annotation";
    const bool is_gpu = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
    const bool is_launch = cat == "cuda_runtime" || cat == "cuda_driver";
    if (!is_cpu && !is_gpu && !is_launch) continue;

    const EventBasics e = read_event_basics(ev);
    if (is_launch) read_launch_call(ev, e, rt, launches);
    else if (is_cpu) read_cpu_event(ev, e, rt);
    else read_gpu_activity(ev, cat, e, rt);
  }
  return launches;
}

void check_has_kernels(const RankTrace& rt, std::size_t events) {
  const bool any_kernel = std::any_of(rt.gpu.begin(), rt.gpu.end(),
                                      [](const GpuActivity& g) { return g.type == GpuActivityType::kernel; });
  if (!any_kernel)
    throw InputError::at(rt.file, "traceEvents",
                         fmt::format("no GPU kernels (events with \"cat\": \"kernel\") among {} events; "
                                     "record with torch.profiler activities=[CPU, CUDA]",
                                     events));
}

// Nesting of CPU ops: per thread, in start order (longer first on ties), an op's parent is the
// innermost still-open op that contains it.
void nest_cpu_ops(RankTrace& rt) {
  std::sort(rt.cpu_ops.begin(), rt.cpu_ops.end(), [](const CpuOp& a, const CpuOp& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.dur > b.dur;
  });
  std::vector<int> open;
  for (std::size_t i = 0; i < rt.cpu_ops.size(); ++i) {
    CpuOp& op = rt.cpu_ops[i];
    if (i > 0 && rt.cpu_ops[i - 1].thread != op.thread) open.clear();
    const double end = op.ts + op.dur;
    // 1 ns of slack: the profiler rounds ts and dur separately.
    while (!open.empty() && end > rt.cpu_ops[static_cast<std::size_t>(open.back())].ts +
                                      rt.cpu_ops[static_cast<std::size_t>(open.back())].dur + 1e-3)
      open.pop_back();
    op.parent = open.empty() ? -1 : open.back();
    open.push_back(static_cast<int>(i));
  }
}

std::unordered_map<std::int64_t, int> cpu_op_by_external_id(const RankTrace& rt) {
  std::unordered_map<std::int64_t, int> by_external_id;
  for (std::size_t i = 0; i < rt.cpu_ops.size(); ++i) {
    const CpuOp& op = rt.cpu_ops[i];
    if (op.external_id < 0) continue;
    auto [it, fresh] = by_external_id.emplace(op.external_id, static_cast<int>(i));
    // Same id on two events (an annotation and the op inside it): keep the innermost.
    if (!fresh && op.ts >= rt.cpu_ops[static_cast<std::size_t>(it->second)].ts) it->second = static_cast<int>(i);
  }
  return by_external_id;
}

// The innermost CPU op open on `thread` at `ts`, -1 when none is (needs nest_cpu_ops' order).
int innermost_cpu_op_at(const RankTrace& rt, std::int64_t thread, double ts) {
  int best = -1;
  for (std::size_t i = 0; i < rt.cpu_ops.size(); ++i) {
    const CpuOp& op = rt.cpu_ops[i];
    if (op.thread != thread || op.ts > ts) continue;
    if (op.ts + op.dur >= ts) best = static_cast<int>(i);  // later start = deeper (sorted)
  }
  return best;
}

// Kernel -> CPU op: the "External id" the profiler stamps on both is the direct link; the
// launch call's `correlation` gives the launch time and, when the id is missing, the CPU op
// that was open on the launching thread at that moment.
void link_gpu_to_cpu_ops(RankTrace& rt, const LaunchByCorrelation& launches) {
  const std::unordered_map<std::int64_t, int> by_external_id = cpu_op_by_external_id(rt);
  for (GpuActivity& g : rt.gpu) {
    auto launch = launches.find(g.correlation);
    if (launch != launches.end()) g.launch_ts = launch->second.ts;
    if (launch != launches.end() && launch->second.graph) g.graph_launch = g.correlation;
    if (g.in_graph()) continue;  // no CPU op launched it (see GpuActivity::graph_launch)
    if (auto it = by_external_id.find(g.external_id); g.external_id >= 0 && it != by_external_id.end())
      g.cpu_op = it->second;
    else if (launch != launches.end())
      g.cpu_op = innermost_cpu_op_at(rt, launch->second.thread, launch->second.ts);
    if (g.launch_ts < 0 && g.cpu_op >= 0) g.launch_ts = rt.cpu_ops[static_cast<std::size_t>(g.cpu_op)].ts;
  }
}

}  // namespace

std::vector<int> RankTrace::ancestry(int op) const {
  std::vector<int> chain;
  for (int i = op; i >= 0; i = cpu_ops[static_cast<std::size_t>(i)].parent) chain.push_back(i);
  return chain;
}

int RankTrace::top_level(int op) const {
  int top = op;
  for (int i = op; i >= 0; i = cpu_ops[static_cast<std::size_t>(i)].parent) top = i;
  return top;
}

RankTrace parse_kineto_rank(const std::string& text, const std::string& file) {
  RankTrace rt;
  rt.file = file;
  auto doc = std::make_shared<nlohmann::json>(JsonCursor::parse_text(text, file));
  rt.doc = doc;
  JsonCursor root(*doc, file);
  if (!doc->is_object() || !doc->contains("traceEvents"))
    root.fail("a PyTorch profiler trace (an object with a \"traceEvents\" array)");
  auto events = root.at("traceEvents");
  events.expect_array();

  read_run_properties(root, rt);
  const LaunchByCorrelation launches = read_events(events, rt);
  check_has_kernels(rt, events.size());
  nest_cpu_ops(rt);
  link_gpu_to_cpu_ops(rt, launches);
  std::stable_sort(rt.gpu.begin(), rt.gpu.end(), [](const GpuActivity& a, const GpuActivity& b) { return a.ts < b.ts; });
  std::sort(rt.profiler_steps.begin(), rt.profiler_steps.end(),
            [](const ProfilerStepMark& a, const ProfilerStepMark& b) { return a.ts < b.ts; });
  return rt;
}

RankTrace read_kineto_rank(const std::string& file) { return parse_kineto_rank(read_file(file), file); }

}  // namespace eaglesim
