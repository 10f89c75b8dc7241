#include "serve/serving_simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

const char* to_string(IterationKind k) {
  switch (k) {
    case IterationKind::prefill: return "prefill";
    case IterationKind::decode: return "decode";
    case IterationKind::mixed: return "mixed";
  }
  return "?";
}

namespace {
constexpr double kHistMin = 1e-6;           // 1 µs
constexpr double kHistStep = 0.00995033;    // ln(1.01)
constexpr std::size_t kHistBuckets = 2100;  // up to ~1e3 s
}  // namespace

void LatencyHistogram::add(double s, std::int64_t times) {
  if (buckets_.empty()) buckets_.assign(kHistBuckets, 0);
  const double x = std::max(s, kHistMin);
  const auto b = std::min(kHistBuckets - 1, static_cast<std::size_t>(std::log(x / kHistMin) / kHistStep));
  buckets_[b] += static_cast<std::uint64_t>(times);
  count_ += static_cast<std::size_t>(times);
  sum_ += s * static_cast<double>(times);
}

double LatencyHistogram::quantile(double q) const {
  if (!count_) return 0;
  const auto target = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= std::max<std::uint64_t>(target, 1)) return kHistMin * std::exp((static_cast<double>(b) + 0.5) * kHistStep);
  }
  return kHistMin * std::exp(static_cast<double>(kHistBuckets) * kHistStep);
}

namespace {

// A request inside the engine.
struct Live {
  std::int64_t prompt = 0;     // tokens to prefill (the input, plus output so far after a retraction)
  std::int64_t prefilled = 0;  // of them, in the KV cache
  std::int64_t generated = 0;  // output tokens so far
  double last_emit_s = 0;
};

class Simulation {
 public:
  Simulation(const std::vector<ServeRequest>& w, const IterationCosts& c, const ServeSettings& s)
      : work_(w), costs_(c), s_(s), rules_(s.rules), rng_(s.seed) {
    run_.requests.resize(w.size());
    live_.resize(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      RequestRecord& r = run_.requests[i];
      r.input_len = w[i].input_len;
      r.output_len = w[i].output_len;
      if (w[i].input_len + w[i].output_len > rules_.kv_capacity_tokens)
        throw InputError(fmt::format("workload: request {} needs {} positions of KV cache (input {} + output {}); "
                                     "the engine's KV cache holds {} on this deployment: shorten the requests or "
                                     "use more GPUs (--tp) or a larger --mem-fraction",
                                     i, w[i].input_len + w[i].output_len, w[i].input_len, w[i].output_len,
                                     rules_.kv_capacity_tokens));
    }
    ranks_.resize(static_cast<std::size_t>(std::max(1, rules_.dp)));
    for (Rank& k : ranks_) k.ratio = rules_.new_token_ratio_init;
    rank_of_.assign(w.size(), 0);
  }

  ServeRun run() {
    std::size_t done = 0;
    while (done < work_.size()) {
      send(now_);
      if (idle()) {
        // Idle until the next request can be sent.
        if (next_ >= work_.size() || in_flight_ >= cap()) throw std::logic_error("serve: idle with nothing to send");
        now_ = std::max(now_, work_[next_].arrival_s);
        continue;
      }
      const double start = now_;
      if (rules_.mixed_batches) vllm_step(); else sglang_step();
      run_.busy_s += now_ - start;
      done = finished_;
    }
    return std::move(run_);
  }

 private:
  // One DP rank's scheduler (SGLang --enable-dp-attention; one rank otherwise): its queue, its
  // running requests, its KV pool and its admission ratio.
  struct Rank {
    std::deque<std::size_t> waiting;
    std::vector<std::size_t> decoding;
    std::int64_t kv_used = 0;
    double ratio = 0.7;
  };

  int cap() const { return s_.max_concurrency > 0 ? s_.max_concurrency : std::numeric_limits<int>::max(); }
  bool idle() const {
    for (const Rank& k : ranks_)
      if (!k.decoding.empty() || !k.waiting.empty()) return false;
    return true;
  }
  Rank& rank_of(std::size_t i) { return ranks_[static_cast<std::size_t>(rank_of_[i])]; }
  bool speculative() const { return s_.accept.has_value(); }

  // The client sends every request whose time has come while fewer than the cap are in flight.
  void send(double t) {
    while (next_ < work_.size() && in_flight_ < cap() && work_[next_].arrival_s <= t) {
      const std::size_t i = next_++;
      run_.requests[i].sent_s = std::max(work_[i].arrival_s, slot_free_s_);
      live_[i] = Live{work_[i].input_len, 0, 0, 0};
      // SGLang's DataParallelController hands requests to the DP ranks in turn (round robin).
      rank_of_[i] = static_cast<int>(dispatched_++ % ranks_.size());
      rank_of(i).waiting.push_back(i);
      ++in_flight_;
    }
  }

  void emit(std::size_t i, std::int64_t tokens) {
    Live& l = live_[i];
    RequestRecord& r = run_.requests[i];
    if (l.generated == 0 && r.first_token_s == 0) r.first_token_s = now_;
    else if (rules_.engine == ServingEngine::sglang) run_.itl.add((now_ - l.last_emit_s) / static_cast<double>(tokens), tokens);
    else run_.itl.add(now_ - l.last_emit_s);
    l.last_emit_s = now_;
    l.generated += tokens;
  }

  void finish(std::size_t i) {
    run_.requests[i].finish_s = now_;
    rank_of(i).kv_used -= kv_cached_[i];
    kv_cached_[i] = 0;
    ++finished_;
    --in_flight_;
    slot_free_s_ = now_;
    send(now_);
  }

  std::int64_t remaining(std::size_t i) const { return work_[i].output_len - live_[i].generated; }

  // Drops a running request's KV cache and puts it back at the head of the queue: it prefills its
  // prompt and the output so far again (SGLang's retraction, vLLM's recompute preemption).
  void retract(std::size_t i) {
    Rank& k = rank_of(i);
    k.kv_used -= kv_cached_[i];
    kv_cached_[i] = 0;
    live_[i].prompt = work_[i].input_len + live_[i].generated;
    live_[i].prefilled = 0;
    ++run_.requests[i].retractions;
    ++run_.retractions;
    k.waiting.push_front(i);
  }

  // After a retraction SGLang sets the ratio to what the batch has decoded so far (plus 20 steps
  // per request) over what it will decode in all.
  void reset_ratio_after_retraction(Rank& k) {
    double decoded = 0, planned = 0;
    for (std::size_t i : k.decoding) {
      decoded += static_cast<double>(live_[i].generated);
      planned += static_cast<double>(work_[i].output_len);
    }
    k.ratio = std::min(1.0, (decoded + 20.0 * static_cast<double>(k.decoding.size())) / (planned + 1));
  }

  void record(IterationKind kind, double start, int decoding, int prefilling, std::int64_t tokens, double kv) {
    if (!s_.record_iterations) return;
    run_.iterations.push_back({start, now_, kind, decoding, prefilling, tokens, kv});
  }

  // One decode forward or speculative cycle over `batch` (already holding KV room).
  void advance_decoders(const std::vector<std::size_t>& batch) {
    for (std::size_t i : batch) {
      ++run_.requests[i].cycles;
      std::int64_t gain = 1;
      if (speculative()) {
        gain = std::min<std::int64_t>(s_.accept->draw(rng_), remaining(i));
        ++run_.spec_cycles;
        run_.spec_tokens += static_cast<std::uint64_t>(gain);
      }
      emit(i, gain);
      kv_cached_[i] += gain;
      rank_of(i).kv_used += gain;
    }
  }

  double mean_kv(const std::vector<std::size_t>& batch) const {
    double sum = 0;
    for (std::size_t i : batch) sum += static_cast<double>(kv_cached_[i]);
    return batch.empty() ? 0 : sum / static_cast<double>(batch.size());
  }

  double decode_cost(int batch, double kv) const {
    return speculative() ? costs_.cycle_us(batch, kv) : costs_.decode_us(batch, kv);
  }

  // Completes the prefill chunks of `chunks` (request, tokens): KV grows, finished prompts emit
  // their first token and start decoding.
  void finish_chunks(const std::vector<std::pair<std::size_t, std::int64_t>>& chunks) {
    for (const auto& [i, tokens] : chunks) {
      live_[i].prefilled += tokens;
      if (live_[i].prefilled < live_[i].prompt) continue;
      if (live_[i].generated == 0) emit(i, 1);
      if (remaining(i) <= 0) finish(i);
      else rank_of(i).decoding.push_back(i);
    }
  }

  // KV room a running request keeps for its remaining output (SGLang's admission reserve).
  double reserved(const Rank& k) const {
    double sum = 0;
    for (std::size_t i : k.decoding) sum += static_cast<double>(std::min<std::int64_t>(remaining(i), 4096)) * k.ratio;
    return sum;
  }

  // ------------------------------------------------------------------ SGLang
  // What one rank's scheduler runs in a forward: prefill chunks, or a decode of its running
  // requests, or (with DP attention) an idle batch while other ranks work.
  struct RankPlan {
    std::vector<std::pair<std::size_t, std::int64_t>> chunks;
    std::vector<PrefillChunk> priced;
    bool decode = false;
    bool retracted = false;
  };

  // SGLang's PrefillAdder on one rank: free KV less every running request's remaining output
  // (clipped at 4096) times the ratio; a new request must fit its prompt and its whole (clipped)
  // output. A prompt already part-way through its chunks comes first, then the queue in order.
  void plan_prefill(Rank& k, RankPlan& plan) {
    std::int64_t budget = rules_.token_budget;
    double free = static_cast<double>(rules_.kv_capacity_tokens - k.kv_used) - reserved(k);
    while (!k.waiting.empty() && budget > 0) {
      const std::size_t i = k.waiting.front();
      const bool started = live_[i].prefilled > 0;
      if (!started) {
        if (static_cast<int>(k.decoding.size() + plan.chunks.size()) >= rules_.max_running_requests) break;
        const double need = static_cast<double>(live_[i].prompt) + static_cast<double>(std::min<std::int64_t>(remaining(i), 4096));
        if (need >= free && !(k.decoding.empty() && plan.chunks.empty())) break;
        free -= need;
      }
      const std::int64_t take = std::min(live_[i].prompt - live_[i].prefilled, budget);
      plan.chunks.emplace_back(i, take);
      plan.priced.push_back({take, live_[i].prefilled});
      kv_cached_[i] += take;
      k.kv_used += take;
      budget -= take;
      if (live_[i].prefilled + take < live_[i].prompt) break;  // chunked: the rest next forward
      k.waiting.pop_front();
    }
  }

  // One forward of the instance. Each rank's scheduler forms its own batch: a prefill whenever
  // requests wait and one can be admitted, else a decode (or speculative cycle) of its running
  // requests. With DP attention the ranks step together (their MoE layers exchange tokens), a rank
  // without work running an idle batch: the forward lasts as long as its slowest part, a prefill
  // priced at the largest rank's chunks and a decode at the busiest rank's batch on every rank.
  void sglang_step() {
    const int dp = static_cast<int>(ranks_.size());
    std::vector<RankPlan> plans(ranks_.size());
    double prefill_us = 0, kv_sum = 0;
    int prefilling = 0, decoders = 0, busiest = 0;
    std::int64_t prefill_tokens = 0;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      Rank& k = ranks_[r];
      RankPlan& plan = plans[r];
      plan_prefill(k, plan);
      if (!plan.chunks.empty()) {
        prefill_us = std::max(prefill_us, costs_.prefill_us(plan.priced, speculative()));
        prefilling += static_cast<int>(plan.chunks.size());
        for (const auto& c : plan.chunks) prefill_tokens += c.second;
        continue;
      }
      if (k.decoding.empty()) {
        // With nothing decoding the reserve is empty and every request fits (checked up front).
        if (!k.waiting.empty()) throw std::logic_error("serve: a request could not be admitted into an idle engine");
        continue;
      }
      const std::size_t retractions = run_.retractions;
      if (make_kv_room(k)) reset_ratio_after_retraction(k);
      plan.decode = true;
      plan.retracted = run_.retractions != retractions;
      for (std::size_t i : k.decoding) kv_sum += static_cast<double>(kv_cached_[i]);
      decoders += static_cast<int>(k.decoding.size());
      busiest = std::max(busiest, static_cast<int>(k.decoding.size()));
    }
    if (prefilling == 0 && decoders == 0) throw std::logic_error("serve: an SGLang step scheduled nothing");
    const double start = now_;
    const double kv = decoders ? kv_sum / decoders : 0.0;
    // The step grid is indexed by the instance's batch, ceil(batch / dp) requests on each rank.
    const double decode_us = decoders ? decode_cost(busiest * dp, kv) : 0.0;
    now_ += std::max(prefill_us, decode_us) * 1e-6;
    const IterationKind kind =
        decoders == 0 ? IterationKind::prefill : prefilling == 0 ? IterationKind::decode : IterationKind::mixed;
    ++(kind == IterationKind::decode ? run_.decode_forwards : kind == IterationKind::mixed ? run_.mixed_forwards : run_.prefill_forwards);
    if (decoders) run_.peak_running = std::max(run_.peak_running, decoders);
    record(kind, start, decoders, prefilling, prefill_tokens, kv);
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      Rank& k = ranks_[r];
      const RankPlan& plan = plans[r];
      if (!plan.chunks.empty()) {
        finish_chunks(plan.chunks);
      } else if (plan.decode) {
        advance_decoders(k.decoding);
        retire_finished(k);
        if (!plan.retracted) k.ratio = std::max(rules_.new_token_ratio_min, k.ratio - rules_.new_token_ratio_decay);
      }
    }
  }

  // KV positions a decoding request holds during one forward: its token, or the cycle's tree.
  std::int64_t cycle_tokens() const { return speculative() ? s_.verify_tokens : 1; }

  // Retracts the rank's latest admitted decoding requests while one forward's tokens would not
  // fit its KV cache (one request always runs); whether any was retracted.
  bool make_kv_room(Rank& k) {
    bool retracted = false;
    while (k.decoding.size() > 1 &&
           k.kv_used + cycle_tokens() * static_cast<std::int64_t>(k.decoding.size()) > rules_.kv_capacity_tokens) {
      const std::size_t i = k.decoding.back();
      k.decoding.pop_back();
      retract(i);
      retracted = true;
    }
    return retracted;
  }

  // After a forward: the rank's decoding requests that have their whole output finish, the rest go on.
  void retire_finished(Rank& k) {
    std::vector<std::size_t> still;
    std::vector<std::size_t> done;
    for (std::size_t i : k.decoding) {
      if (remaining(i) <= 0) done.push_back(i);
      else still.push_back(i);
    }
    k.decoding = std::move(still);
    for (std::size_t i : done) finish(i);
  }

  // ------------------------------------------------------------------ vLLM V1
  void vllm_step() {
    Rank& k = ranks_.front();
    std::int64_t budget = rules_.token_budget;
    const std::int64_t per_request = cycle_tokens();
    // Running requests first: each decoding one takes its tokens of the budget and KV room,
    // preempting the latest admitted when the cache is full.
    make_kv_room(k);
    std::vector<std::size_t> batch;
    for (std::size_t i : k.decoding) {
      if (budget < per_request) break;
      batch.push_back(i);
      budget -= per_request;
    }
    // Then prompts: a part-prefilled one continues, then the queue, each chunk within the budget.
    std::vector<std::pair<std::size_t, std::int64_t>> chunks;
    std::vector<PrefillChunk> priced;
    while (!k.waiting.empty() && budget > 0) {
      const std::size_t i = k.waiting.front();
      if (live_[i].prefilled == 0 &&
          static_cast<int>(k.decoding.size() + chunks.size()) >= rules_.max_running_requests)
        break;
      const std::int64_t take = std::min({live_[i].prompt - live_[i].prefilled, budget,
                                          rules_.kv_capacity_tokens - k.kv_used -
                                              per_request * static_cast<std::int64_t>(batch.size())});
      if (take <= 0) break;
      chunks.emplace_back(i, take);
      priced.push_back({take, live_[i].prefilled});
      kv_cached_[i] += take;
      k.kv_used += take;
      budget -= take;
      if (live_[i].prefilled + take < live_[i].prompt) break;
      k.waiting.pop_front();
    }
    if (batch.empty() && chunks.empty()) throw std::logic_error("serve: a vLLM step scheduled nothing");
    const double start = now_;
    const double kv = mean_kv(batch);
    const int b = static_cast<int>(batch.size());
    double us = b ? decode_cost(b, kv) : 0.0;
    if (!chunks.empty()) {
      if (b) {
        // The chunks' tokens ride in the same forward: their GEMMs' share on top of the
        // decoders', and their own attention.
        const PrefillChunk decoders{static_cast<std::int64_t>(b) * per_request, 0};
        std::vector<PrefillChunk> with = priced;
        with.push_back(decoders);
        us += std::max(0.0, costs_.prefill_us(with, speculative()) - costs_.prefill_us({decoders}, speculative()));
      } else {
        us += costs_.prefill_us(priced, speculative());
      }
    }
    run_.peak_running = std::max(run_.peak_running, b + static_cast<int>(chunks.size()));
    now_ += us * 1e-6;
    const IterationKind kind = chunks.empty() ? IterationKind::decode : b ? IterationKind::mixed : IterationKind::prefill;
    ++(kind == IterationKind::decode ? run_.decode_forwards : kind == IterationKind::mixed ? run_.mixed_forwards : run_.prefill_forwards);
    std::int64_t prefill_tokens = 0;
    for (const auto& c : chunks) prefill_tokens += c.second;
    record(kind, start, b, static_cast<int>(chunks.size()), prefill_tokens, kv);
    advance_decoders(batch);
    retire_finished(k);
    finish_chunks(chunks);
  }

  const std::vector<ServeRequest>& work_;
  const IterationCosts& costs_;
  const ServeSettings& s_;
  const SchedulerRules& rules_;
  ServeRng rng_;
  ServeRun run_;
  std::vector<Live> live_;
  std::vector<std::int64_t> kv_cached_ = std::vector<std::int64_t>(work_.size(), 0);
  std::vector<Rank> ranks_;
  std::vector<int> rank_of_;  // the DP rank each request was sent to
  std::size_t dispatched_ = 0;
  std::size_t next_ = 0, finished_ = 0;
  int in_flight_ = 0;
  double now_ = 0, slot_free_s_ = 0;
};

}  // namespace

ServeRun simulate_serving(const std::vector<ServeRequest>& workload, const IterationCosts& costs,
                          const ServeSettings& settings) {
  if (workload.empty()) throw InputError("workload: no requests");
  if (settings.rules.dp > 1 && settings.rules.mixed_batches)
    throw InputError("serve: data-parallel attention is simulated with SGLang's scheduler (--engine sglang)");
  if (settings.rules.kv_capacity_tokens <= 0)
    throw InputError("serve: the KV cache holds no tokens on this deployment (weights fill the memory)");
  return Simulation(workload, costs, settings).run();
}

}  // namespace eaglesim
