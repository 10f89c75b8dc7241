#include "serve/step_cost_table.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "backend/evaluate.hpp"
#include "backend/sim_backend.hpp"
#include "core/errors.hpp"
#include "model/generator.hpp"

namespace eaglesim {

namespace {

// Batch sizes and contexts the grid prices: the sizes engines capture CUDA graphs at and the
// powers of four of the context, enough for straight segments to follow the curves.
const int kBatches[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
const double kKvs[] = {128, 512, 2048, 8192, 32768, 131072, 524288};
const double kPrefillTokens[] = {16, 64, 256, 1024, 2048, 4096, 8192, 16384};

template <typename T, std::size_t N>
std::vector<T> grid_up_to(const T (&points)[N], T last) {
  std::vector<T> out;
  for (T p : points)
    if (p < last) out.push_back(p);
  out.push_back(last);
  return out;
}

// Position of x among ascending xs: the segment [i, i + 1] and the fraction along it (beyond the
// ends, the first or last segment extended).
std::pair<std::size_t, double> segment(const std::vector<double>& xs, double x) {
  if (xs.size() == 1) return {0, 0.0};
  std::size_t i = 0;
  while (i + 2 < xs.size() && x > xs[i + 1]) ++i;
  return {i, (x - xs[i]) / (xs[i + 1] - xs[i])};
}

double lerp(double a, double b, double f) { return a + (b - a) * f; }

// SGLang and vLLM prefill an MLA model (DeepSeek-V3, Kimi-K2) in the multi-head form (SGLang's
// forward_normal, vLLM's MLA prefill path): the latent KV is expanded per head and each head
// attends with qk_nope + rope dims for QK and v_head dims for PV, far fewer FLOPs than the
// absorbed form decode and verify use at prompt lengths. Priced as attention over per-head K/V
// whose width averages the two products.
void mla_prefill_in_mha_form(Trace& trace, const ModelConfig& m) {
  if (!m.is_mla()) return;
  for (Step& step : trace.steps)
    for (Op& op : step.ops)
      if (op.kind == OpKind::attention && op.variant == AttentionVariant::mla) {
        op.variant = AttentionVariant::gqa;
        op.kv_heads = op.heads;
        op.head_dim = (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) / 2;
        op.kv_lora_rank = 0;
        op.rope_dim = 0;
      }
}

}  // namespace

std::string engine_strategy(ServingEngine engine) { return engine == ServingEngine::vllm ? "vllm" : "sglang"; }

StepCostTable::StepCostTable(const StepCostRequest& rq) {
  if (!rq.target || !rq.topology) throw InputError("serve: a model and a topology are needed");
  if (rq.speculative && !rq.draft && !rq.mtp)
    throw InputError("serve: speculative decoding needs an EAGLE-3 head or the model's MTP layer");
  if (rq.draft && rq.mtp) throw InputError("serve: one draft: an EAGLE-3 head or the model's MTP layer, not both");
  const std::string strategy = rq.strategy.empty() ? engine_strategy(rq.engine) : rq.strategy;
  batches_ = grid_up_to(kBatches, std::max(1, rq.max_batch));
  batch_axis_.assign(batches_.begin(), batches_.end());
  kvs_ = grid_up_to(kKvs, static_cast<double>(std::max<std::int64_t>(rq.max_kv, 16)));
  SimBackend backend;

  GenOptions base;
  base.tp = rq.tp;
  base.weight_dtype = rq.weight_dtype;
  base.formats = rq.formats;
  base.kv_cache_dtype = rq.kv_cache_dtype;
  base.engine = rq.engine;
  base.ep = rq.ep;
  base.dp_attention = rq.dp_attention;

  // Decode and the speculative cycle: one engine-cycle trace per (batch, context).
  decode_.resize(batches_.size() * kvs_.size());
  cycle_.resize(decode_.size());
  for (std::size_t b = 0; b < batches_.size(); ++b)
    for (std::size_t k = 0; k < kvs_.size(); ++k) {
      GenOptions g = base;
      g.batch = batches_[b];
      g.kv_len = static_cast<std::int64_t>(kvs_[k]);
      g.engine_cycle = true;
      if (rq.speculative) {
        if (rq.mtp) g.mtp_draft = true;
        else g.draft = *rq.draft;
        g.speculative = rq.speculative;
        g.tokens = rq.speculative->num_draft_tokens;
      } else {
        g.tokens = 1;
      }
      const Trace trace = generate_trace(*rq.target, g);
      EvaluateRequest er;
      er.trace = &trace;
      er.topo = rq.topology;
      er.strategies = {strategy};
      er.options = rq.options;
      const Report report = evaluate_strategies(backend, er);
      const StrategyResult& r = report.results.front();
      if (!r.supported)
        throw InputError(fmt::format("--strategy: {} cannot run on {}: {}", strategy, rq.topology->name, r.reason));
      decode_[b * kvs_.size() + k] = r.decode ? r.decode_us : r.verify_us;
      cycle_[b * kvs_.size() + k] = r.cycle_us;
      ++points_;
      if (b == 0 && k == 0)
        for (const std::string& n : report.scenario.notes) notes_.push_back(n);
    }

  // Prefill: one request's forward over T new tokens, fresh (context T) and after a long prefix;
  // the attention's time is what depends on the prompt's split into requests and on the prefix.
  prefill_tokens_ = grid_up_to(kPrefillTokens, static_cast<double>(std::max<std::int64_t>(rq.max_prefill_tokens, 16)));
  const double prefix = static_cast<double>(std::max<std::int64_t>(rq.max_kv, 1024));
  for (double tokens : prefill_tokens_) {
    double step[2] = {0, 0}, attention[2] = {0, 0};
    for (int c = 0; c < 2; ++c) {
      GenOptions g = base;
      g.tokens = static_cast<int>(tokens);
      g.kv_len = static_cast<std::int64_t>(tokens + (c ? prefix : 0.0));
      Trace trace = generate_trace(*rq.target, g);
      mla_prefill_in_mha_form(trace, *rq.target);
      const PricedStep p = price_step(backend, trace, trace.steps.front(), strategy, rq.topology, rq.options);
      if (!p.supported)
        throw InputError(fmt::format("--strategy: {} cannot run on {}: {}", strategy, rq.topology->name, p.reason));
      step[c] = p.result.step_us;
      attention[c] = p.result.kind_us[static_cast<std::size_t>(OpKind::attention)];
      ++points_;
    }
    prefill_us_.push_back(step[0]);
    prefill_attention_us_.push_back(attention[0]);
    prefill_attention_per_prefix_us_.push_back(std::max(0.0, step[1] - step[0]) / prefix);
  }
  // The head's (or the MTP layer's) extend over a prompt: one decoder layer more than the target's.
  if (rq.draft || rq.mtp) draft_prefill_factor_ = 1.0 + 1.0 / std::max(1, rq.target->layers);
}

double StepCostTable::bilinear(const std::vector<double>& table, int batch, double kv) const {
  const auto [b, fb] = segment(batch_axis_, batch);
  const auto [k, fk] = segment(kvs_, kv);
  const auto at = [&](std::size_t bi, std::size_t ki) { return table[bi * kvs_.size() + ki]; };
  const std::size_t b1 = std::min(b + 1, batches_.size() - 1), k1 = std::min(k + 1, kvs_.size() - 1);
  return std::max(0.0, lerp(lerp(at(b, k), at(b, k1), fk), lerp(at(b1, k), at(b1, k1), fk), fb));
}

double StepCostTable::decode_us(int batch, double kv) const { return bilinear(decode_, batch, kv); }

double StepCostTable::cycle_us(int batch, double kv) const { return bilinear(cycle_, batch, kv); }

double StepCostTable::prefill_us(const std::vector<PrefillChunk>& chunks, bool speculative) const {
  const auto at = [&](const std::vector<double>& ys, double tokens) {
    const auto [i, f] = segment(prefill_tokens_, tokens);
    const std::size_t i1 = std::min(i + 1, prefill_tokens_.size() - 1);
    return std::max(0.0, lerp(ys[i], ys[i1], f));
  };
  // The GEMMs and everything else over all tokens at once; each request's attention on its own.
  double total = 0, us = 0;
  for (const PrefillChunk& c : chunks) {
    const double t = static_cast<double>(std::max<std::int64_t>(c.tokens, 1));
    total += t;
    us += at(prefill_attention_us_, t) + at(prefill_attention_per_prefix_us_, t) * static_cast<double>(c.prefix);
  }
  if (total == 0) return 0;
  us += std::max(0.0, at(prefill_us_, total) - at(prefill_attention_us_, total));
  return us * (speculative ? draft_prefill_factor_ : 1.0);
}

}  // namespace eaglesim
