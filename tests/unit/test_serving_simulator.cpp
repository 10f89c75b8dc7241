#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/errors.hpp"
#include "serve/accept_sampler.hpp"
#include "serve/capacity_search.hpp"
#include "serve/serving_metrics.hpp"
#include "serve/serving_simulator.hpp"
#include "serve/workload.hpp"

using namespace eaglesim;

namespace {

// Costs by formula: a decode forward `decode` µs plus `per_request` per request, a cycle the same
// times `cycle_factor`, a prefill `prefill_per_token` per token.
struct FormulaCosts : IterationCosts {
  double decode = 10000, per_request = 0, cycle_factor = 1.5, prefill_per_token = 500;
  double decode_us(int batch, double) const override { return decode + per_request * batch; }
  double cycle_us(int batch, double kv) const override { return decode_us(batch, kv) * cycle_factor; }
  double prefill_us(const std::vector<PrefillChunk>& chunks, bool) const override {
    double t = 0;
    for (const PrefillChunk& c : chunks) t += static_cast<double>(c.tokens);
    return t * prefill_per_token;
  }
};

ServeSettings settings(ServingEngine engine = ServingEngine::sglang) {
  ServeSettings s;
  s.rules.engine = engine;
  s.rules.mixed_batches = engine == ServingEngine::vllm;
  s.rules.kv_capacity_tokens = 1'000'000;
  s.rules.max_running_requests = 256;
  s.rules.token_budget = 8192;
  return s;
}

std::vector<ServeRequest> same(int n, std::int64_t in, std::int64_t out) {
  return std::vector<ServeRequest>(static_cast<std::size_t>(n), ServeRequest{in, out, 0});
}

}  // namespace

// One request: its prefill (100 tokens x 500 µs = 50 ms) gives the first token, then ten decode
// forwards of 10 ms give the other ten.
TEST(ServingSimulator, OneRequestIsHandComputable) {
  FormulaCosts c;
  const ServeRun run = simulate_serving(same(1, 100, 11), c, settings());
  const ServeMetrics m = serving_metrics(run);
  EXPECT_NEAR(m.ttft.mean_ms, 50.0, 1e-9);
  EXPECT_NEAR(m.e2e.mean_ms, 150.0, 1e-9);
  EXPECT_NEAR(m.tpot.mean_ms, 10.0, 1e-9);
  EXPECT_NEAR(m.output_throughput, 11 / 0.150, 1e-6);
  EXPECT_NEAR(m.itl.mean_ms, 10.0, 1e-9);
  EXPECT_EQ(run.prefill_forwards, 1u);
  EXPECT_EQ(run.decode_forwards, 10u);
  EXPECT_NEAR(m.concurrency, 1.0, 1e-9);
}

// SGLang runs a prefill whenever requests wait; the second request's prefill stalls the first's
// decoding, and both then decode together.
TEST(ServingSimulator, SglangPrefillsFirstAndStallsDecode) {
  FormulaCosts c;
  std::vector<ServeRequest> w = {{100, 4, 0}, {100, 4, 0.055}};
  const ServeRun run = simulate_serving(w, c, settings());
  // t=0..50 ms prefill A; 50..60 decode A (B arrives at 55 ms); 60..110 prefill B; then decodes.
  EXPECT_NEAR(run.requests[0].first_token_s, 0.050, 1e-12);
  EXPECT_NEAR(run.requests[1].first_token_s, 0.110, 1e-12);
  EXPECT_NEAR(run.requests[1].sent_s, 0.055, 1e-12);
  EXPECT_NEAR(run.requests[0].finish_s, 0.130, 1e-12);  // its 2nd token at 60, the 3rd and 4th at 120, 130
  EXPECT_EQ(run.prefill_forwards, 2u);
}

// vLLM puts the waiting prompt into the running request's step: no stall, one mixed forward.
TEST(ServingSimulator, VllmMixesPrefillChunksIntoTheDecodeStep) {
  FormulaCosts c;
  std::vector<ServeRequest> w = {{100, 4, 0}, {100, 4, 0.055}};
  const ServeRun run = simulate_serving(w, c, settings(ServingEngine::vllm));
  EXPECT_EQ(run.mixed_forwards, 1u);
  EXPECT_EQ(run.prefill_forwards, 1u);
  // B's chunk rides with A's decode at 60 ms: 10 ms + its 100 tokens' marginal prefill.
  EXPECT_NEAR(run.requests[1].first_token_s, 0.060 + 0.010 + 0.050, 1e-9);
}

// The client's cap: with two slots, the third request is sent when the first finishes and its
// TTFT counts from then, not from t=0.
TEST(ServingSimulator, MaxConcurrencyHoldsRequestsAtTheClient) {
  FormulaCosts c;
  ServeSettings s = settings();
  s.max_concurrency = 2;
  const ServeRun run = simulate_serving(same(4, 10, 3), c, s);
  EXPECT_DOUBLE_EQ(run.requests[0].sent_s, 0.0);
  EXPECT_DOUBLE_EQ(run.requests[1].sent_s, 0.0);
  EXPECT_GT(run.requests[2].sent_s, 0.0);
  EXPECT_DOUBLE_EQ(run.requests[2].sent_s, std::min(run.requests[0].finish_s, run.requests[1].finish_s));
  EXPECT_LE(run.peak_running, 2);
  const ServeMetrics m = serving_metrics(run);
  EXPECT_LE(m.concurrency, 2.0 + 1e-9);
}

// Accepting every draft: each cycle gains depth + 1 tokens, so 1 + 4k output tokens take k cycles.
TEST(ServingSimulator, SpeculativeCyclesAdvanceByTheAcceptedTokens) {
  FormulaCosts c;
  ServeSettings s = settings();
  s.accept.emplace(4.0, 3);
  s.verify_tokens = 4;
  const ServeRun run = simulate_serving(same(1, 100, 1 + 4 * 5), c, s);
  EXPECT_EQ(run.decode_forwards, 5u);
  EXPECT_EQ(run.spec_tokens, 20u);
  EXPECT_NEAR(serving_metrics(run).accept_length, 4.0, 1e-12);
  EXPECT_NEAR(run.requests[0].finish_s, 0.050 + 5 * 0.015, 1e-12);
}

TEST(AcceptSampler, MeanIsTheGivenAcceptLength) {
  for (double e : {1.0, 1.7, 2.5, 3.9}) {
    const AcceptSampler a(e, 3);
    ServeRng rng(7);
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      const int k = a.draw(rng);
      ASSERT_GE(k, 1);
      ASSERT_LE(k, 4);
      sum += k;
    }
    EXPECT_NEAR(sum / n, e, 0.01) << e;
  }
  EXPECT_THROW(AcceptSampler(4.5, 3), InputError);
  EXPECT_THROW(AcceptSampler(0.5, 3), InputError);
}

// A KV cache too small for the batch's growth: SGLang retracts and recomputes, and every request
// still completes with its whole output.
TEST(ServingSimulator, RetractsWhenTheKvCacheRunsOutAndStillFinishes) {
  FormulaCosts c;
  ServeSettings s = settings();
  s.rules.kv_capacity_tokens = 2000;
  const ServeRun run = simulate_serving(same(16, 100, 300), c, s);
  EXPECT_GT(run.retractions, 0u);
  for (const RequestRecord& r : run.requests) EXPECT_GT(r.finish_s, r.first_token_s);
  EXPECT_EQ(serving_metrics(run).total_output_tokens, 16 * 300);
}

TEST(ServingSimulator, ARequestLongerThanTheKvCacheIsRefused) {
  FormulaCosts c;
  ServeSettings s = settings();
  s.rules.kv_capacity_tokens = 1000;
  EXPECT_THROW(simulate_serving(same(1, 900, 200), c, s), InputError);
}

TEST(ServingSimulator, DeterministicForASeed) {
  FormulaCosts c;
  c.per_request = 100;
  WorkloadSpec w;
  w.num_prompts = 200;
  w.input_len = 512;
  w.output_len = 128;
  w.request_rate = 20;
  ServeSettings s = settings();
  s.accept.emplace(2.5, 3);
  s.verify_tokens = 4;
  const ServeMetrics a = serving_metrics(simulate_serving(make_workload(w), c, s));
  const ServeMetrics b = serving_metrics(simulate_serving(make_workload(w), c, s));
  EXPECT_EQ(a.output_throughput, b.output_throughput);
  EXPECT_EQ(a.ttft.p99_ms, b.ttft.p99_ms);
  EXPECT_EQ(a.itl.median_ms, b.itl.median_ms);
  w.seed = 2;
  s.seed = 2;
  const ServeMetrics other = serving_metrics(simulate_serving(make_workload(w), c, s));
  EXPECT_NE(a.ttft.p99_ms, other.ttft.p99_ms);
}

// Arrivals: Poisson at the rate given (mean gap 1 / rate); gamma gaps keep the mean at any
// burstiness; an infinite rate sends everything at once.
TEST(Workload, ArrivalsFollowTheRate) {
  WorkloadSpec w;
  w.num_prompts = 20000;
  w.request_rate = 4;
  for (double burst : {1.0, 0.25, 4.0}) {
    w.burstiness = burst;
    const auto r = make_workload(w);
    EXPECT_NEAR(r.back().arrival_s / (w.num_prompts - 1), 0.25, 0.01) << burst;
  }
  w.request_rate = INFINITY;
  for (const ServeRequest& q : make_workload(w)) ASSERT_EQ(q.arrival_s, 0.0);
}

// bench_serving's random lengths: uniform in [max(1, L*r), L]; vLLM's in [L(1-r), L(1+r)].
TEST(Workload, RandomLengthsFollowEachBenchmarksRule) {
  WorkloadSpec w;
  w.num_prompts = 5000;
  w.input_len = 1000;
  w.output_len = 200;
  w.range_ratio = 0.0;
  double sum = 0;
  for (const ServeRequest& q : make_workload(w)) {
    ASSERT_GE(q.input_len, 1);
    ASSERT_LE(q.input_len, 1000);
    sum += static_cast<double>(q.input_len);
  }
  EXPECT_NEAR(sum / w.num_prompts, 500.5, 10);
  w.range_rule = RangeRule::vllm;
  w.range_ratio = 0.5;
  for (const ServeRequest& q : make_workload(w)) {
    ASSERT_GE(q.input_len, 500);
    ASSERT_LE(q.input_len, 1500);
  }
  w.range_ratio = 0;
  for (const ServeRequest& q : make_workload(w)) ASSERT_EQ(q.output_len, 200);
}

TEST(Workload, BadSettingsNameTheFlag) {
  const auto message = [](WorkloadSpec w) {
    try {
      make_workload(w);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  WorkloadSpec w;
  w.request_rate = 0;
  EXPECT_NE(message(w).find("--request-rate"), std::string::npos);
  w = {};
  w.num_prompts = 0;
  EXPECT_NE(message(w).find("--num-prompts"), std::string::npos);
  w = {};
  w.output_len = 0;
  EXPECT_NE(message(w).find("--random-output-len"), std::string::npos);
  w = {};
  w.range_ratio = 1.5;
  EXPECT_NE(message(w).find("--random-range-ratio"), std::string::npos);
  w = {};
  w.burstiness = 0;
  EXPECT_NE(message(w).find("--burstiness"), std::string::npos);
}

namespace {
std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}
std::string lengths_error(const std::string& path) {
  try {
    read_lengths_file(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Workload, LengthsFilesInEveryFormat) {
  const auto jsonl = read_lengths_file(write_temp("l.jsonl", "{\"input_len\": 10, \"output_len\": 5}\n\n{\"input_len\": 7, \"output_len\": 3}\n"));
  ASSERT_EQ(jsonl.size(), 2u);
  EXPECT_EQ(jsonl[1].first, 7);
  const auto csv = read_lengths_file(write_temp("l.csv", "output_len, input_len\n5, 10\n3,7\n"));
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv[0].first, 10);
  EXPECT_EQ(csv[0].second, 5);
  const auto result = read_lengths_file(write_temp("r.json", "{\"input_lens\": [4, 5], \"output_lens\": [6, 7], \"ttfts\": []}"));
  ASSERT_EQ(result.size(), 2u);
  EXPECT_EQ(result[1].second, 7);
}

TEST(Workload, MalformedLengthsFilesSayWhereAndWhat) {
  EXPECT_NE(lengths_error(write_temp("e.jsonl", "")).find("empty"), std::string::npos);
  EXPECT_NE(lengths_error(write_temp("b.jsonl", "{\"input_len\": 10}\n")).find("line 1"), std::string::npos);
  EXPECT_NE(lengths_error(write_temp("t.jsonl", "{\"input_len\": 10, \"output_len\": 5}\n{\"input_len\": 1")).find("line 2"),
            std::string::npos);
  EXPECT_NE(lengths_error(write_temp("n.csv", "input_len,output_len\n10,-3\n")).find("line 2: output_len"), std::string::npos);
  EXPECT_NE(lengths_error(write_temp("h.csv", "a,b\n1,2\n")).find("header"), std::string::npos);
  EXPECT_NE(lengths_error(write_temp("m.json", "{\"input_lens\": [1, 2], \"output_lens\": [3]}")).find("output_lens"),
            std::string::npos);
  EXPECT_NE(lengths_error(write_temp("s.json", "{\"input_lens\": [1, \"x\"], \"output_lens\": [3, 4]}")).find("input_lens[1]"),
            std::string::npos);
  EXPECT_NE(lengths_error(::testing::TempDir() + "no-such-file.jsonl"), "");
}

// The search finds the largest load whose latency stays under the bound: here TPOT = load ms.
TEST(CapacitySearch, FindsTheLargestLoadMeetingTheSlo) {
  const auto slo = parse_slo("tpot_ms=37.5,p99_ttft_ms=1e9");
  ASSERT_EQ(slo[0].key, "mean_tpot_ms");
  auto sim = [](double load) {
    ServeMetrics m;
    m.tpot.mean_ms = load;
    m.output_throughput = load * 10;
    return m;
  };
  const CapacityResult rate = find_capacity(sim, slo, LoadAxis::request_rate, 1e4);
  ASSERT_TRUE(rate.load);
  EXPECT_NEAR(*rate.load, 37.5, 37.5 * 0.011);
  EXPECT_LE(*rate.load, 37.5);
  const CapacityResult conc = find_capacity(sim, slo, LoadAxis::concurrency, 1e4);
  EXPECT_EQ(*conc.load, 37.0);
  const CapacityResult none = find_capacity([](double) { ServeMetrics m; m.tpot.mean_ms = 99; return m; }, slo,
                                            LoadAxis::concurrency, 64);
  EXPECT_FALSE(none.load);
  EXPECT_NE(none.limit.find("mean_tpot_ms 99.0 > 37.5"), std::string::npos);
  EXPECT_THROW(parse_slo("tpot=5"), InputError);
  EXPECT_THROW(parse_slo("mean_tpot_ms=50"), InputError);  // nothing bounds queueing
  EXPECT_THROW(parse_slo("mean_tpot_ms=0"), InputError);
  EXPECT_THROW(parse_slo("p50_tpot_ms=3"), InputError);
}
