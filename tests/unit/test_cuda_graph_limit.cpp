// Which forwards an engine replays as a CUDA graph and what an eager one costs on the host: the
// engines' capture rules by batch, GPU memory and TP, and the launch-bound excess a report shows.
#include <gtest/gtest.h>

#include <string>

#include "backend/engine_costs.hpp"
#include "cost/cuda_graph_limit.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"

using namespace eaglesim;

namespace {

EngineProfile profile(ServingEngine e) { return default_engine_profile(e); }

}  // namespace

TEST(CudaGraphLimit, SglangCapturesUpToItsMaxBsByGpuMemoryAndTp) {
  const EngineProfile p = profile(ServingEngine::sglang);
  EXPECT_TRUE(cuda_graph_decision(p, 256, 1, 1, 80).graph);
  EXPECT_FALSE(cuda_graph_decision(p, 257, 1, 1, 80).graph);
  EXPECT_TRUE(cuda_graph_decision(p, 512, 1, 8, 80).graph);   // TP 4-8: 512
  EXPECT_FALSE(cuda_graph_decision(p, 300, 1, 2, 141).graph);  // H200 at TP 2: 256
  EXPECT_TRUE(cuda_graph_decision(p, 512, 1, 1, 192).graph);   // B200: 512
  EngineProfile given = p;
  given.cuda_graph_max_bs = 32;
  EXPECT_FALSE(cuda_graph_decision(given, 33, 4, 1, 80).graph);
  EXPECT_NE(cuda_graph_decision(given, 33, 4, 1, 80).why.find("cuda_graph_max_bs 32"), std::string::npos);
}

TEST(CudaGraphLimit, VllmCountsTokensTensorRtLlmSkipsTheSizesItDidNotCapture) {
  const EngineProfile v = profile(ServingEngine::vllm);
  EXPECT_TRUE(cuda_graph_decision(v, 128, 4, 1, 80).graph);   // 512 tokens
  EXPECT_FALSE(cuda_graph_decision(v, 129, 4, 1, 80).graph);  // 516 tokens
  const EngineProfile t = profile(ServingEngine::trtllm);
  EXPECT_TRUE(cuda_graph_decision(t, 32, 4, 8, 80).graph);
  EXPECT_FALSE(cuda_graph_decision(t, 48, 4, 8, 80).graph);  // between 32 and 64, no padding
  EXPECT_TRUE(cuda_graph_decision(t, 64, 4, 8, 80).graph);
  EXPECT_FALSE(cuda_graph_decision(t, 256, 1, 8, 80).graph);
  EXPECT_TRUE(cuda_graph_decision(profile(ServingEngine::torch), 4096, 1, 1, 80).graph);
}

TEST(CudaGraphLimit, AnEagerStepTakesAtLeastItsLaunches) {
  const ModelConfig m = read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.2-1b.json");
  GenOptions o;
  o.tokens = 1;
  o.batch = 300;
  o.kv_len = 256;
  const Trace t = generate_trace(m, o);
  EngineProfile p = profile(ServingEngine::sglang);
  p.eager_launch_us = 40;  // a slow host: the launches outlast the GPU
  StrategyResult r;
  r.verify.step_us = 1000;
  r.decode = StepResult{};
  r.decode->step_us = 1000;
  const std::string note = add_eager_launch_costs(r, t, p, 1, 80);
  const double kernels = static_cast<double>(t.verify().ops.size());
  EXPECT_NEAR(r.verify.step_us, kernels * 40, 1e-6);
  EXPECT_NEAR(r.verify.kind_us[static_cast<std::size_t>(OpKind::host_sync)], kernels * 40 - 1000, 1e-6);
  EXPECT_NE(note.find("batch 300 runs eagerly"), std::string::npos) << note;
  // Within the graph limit nothing changes.
  StrategyResult g;
  g.verify.step_us = 1000;
  o.batch = 256;
  EXPECT_EQ(add_eager_launch_costs(g, generate_trace(m, o), p, 1, 80), "");
  EXPECT_EQ(g.verify.step_us, 1000);
}

TEST(CudaGraphLimit, OptionsSetTheLimitAndTheLaunchCost) {
  EngineProfile p = profile(ServingEngine::sglang);
  set_engine_profile_option(p, "cuda_graph_max_bs", "48", "sglang.cuda_graph_max_bs=48");
  set_engine_profile_option(p, "eager_launch_us", "7.5", "sglang.eager_launch_us=7.5");
  EXPECT_EQ(p.cuda_graph_max_bs, 48);
  EXPECT_EQ(p.eager_launch_us, 7.5);
  EXPECT_ANY_THROW(set_engine_profile_option(p, "cuda_graph_max_bs", "4.5", "x"));
  EXPECT_ANY_THROW(set_engine_profile_option(p, "eager_launch_us", "-1", "x"));
}
