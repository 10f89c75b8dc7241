// Batched, tree-shaped traces from gen: for Llama-3.1-8B at TP1 and Kimi-K2 at TP8, at batch
// 1, 8, 32 and 64 and SGLang configurations (steps, topk, draft tokens) (3,1,4), (5,4,8) and
// (6,8,32), every GEMM's rows and every allreduce's bytes follow batch x draft tokens, every
// attention op carries the batch and the KV lengths, the draft forwards' rows follow batch x topk,
// and each trace survives write -> read -> write unchanged. The chain at batch 1 is version 1 and
// byte for byte what --tokens gives.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "io/json_cursor.hpp"
#include "model/generator.hpp"
#include "model/speculative_flags.hpp"
#include "trace/trace_json.hpp"
#include "shipped_files.hpp"

using namespace eaglesim;
using test::shipped_model;

namespace {

struct Target {
  const char* model;
  const char* draft;
  int tp;
};

const Target kTargets[] = {{"llama-3.1-8b", "llama-3.1-8b-eagle3", 1}, {"kimi-k2-instruct", "kimi-k2-eagle3", 8}};
const int kBatches[] = {1, 8, 32, 64};
const std::tuple<int, int, int> kConfigs[] = {{3, 1, 4}, {5, 4, 8}, {6, 8, 32}};
constexpr std::int64_t kKvLen = 4096;

Trace generate(const Target& t, int batch, std::tuple<int, int, int> cfg, bool engine_cycle,
               std::vector<std::int64_t> kv_lens = {}) {
  GenOptions o;
  o.tp = t.tp;
  o.batch = batch;
  o.kv_len = kKvLen;
  o.kv_lens = std::move(kv_lens);
  SpeculativeFlags f;
  f.num_steps = std::get<0>(cfg);
  f.eagle_topk = std::get<1>(cfg);
  f.num_draft_tokens = std::get<2>(cfg);
  o.speculative = resolve_speculative_flags(f).config;
  o.draft = shipped_model(t.draft);
  o.engine_cycle = engine_cycle;
  return generate_trace(shipped_model(t.model), o);
}

const Step& step(const Trace& t, const char* name) {
  const Step* s = t.find_step(name);
  if (!s) throw std::runtime_error(std::string("no step ") + name);
  return *s;
}

// Rows of every GEMM (lm_head included unless `logit_rows` says otherwise), norm, residual add,
// embedding and dense activation; routed rows of the experts.
void expect_rows(const Step& s, std::int64_t rows, std::int64_t experts_per_token, std::int64_t logit_rows = 0) {
  SCOPED_TRACE(s.name);
  for (const Op& op : s.ops) {
    switch (op.kind) {
      case OpKind::gemm: EXPECT_EQ(op.m, rows) << op.name; break;
      case OpKind::lm_head: EXPECT_EQ(op.m, logit_rows > 0 ? logit_rows : rows) << op.name; break;
      case OpKind::grouped_gemm: EXPECT_EQ(op.tokens, rows * experts_per_token) << op.name; break;
      case OpKind::embedding:
      case OpKind::residual_add: EXPECT_EQ(op.tokens, rows) << op.name; break;
      case OpKind::act:
        EXPECT_EQ(op.tokens, op.name == "experts.act" ? rows * experts_per_token : rows) << op.name;
        break;
      case OpKind::rmsnorm:
        if (op.name != "qk_norm") EXPECT_EQ(op.tokens, rows) << op.name;
        break;
      default: break;
    }
  }
}

void expect_allreduces(const Step& s, const ModelConfig& m, int tp, std::int64_t rows, int expected_count) {
  SCOPED_TRACE(s.name);
  int count = 0;
  for (const Op& op : s.ops)
    if (op.kind == OpKind::allreduce) {
      ++count;
      EXPECT_EQ(op.bytes, rows * m.hidden * 2) << op.name;
    }
  EXPECT_EQ(count, tp == 1 ? 0 : expected_count);
}

void expect_attention(const Step& s, std::int64_t batch, std::int64_t q_tokens, AttentionMask mask,
                      const std::vector<std::int64_t>& kv_lens) {
  SCOPED_TRACE(s.name);
  int count = 0;
  for (const Op& op : s.ops)
    if (op.kind == OpKind::attention) {
      ++count;
      EXPECT_EQ(op.batch, batch);
      EXPECT_EQ(op.q_tokens, q_tokens);
      EXPECT_EQ(op.mask, mask);
      EXPECT_EQ(op.kv_lens, kv_lens);
      EXPECT_EQ(op.kv_len, kv_lens.empty() ? kKvLen : *std::max_element(kv_lens.begin(), kv_lens.end()));
    }
  EXPECT_GT(count, 0);
}

void expect_round_trip(const Trace& t) {
  const std::string once = trace_to_string(t);
  const std::string twice = trace_to_string(parse_trace(JsonCursor::parse_text(once, "t.json"), "t.json"));
  EXPECT_EQ(once, twice);
}

}  // namespace

TEST(GeneratorBatch, RowsBytesAndAttentionFollowTheBatchAndTheConfig) {
  for (const Target& target : kTargets) {
    const ModelConfig m = shipped_model(target.model);
    for (int batch : kBatches)
      for (const auto& cfg : kConfigs)
        for (bool engine : {false, true}) {
          const auto [steps, topk, draft_tokens] = cfg;
          SCOPED_TRACE(::testing::Message() << target.model << " B=" << batch << " (" << steps << "," << topk << ","
                                            << draft_tokens << ")" << (engine ? " engine" : ""));
          const Trace t = generate(target, batch, cfg, engine);
          const std::int64_t B = batch, rows = B * draft_tokens;
          // meta.engine (the engine whose kernels the steps list) makes every generated trace version 2.
          EXPECT_EQ(required_version(t), 2);
          EXPECT_EQ(t.meta.tokens, draft_tokens);
          EXPECT_EQ(t.meta.draft_tokens, steps);
          if (batch > 1 || topk > 1 || engine) {  // the batch and SGLang's configuration in meta
            EXPECT_EQ(t.meta.batch, batch);
            ASSERT_TRUE(t.meta.speculative);
            EXPECT_EQ(t.meta.speculative->eagle_topk, topk);
          }
          const AttentionMask tree = topk > 1 ? AttentionMask::tree : AttentionMask::causal;
          const AttentionMask branches = topk > 1 ? AttentionMask::branches : AttentionMask::causal;

          const Step& verify = step(t, "verify");
          expect_rows(verify, rows, m.experts_per_token);
          expect_allreduces(verify, m, target.tp, rows, 2 * m.layers + 1);
          expect_attention(verify, B, draft_tokens, tree, {});
          for (const Op& op : verify.ops)
            if (op.kind == OpKind::grouped_gemm) EXPECT_EQ(op.experts, experts_touched(m.routed_experts, m.experts_per_token, rows));

          const ModelConfig d = shipped_model(target.draft);
          const Step& draft = step(t, engine && steps == 1 ? "draft_extend" : "draft");
          if (engine) {
            const Step& extend = step(t, "draft_extend");
            // Padded to num_steps + 1 rows per request; the lm_head over each request's last token.
            expect_rows(extend, B * (steps + 1), 0, B);
            expect_allreduces(extend, d, target.tp, B * (steps + 1), 3);
            expect_attention(extend, B, steps + 1, AttentionMask::causal, {});
            EXPECT_EQ(extend.ops.back().kind, OpKind::topk_select);
            EXPECT_EQ(extend.ops.back().rows, B);
            EXPECT_EQ(extend.ops.back().topk, topk);
            bool fc = false;
            for (const Op& op : draft.ops) fc = fc || op.name == "fc";
            EXPECT_FALSE(fc) << "a draft forward reads the head's own hidden state, no fc";
            EXPECT_EQ(draft.ops.back().rows, B * topk);
            EXPECT_EQ(verify.ops.front().kind, OpKind::tree_build);
            EXPECT_EQ(verify.ops.back().kind, OpKind::host_sync);
            EXPECT_EQ(verify.ops[verify.ops.size() - 2].rows, rows);  // sampling over every verified token
            EXPECT_EQ(verify.ops[verify.ops.size() - 2].vocab, m.vocab);
            EXPECT_EQ(draft_forwards_per_cycle(t), steps - 1);
          } else {
            EXPECT_EQ(draft_forwards_per_cycle(t), steps);
          }
          expect_rows(draft, B * topk, 0);
          expect_allreduces(draft, d, target.tp, B * topk, 3);
          expect_attention(draft, B, topk, branches, {});

          const Step& decode = step(t, "decode");
          expect_rows(decode, B, m.experts_per_token);
          expect_allreduces(decode, m, target.tp, B, 2 * m.layers + 1);
          expect_attention(decode, B, 1, AttentionMask::causal, {});
          expect_round_trip(t);
        }
  }
}

TEST(GeneratorBatch, RaggedKvLengthsReachEveryAttentionOp) {
  const std::vector<std::int64_t> kv{512, 4096, 1024, 8192, 300, 2048, 2048, 16384};
  const Trace t = generate(kTargets[1], 8, {5, 4, 8}, true, kv);
  EXPECT_EQ(t.meta.kv_lens, kv);
  EXPECT_FALSE(t.meta.kv_len.has_value());
  expect_attention(step(t, "verify"), 8, 8, AttentionMask::tree, kv);
  expect_attention(step(t, "draft_extend"), 8, 6, AttentionMask::causal, kv);
  expect_attention(step(t, "draft"), 8, 4, AttentionMask::branches, kv);
  expect_attention(step(t, "decode"), 8, 1, AttentionMask::causal, kv);
  expect_round_trip(t);
  // Equal lengths are no ragged batch: one kv_len, as --kv-len would give.
  const Trace same = generate(kTargets[0], 4, {3, 1, 4}, false, {2048, 2048, 2048, 2048});
  EXPECT_TRUE(same.meta.kv_lens.empty());
  EXPECT_EQ(same.meta.kv_len, 2048);
}

TEST(GeneratorBatch, ChainAtBatchOneIsTheTokensTraceByteForByte) {
  for (const Target& target : kTargets)
    for (int steps : {1, 3, 7}) {
      SCOPED_TRACE(::testing::Message() << target.model << " steps " << steps);
      GenOptions old;
      old.tp = target.tp;
      old.tokens = steps + 1;
      old.kv_len = kKvLen;
      old.draft = shipped_model(target.draft);
      const Trace sglang = generate(target, 1, {steps, 1, steps + 1}, false);
      EXPECT_EQ(required_version(sglang), 2);  // meta.engine
      EXPECT_EQ(trace_to_string(sglang), trace_to_string(generate_trace(shipped_model(target.model), old)));
    }
}

TEST(GeneratorBatch, AttentionCostInputsSumOverRequests) {
  const Trace t = generate(kTargets[0], 8, {3, 1, 4}, false);
  const Op* attn = nullptr;
  for (const Op& op : step(t, "verify").ops)
    if (op.kind == OpKind::attention) { attn = &op; break; }
  ASSERT_NE(attn, nullptr);
  Op one = *attn;
  one.batch = 1;
  EXPECT_DOUBLE_EQ(attn->kv_len_total(), 8.0 * kKvLen);
  EXPECT_DOUBLE_EQ(attn->flops(), 8 * one.flops());
  EXPECT_DOUBLE_EQ(attn->io_bytes(), 8 * one.io_bytes());
}

// Kimi-K2 (384 experts, top-8): every MoE layer of a step touches the expected distinct experts
// of its tokens, 384 x (1 - (1 - 8/384)^T) rounded, worked out by hand per (batch, config).
TEST(GeneratorBatch, MoeLayersTouchTheExpectedDistinctExperts) {
  const Target kimi = kTargets[1];
  struct Case {
    int batch;
    std::tuple<int, int, int> cfg;
    std::int64_t verify_experts, decode_experts;
  };
  const Case cases[] = {
      {1, {3, 1, 4}, 31, 8},      // T = 4: 31.01; decode T = 1: 8
      {8, {3, 1, 4}, 188, 60},    // T = 32: 188.23 (min(E, T k) = 256); decode T = 8: 59.52
      {8, {5, 4, 8}, 284, 60},    // T = 64: 284.19 (384)
      {64, {5, 4, 8}, 384, 284},  // T = 512: 384.00; decode T = 64: 284.19
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "B=" << c.batch << " draft tokens " << std::get<2>(c.cfg));
    const Trace t = generate(kimi, c.batch, c.cfg, false);
    for (const auto& [name, expected] : {std::pair<const char*, std::int64_t>{"verify", c.verify_experts},
                                         std::pair<const char*, std::int64_t>{"decode", c.decode_experts}}) {
      int moe_ops = 0;
      for (const Op& op : step(t, name).ops)
        if (op.kind == OpKind::grouped_gemm) {
          ++moe_ops;
          EXPECT_EQ(op.experts, expected) << name << " layer " << op.layer << " " << op.name;
        }
      EXPECT_EQ(moe_ops, 2 * 60) << name;  // layers 1-60 are MoE, two grouped GEMMs each
    }
  }
}
