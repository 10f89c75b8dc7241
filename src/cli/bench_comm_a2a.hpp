#pragma once
// bench-comm --a2a: expert parallelism's dispatch and combine over token counts on a topology
// (the all-to-all half of bench-comm --backend sim). Its flags, their checks and the run.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace eaglesim::cli {

struct A2aBenchFlags {
  std::string strategies;  // --a2a: comma list or all; empty: not asked for
  std::string tokens = "1,8,32,128,512,4096";
  std::int64_t hidden = 7168;  // DeepSeek-V3's, as DeepEP's tests
  std::int64_t top_k = 8;
  std::int64_t experts = 256;
  std::int64_t topk_groups = 0;
  std::string dispatch_dtype = "fp8";
};

// The flags of the all-to-all bench on `cmd`, with `f` holding their values.
void add_a2a_bench_flags(CLI::App* cmd, A2aBenchFlags& f);
// bench-comm's flags the all-to-all bench shares.
struct BenchCommShared {
  std::string backend, topology;
  int ranks = 0;  // 0: every GPU of the topology
  std::string json, csv;
};
// With --a2a on `cmd`: checks every flag (InputError naming it; nothing printed or written then),
// prices, prints the table, writes the files and returns true. Without: refuses the all-to-all
// flags given and returns false.
bool run_a2a_bench_if_asked(const CLI::App& cmd, const A2aBenchFlags& f, const BenchCommShared& shared);

}  // namespace eaglesim::cli
