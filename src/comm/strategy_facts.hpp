#pragma once
// Facts about every allreduce strategy and benchmark variant, in one table that the registry,
// calibration, bench-comm, the CUDA comm groups, the sweep, the report and the HTML page read.
// Nothing outside comm/ compares strategy names; it asks this table instead. Each row comes from
// a strategy's spec (comm/strategy_spec.hpp); this header depends on core only, so that the
// topology reader can check the names a calibration table carries.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace eaglesim {

// What runs a strategy on GPUs (src/cuda/).
enum class StrategyRuntime {
  nccl,        // ncclAllReduce
  own_kernel,  // one of our kernels (kernels/), registered under the strategy's name by the CUDA
               // part (cuda/comm/p2p_allreduce_kernel.cuh)
  none,        // no kernel: ideal (free), or a selector over the others (auto, the engines)
};

struct StrategyFacts {
  std::string_view name;
  bool runs = true;                 // a `--strategy` of run/sweep/fidelity (false: bench-comm variant only)
  bool priced = true;               // has a cost model (StrategySpec::make_cost_model): every entry that
                                    // runs, and the bench-comm variants bench-comm --backend sim predicts
  bool exact = true;                // false: lossy (changes the numbers)
  bool fuses_residual_norm = false; // absorbs the residual_add + rmsnorm that follow the allreduce
  bool lower_bound = false;         // not deployable: a bound that shows what communication costs
  bool selector = false;            // picks another strategy per message size
  bool engine = false;              // a serving engine's own dispatch (comm/engine_dispatch.hpp): picks,
                                    // per allreduce, the path that engine takes; not part of `all`
  bool calibratable = false;        // `calibrate` measures it; a topology may carry its tables
  bool needs_p2p = false;           // our own P2P kernels: P2P on, 2/4/8 ranks, registered buffer
  std::int64_t max_bytes = 0;       // largest message (0: no limit)
  std::int64_t byte_multiple = 1;   // message sizes must be a multiple of this (packed loads)
  StrategyRuntime runtime = StrategyRuntime::none;
  bool correctness_baseline = false;  // bench-comm's plain kernel: shows whether the others are right
};

// Our P2P kernels run on a pre-registered buffer of this size (the size vLLM's custom
// allreduce registers) with 16-byte packed loads.
constexpr std::int64_t kMaxCustomBytes = 8 * 1024 * 1024;
constexpr std::int64_t kCustomByteMultiple = 16;

// Every entry in the order of the specs (comm/strategy_list.cpp): strategies in report order (the
// order `all` expands to), bench-comm's variants among and after them.
const std::vector<StrategyFacts>& strategy_table();
// nullptr for unknown names.
const StrategyFacts* find_strategy_facts(std::string_view name);
// InputError listing the known strategies for unknown names.
const StrategyFacts& strategy_facts(std::string_view name);

// Convenience predicates over the table; false for unknown names.
bool is_lower_bound(std::string_view name);
bool fuses_residual_norm(std::string_view name);
bool is_exact(std::string_view name);
bool is_calibratable(std::string_view name);
bool uses_p2p_kernels(std::string_view name);
bool is_nccl(std::string_view name);
// Whether a message of `bytes` is within the strategy's range and multiple (true for unknown names:
// nothing is known against it).
bool fits_message_range(std::string_view name, std::int64_t bytes);

// The entries a step's allreduces compete on as plain allreduces: exact, absorbing no other op,
// not a bound, not a selector, not the correctness baseline (nccl, oneshot, oneshot_push, twoshot).
// bench-comm's `fastest` column is chosen among them; false for unknown names.
bool competes_as_plain_allreduce(std::string_view name);
// Whether the name is a serving engine's dispatch (sglang, vllm); false for unknown names.
bool is_engine_dispatch(std::string_view name);
// Whether a strategy may be picked as the best or as the plain-decoding baseline: not a lower
// bound, and exact unless lossy ones are allowed (run and sweep --allow-lossy). False for unknown
// names unless lossy ones are allowed.
bool may_be_picked(std::string_view name, bool allow_lossy);

// Names of the entries with runs == true, in table order; those `--strategy all` expands to (the
// runnable ones except the engines' dispatch); those with calibratable; those a given kernel
// implements.
std::vector<std::string> runnable_strategy_names();
std::vector<std::string> priced_strategy_names();  // every entry with a cost model, table order
std::vector<std::string> all_strategy_names();
std::vector<std::string> calibratable_strategy_names();
std::vector<std::string> bench_comm_names();  // every entry with a kernel, table order
std::string lower_bound_strategy();           // the name of the lower bound ("ideal")
std::string nccl_strategy();                  // the name of the NCCL baseline
std::vector<std::string> engine_dispatch_names();  // sglang, vllm

}  // namespace eaglesim
