#include "fuzz_entry_points.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "core/errors.hpp"
#include "import/kineto_import.hpp"
#include "io/json_cursor.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "serve/workload.hpp"
#include "topology/paths.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"
#include "trace/trace_stats.hpp"

namespace eaglesim::fuzz {

namespace {

std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Writing an accepted trace and reading it back must give the same bytes again.
void check_trace_round_trip(const Trace& trace, const char* what) {
  const std::string once = trace_to_string(trace);
  const Trace again = parse_trace(JsonCursor::parse_text(once, "round-trip.json"), "round-trip.json");
  if (trace_to_string(again) != once)
    throw std::logic_error(std::string(what) + ": trace write -> read -> write is not byte-identical");
}

// A file in the temporary directory that is removed however the scope is left.
class TempFile {
 public:
  TempFile(const std::string& content, const std::string& suffix) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/eaglesim-fuzz-XXXXXX" + suffix;
    int fd = mkstemps(path_.data(), static_cast<int>(suffix.size()));
    if (fd < 0) throw std::runtime_error("fuzz harness: cannot create a temporary file");
    std::size_t off = 0;
    while (off < content.size()) {
      ssize_t n = ::write(fd, content.data() + off, content.size() - off);
      if (n <= 0) { ::close(fd); std::remove(path_.c_str()); throw std::runtime_error("fuzz harness: write failed"); }
      off += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

bool trace_reader(const std::uint8_t* data, std::size_t size) {
  try {
    const Trace trace = parse_trace(JsonCursor::parse_text(as_text(data, size), "fuzz.json"), "fuzz.json");
    check_trace_round_trip(trace, "trace_reader");
    for (const auto& step : trace.steps) (void)compute_stats(step);
    (void)stats_to_text(trace);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

bool topology_reader(const std::uint8_t* data, std::size_t size) {
  try {
    const Topology topo = parse_topology(JsonCursor::parse_text(as_text(data, size), "fuzz.json"), "fuzz.json");
    const std::string once = topology_to_string(topo);
    const Topology again = parse_topology(JsonCursor::parse_text(once, "round-trip.json"), "round-trip.json");
    if (topology_to_string(again) != once)
      throw std::logic_error("topology_reader: topology write -> read -> write is not byte-identical");
    // Every pair would be a million paths at the 1024-GPU limit: each GPU to its neighbour and
    // to GPU 0 reaches every switch group and socket at linear cost.
    const int n = topo.gpu_count;
    for (int a = 0; a < n && n > 1; ++a) {
      (void)path_between(topo, a, (a + 1) % n);
      if (a != 0) (void)path_between(topo, 0, a);
    }
    for (int ranks = 2; ranks <= std::min(n, 16); ranks *= 2) (void)worst_path(topo, ranks);  // O(ranks^2)
    return true;
  } catch (const InputError&) {
    return false;
  }
}

bool model_config_reader(const std::uint8_t* data, std::size_t size) {
  try {
    const ModelConfig model = parse_model_config(JsonCursor::parse_text(as_text(data, size), "fuzz.json"),
                                                 "fuzz.json", "fuzz");
    for (int tp : {1, 2}) {
      try {
        check_tp(model, tp);
        (void)weight_bytes_per_rank(model, tp, DType::bf16);
        (void)kv_cache_bytes_per_token_per_rank(model, tp);
        GenOptions options;
        options.tp = tp;
        options.tokens = 4;
        options.kv_len = 1024;
        check_trace_round_trip(generate_trace(model, options), "model_config_reader");
      } catch (const InputError&) {
      }
    }
    return true;
  } catch (const InputError&) {
    return false;
  }
}

bool kineto_importer(const std::uint8_t* data, std::size_t size) {
  // Bytes that start like gzip get a .gz name, so the importer's gzip path is fuzzed too.
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  TempFile file(as_text(data, size), gzip ? ".json.gz" : ".json");
  try {
    KinetoImportOptions options;
    options.model = "fuzz";
    check_trace_round_trip(import_kineto({file.path()}, options), "kineto_importer");
    return true;
  } catch (const InputError&) {
    return false;
  }
}

bool lengths_file_reader(const std::uint8_t* data, std::size_t size) {
  // The reader tells its formats apart by their first characters, not the name.
  TempFile file(as_text(data, size), ".jsonl");
  try {
    const auto lens = read_lengths_file(file.path());
    if (lens.empty()) throw std::logic_error("lengths_file_reader: an accepted file with no requests");
    for (const auto& [in, out] : lens)
      if (in < 1 || out < 1) throw std::logic_error("lengths_file_reader: an accepted length below 1");
    WorkloadSpec w;
    w.lengths_file = file.path();
    w.num_prompts = 3;
    w.request_rate = 2.0;
    if (make_workload(w).size() != 3) throw std::logic_error("lengths_file_reader: the workload lost requests");
    return true;
  } catch (const InputError&) {
    return false;
  }
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"trace_reader", trace_reader},
      {"topology_reader", topology_reader},
      {"model_config_reader", model_config_reader},
      {"kineto_importer", kineto_importer},
      {"lengths_file_reader", lengths_file_reader},
  };
  return all;
}

}  // namespace eaglesim::fuzz
