#pragma once
// The request-level simulation of one engine instance: a benchmark client sends the workload's
// requests (at their arrival times, at most max_concurrency in flight), the engine's scheduler
// (scheduler_rules.hpp) forms each iteration's batch, admits and retracts requests by its KV-cache
// capacity, and every iteration is priced by IterationCosts at the batch it runs. Each request's
// first token comes at the end of its last prefill chunk; a decode forward adds one token, a
// speculative cycle as many as the request accepts (accept_sampler.hpp). Deterministic for a seed.
// With SGLang's data-parallel attention (SchedulerRules::dp > 1) the instance is dp schedulers,
// one per attention rank, each with its own queue, KV pool (kv_capacity_tokens each) and limits;
// the client's requests go to them in turn, and they step together: each forward every rank runs
// its own prefill or decode (or an idle batch), the forward lasting as long as its slowest part.
#include <cstdint>
#include <optional>
#include <vector>

#include "serve/accept_sampler.hpp"
#include "serve/iteration_costs.hpp"
#include "serve/scheduler_rules.hpp"
#include "serve/workload.hpp"

namespace eaglesim {

struct ServeSettings {
  SchedulerRules rules;
  // Speculative decoding: how many tokens a request gains per cycle, and the verify tokens each
  // request holds KV-cache room for during a cycle (num_draft_tokens).
  std::optional<AcceptSampler> accept;
  int verify_tokens = 1;
  int max_concurrency = 0;      // the client's cap on requests in flight; 0: none
  std::uint64_t seed = 1;
  bool record_iterations = false;
};

struct RequestRecord {
  std::int64_t input_len = 0, output_len = 0;
  double sent_s = 0, first_token_s = 0, finish_s = 0;
  int cycles = 0;          // decode forwards or speculative cycles it took part in
  int retractions = 0;     // times the engine dropped its KV cache to make room
};

enum class IterationKind { prefill, decode, mixed };
const char* to_string(IterationKind k);

struct IterationRecord {
  double start_s = 0, end_s = 0;
  IterationKind kind = IterationKind::decode;
  int decode_requests = 0;        // requests decoding (or in a speculative cycle)
  int prefill_requests = 0;       // requests with a prefill chunk
  std::int64_t prefill_tokens = 0;
  double mean_kv = 0;             // of the decoding requests
};

// Inter-token latencies as a histogram of 1 %-wide buckets: the mean exactly, quantiles to 0.5 %.
// SGLang's bench_serving splits a streamed chunk's gap over its tokens (one entry per token);
// vLLM's records one entry per chunk.
class LatencyHistogram {
 public:
  void add(double seconds, std::int64_t times = 1);
  std::size_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  double quantile(double q) const;  // seconds

 private:
  std::vector<std::uint64_t> buckets_;
  std::size_t count_ = 0;
  double sum_ = 0;
};

struct ServeRun {
  std::vector<RequestRecord> requests;   // in workload order
  std::vector<IterationRecord> iterations;  // when asked (ServeSettings::record_iterations)
  LatencyHistogram itl;
  std::size_t prefill_forwards = 0, decode_forwards = 0, mixed_forwards = 0;
  std::size_t retractions = 0;
  std::uint64_t spec_cycles = 0;         // request-cycles of speculative decoding
  std::uint64_t spec_tokens = 0;         // tokens they produced
  int peak_running = 0;
  double busy_s = 0;                     // time the engine ran forwards
};

// Throws InputError when a request can never fit the KV cache (prompt + output above capacity).
ServeRun simulate_serving(const std::vector<ServeRequest>& workload, const IterationCosts& costs,
                          const ServeSettings& settings);

}  // namespace eaglesim
