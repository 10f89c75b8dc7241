#pragma once
// Per-rank spans of one simulated or measured step (report/chrome_trace.hpp prints them for Perfetto).
#include <cstdint>
#include <string>
#include <vector>

#include "trace/op.hpp"

namespace eaglesim {

struct Span {
  int rank = 0;
  int stream = 0;          // index into Timeline::stream_names
  int op_index = -1;       // index into the step's ops (-1: synthetic, e.g. a fused op's absorbed part)
  OpKind kind = OpKind::other;
  std::string name;
  int layer = -1;
  double start_us = 0;
  double end_us = 0;
  double wait_us = 0;      // collectives: time this rank waited for the last arrival
  std::string detail;      // algorithm / cost source, shown in the span's args
  std::string shape;       // the op's shape string (Op::shape_string)
  std::int64_t bytes = 0;  // collectives: message size
};

struct Timeline {
  std::string step;        // verify | draft | decode
  int ranks = 1;
  std::vector<std::string> stream_names{"compute"};
  std::vector<Span> spans;
};

}  // namespace eaglesim
