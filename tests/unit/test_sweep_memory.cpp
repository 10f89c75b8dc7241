// Memory check against hand-computed figures for Llama-3.1-70B (config: hidden 8192, 80 layers,
// 64 heads / 8 KV heads of 128, MLP 28672, vocab 128256, untied embeddings).
#include <gtest/gtest.h>

#include <string>

#include "model/model_config.hpp"
#include "sweep/memory_check.hpp"

using namespace eaglesim;

namespace {

ModelConfig llama70b() { return read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-70b.json"); }

GpuSpec gpu80() {
  GpuSpec g;
  g.name = "H100-80GB";
  g.mem_gb = 80;
  return g;
}

// Parameters by hand: per layer q,o 8192x8192, k,v 8192x1024, gate/up/down 3x8192x28672, two
// norms of 8192; embedding and lm_head 128256x8192; one final norm.
constexpr double kLayerLinear = 2.0 * 8192 * 8192 + 2.0 * 8192 * 1024 + 3.0 * 8192 * 28672;  // 855,638,016
constexpr double kLayerNorms = 2.0 * 8192;
constexpr double kVocabRows = 128256.0 * 8192;  // 1,050,673,152 each for embedding and lm_head
// KV cache per token over all layers: K and V, 8 heads of 128, bf16.
constexpr double kKvPerToken = 80.0 * 2 * 8 * 128 * 2;  // 327,680 B

}  // namespace

TEST(SweepMemory, Llama70bBf16DoesNotFitOneH100ButFitsTwo) {
  const ModelConfig m = llama70b();
  const double params_tp1 = 80 * (kLayerLinear + kLayerNorms) + 2 * kVocabRows + 8192;  // 70.55 B
  const MemoryNeed tp1 = memory_needed(m, nullptr, 1, DType::bf16, 4096);
  EXPECT_NEAR(tp1.weight_bytes, 2 * params_tp1, 2 * params_tp1 * 1e-6);
  EXPECT_NEAR(tp1.kv_bytes, kKvPerToken * 4096, 1);
  const MemoryVerdict v1 = check_memory(tp1, gpu80(), 0.9);
  EXPECT_FALSE(v1.fits);
  EXPECT_NEAR(v1.need_gb, 142.45, 0.01);  // 141.107 weights + 1.342 KV
  EXPECT_DOUBLE_EQ(v1.usable_gb, 72.0);
  EXPECT_NE(v1.reason.find("needs 142.4 GB per GPU"), std::string::npos) << v1.reason;
  EXPECT_NE(v1.reason.find("72.0 GB usable"), std::string::npos) << v1.reason;

  // TP2: linear layers, embedding and lm_head split in two; norms replicated; KV heads 4 per rank.
  const double params_tp2 = 80 * (kLayerLinear / 2 + kLayerNorms) + kVocabRows + 8192;
  const MemoryNeed tp2 = memory_needed(m, nullptr, 2, DType::bf16, 4096);
  EXPECT_NEAR(tp2.weight_bytes, 2 * params_tp2, 2 * params_tp2 * 1e-6);
  EXPECT_NEAR(tp2.kv_bytes, kKvPerToken / 2 * 4096, 1);
  const MemoryVerdict v2 = check_memory(tp2, gpu80(), 0.9);
  EXPECT_TRUE(v2.fits) << v2.reason;
  EXPECT_NEAR(v2.need_gb, 71.22, 0.01);  // 70.55 weights + 0.67 KV, under 72 usable
  EXPECT_TRUE(v2.reason.empty());
}

TEST(SweepMemory, Fp8HalvesTheLinearWeightsAndLongContextsNeedMore) {
  const ModelConfig m = llama70b();
  const MemoryNeed bf16 = memory_needed(m, nullptr, 1, DType::bf16, 4096);
  const MemoryNeed fp8 = memory_needed(m, nullptr, 1, DType::fp8, 4096);
  // Only the linear layers change dtype; embedding, lm_head and norms stay bf16.
  EXPECT_NEAR(bf16.weight_bytes - fp8.weight_bytes, 80 * kLayerLinear, 80 * kLayerLinear * 1e-6);
  const MemoryNeed long_ctx = memory_needed(m, nullptr, 2, DType::bf16, 131072);
  EXPECT_NEAR(long_ctx.kv_bytes, kKvPerToken / 2 * 131072, 1);
  EXPECT_FALSE(check_memory(long_ctx, gpu80(), 0.9).fits);  // 70.6 + 21.5 GB > 72
}

TEST(SweepMemory, TheDraftHeadAddsItsWeightsAndKv) {
  const ModelConfig m = llama70b();
  const ModelConfig head = read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-70b-eagle3.json");
  const MemoryNeed without = memory_needed(m, nullptr, 2, DType::bf16, 4096);
  const MemoryNeed with = memory_needed(m, &head, 2, DType::bf16, 4096);
  EXPECT_EQ(without.weight_bytes, with.weight_bytes);
  EXPECT_GT(with.draft_weight_bytes, 0);
  EXPECT_DOUBLE_EQ(with.draft_weight_bytes, weight_bytes_per_rank(head, 2, DType::bf16));
  EXPECT_GT(with.kv_bytes, without.kv_bytes);
}

TEST(SweepMemory, BoundaryAndUnknownMemory) {
  MemoryNeed need;
  need.weight_bytes = 72e9;
  EXPECT_TRUE(check_memory(need, gpu80(), 0.9).fits);  // exactly the usable amount
  need.kv_bytes = 1e6;
  EXPECT_FALSE(check_memory(need, gpu80(), 0.9).fits);
  EXPECT_TRUE(check_memory(need, gpu80(), 1.0).fits);
  GpuSpec unknown;
  unknown.name = "mystery";
  EXPECT_TRUE(check_memory(need, unknown, 0.9).fits);  // no size given: cannot judge, do not exclude
}
