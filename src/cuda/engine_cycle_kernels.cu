#include "cuda/engine_cycle_kernels.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "greedy_verify.cuh"
#include "topk_select.cuh"
#include "tree_build.cuh"

namespace eaglesim::cuda {

namespace k = eaglesim::kernels::cycle;
static_assert(kTopkSelectMax == k::kTopkMax, "one limit for the host and the kernel");

void launch_topk_select(const float* logits, int rows, int vocab, int topk, std::int32_t* ids, float* probs,
                        cudaStream_t stream) {
  if (topk < 1 || topk > kTopkSelectMax || topk > vocab)
    throw InputError(fmt::format("top-k selection: expected 1 <= topk <= min({}, vocab = {}), got {}", kTopkSelectMax,
                                 vocab, topk));
  if (rows <= 0) return;
  k::topk_select_kernel<<<rows, k::kTopkThreads, 0, stream>>>(logits, vocab, topk, ids, probs);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void launch_tree_build(const float* scores, const std::int32_t* cand_parent, int batch, int candidates, int tokens,
                       std::int32_t* node_of, const TreeBuildOutputs& out, cudaStream_t stream) {
  if (tokens < 1 || tokens - 1 > candidates)
    throw InputError(fmt::format("tree building: expected 1 <= tokens <= candidates + 1 = {}, got {}", candidates + 1,
                                 tokens));
  if (batch <= 0) return;
  k::tree_build_kernel<<<batch, 128, 0, stream>>>(scores, cand_parent, candidates, tokens, node_of, out.parent,
                                                  out.depth, out.first_child, out.next_sibling, out.mask);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

void launch_greedy_verify(const std::int32_t* draft, const std::int32_t* predict, const std::int32_t* first_child,
                          const std::int32_t* next_sibling, int batch, int tokens, std::int32_t* accept_len,
                          std::int32_t* accepted, cudaStream_t stream) {
  if (batch <= 0 || tokens <= 0) return;
  const int block = 128;
  k::greedy_verify_kernel<<<(batch + block - 1) / block, block, 0, stream>>>(draft, predict, first_child, next_sibling,
                                                                             batch, tokens, accept_len, accepted);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace eaglesim::cuda
