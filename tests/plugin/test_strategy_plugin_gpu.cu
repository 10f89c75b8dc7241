// The CUDA side of a strategy added from outside the library (example_strategy_kernel.cu): every
// strategy the table says runs on our own kernel has one registered under its name, and the
// example's allreduce gives, bitwise, what the built-in reference kernel gives.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "comm/strategy_facts.hpp"
#include "cuda/comm/p2p_allreduce_kernel.cuh"
#include "cuda/comm/rank_comm.hpp"

namespace eaglesim::cuda {
namespace example {
bool example_kernel_registered();
}
}  // namespace eaglesim::cuda
namespace eaglesim::example {
bool example_strategy_registered();
}

namespace eaglesim::cuda {
namespace {

TEST(StrategyPluginGpu, EveryOwnKernelStrategyHasItsKernelAndNoKernelIsAStray) {
  ASSERT_TRUE(example::example_kernel_registered());
  ASSERT_TRUE(eaglesim::example::example_strategy_registered());
  const std::vector<std::string> kernels = p2p_allreduce_kernel_names();
  std::vector<std::string> own;
  for (const StrategyFacts& f : strategy_table())
    if (f.runtime == StrategyRuntime::own_kernel) own.emplace_back(f.name);
  for (const std::string& name : own)
    EXPECT_NE(std::find(kernels.begin(), kernels.end(), name), kernels.end()) << name << " has no CUDA kernel";
  for (const std::string& name : kernels)
    EXPECT_NE(std::find(own.begin(), own.end(), name), own.end()) << name << " is not an own-kernel strategy";
  EXPECT_NE(std::find(own.begin(), own.end(), "example_reference"), own.end());
}

// Both ranks' outputs of one bf16 allreduce under `strategy` on GPUs 0 and 1.
std::vector<std::vector<std::uint16_t>> allreduce_on_two(const std::string& strategy,
                                                         const std::vector<std::vector<std::uint16_t>>& inputs) {
  CommGroupConfig config;
  config.strategy = strategy;
  config.ranks = 2;
  config.max_bytes = 1u << 20;
  config.timeout_s = 20;
  auto group = create_comm_group(config);
  const std::size_t count = inputs[0].size(), bytes = count * sizeof(std::uint16_t);
  std::vector<void*> in(2), out(2);
  std::vector<cudaStream_t> streams(2);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    EXPECT_EQ(cudaMalloc(&in[r], bytes), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&out[r], bytes), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(in[r], inputs[r].data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaStreamCreate(&streams[r]), cudaSuccess);
  }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    group->rank(r).allreduce(in[r], out[r], count, DType::bf16, streams[r]);
  }
  std::vector<std::vector<std::uint16_t>> got(2, std::vector<std::uint16_t>(count));
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    EXPECT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(got[r].data(), out[r], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(in[r]);
    cudaFree(out[r]);
    cudaStreamDestroy(streams[r]);
  }
  return got;
}

TEST(StrategyPluginGpu, ExampleAllreduceEqualsTheReferenceKernelBitwise) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 2) GTEST_SKIP() << "needs 2 GPUs";
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-8, 8);
  const std::size_t count = 21503;  // odd: not a whole number of 16-byte units
  std::vector<std::vector<std::uint16_t>> inputs(2, std::vector<std::uint16_t>(count));
  for (auto& rank : inputs)
    for (auto& v : rank) {
      const float f = static_cast<float>(small(rng)) * 0.25f;  // exact in bf16
      std::uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      v = static_cast<std::uint16_t>(bits >> 16);
    }
  const auto mine = allreduce_on_two("example_reference", inputs);
  const auto reference = allreduce_on_two("reference", inputs);
  EXPECT_EQ(mine[0], reference[0]);
  EXPECT_EQ(mine[1], reference[1]);
  EXPECT_EQ(mine[0], mine[1]);
}

}  // namespace
}  // namespace eaglesim::cuda
