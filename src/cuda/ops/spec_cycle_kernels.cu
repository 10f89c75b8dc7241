#include "cuda/ops/spec_cycle_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "greedy_verify.cuh"
#include "topk_select.cuh"
#include "tree_build.cuh"

namespace eaglesim::cuda {

namespace k = eaglesim::kernels::cycle;
static_assert(kTopkSelectMax == k::kTopkMax, "one limit for the host and the kernel");

namespace {

// The current GPU's SM count, asked once per device.
int current_sm_count() {
  constexpr int kDevices = 64;
  static std::atomic<int> cached[kDevices] = {};
  int device = 0;
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kDevices) device = 0;
  int sms = cached[device].load(std::memory_order_relaxed);
  if (sms == 0) {
    EAGLESIM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    cached[device].store(sms, std::memory_order_relaxed);
  }
  return sms;
}

void check_topk(int vocab, int topk) {
  if (topk < 1 || topk > kTopkSelectMax || topk > vocab)
    throw InputError(fmt::format("top-k selection: expected 1 <= topk <= min({}, vocab = {}), got {}", kTopkSelectMax,
                                 vocab, topk));
}

// The list length the kernel keeps for k: k rounded up to a power of two (its first k entries
// are the top-k), so that five kernels cover every k.
int kernel_k(int k) {
  int kk = 1;
  while (kk < k) kk *= 2;
  return kk;
}

// Blocks the split aims for: enough per SM that the loads in flight cover HBM latency.
int target_blocks() { return 4 * current_sm_count(); }

// The workspace starts with one counter per row that can be split (a split row has fewer rows
// than target_blocks()), at the same place for every shape, so one zeroed workspace serves every
// shape: each launch leaves its counters zero. The slots follow.
std::size_t counter_bytes() { return (static_cast<std::size_t>(target_blocks()) * sizeof(unsigned) + 255) / 256 * 256; }

k::TopkScratch carve_workspace(void* base, int rows, int chunks, int kk) {
  const std::size_t slots = static_cast<std::size_t>(rows) * chunks;
  k::TopkScratch ws;
  ws.done = static_cast<unsigned*>(base);
  ws.cand_v = reinterpret_cast<float*>(static_cast<char*>(base) + counter_bytes());
  ws.cand_i = reinterpret_cast<int*>(ws.cand_v + slots * kk);
  ws.part_ml = reinterpret_cast<float*>(ws.cand_i + slots * kk);
  return ws;
}

template <int K>
void launch_topk_kernel(const float* logits, int rows, int vocab, int topk, const TopkSplit& split,
                        std::int32_t* ids, float* probs, const k::TopkScratch& ws, cudaStream_t stream) {
  const int blocks = rows * split.chunks;
  if (probs)
    k::topk_select_kernel<K, true><<<blocks, k::kTopkThreads, 0, stream>>>(logits, vocab, topk, split.chunks,
                                                                           split.chunk, ids, probs, ws);
  else
    k::topk_select_kernel<K, false><<<blocks, k::kTopkThreads, 0, stream>>>(logits, vocab, topk, split.chunks,
                                                                            split.chunk, ids, probs, ws);
  EAGLESIM_CUDA_CHECK_LAUNCH();
}

}  // namespace

TopkSplit topk_select_split(int rows, int vocab) {
  TopkSplit split;
  if (rows <= 0 || vocab <= 0) return split;
  const int wanted = (target_blocks() + rows - 1) / rows;
  const int chunks = std::max(1, std::min(wanted, vocab / kTopkMinChunk));
  const int per_chunk = (vocab + chunks - 1) / chunks;
  split.chunk = (per_chunk + 3) / 4 * 4;
  split.chunks = (vocab + split.chunk - 1) / split.chunk;
  return split;
}

std::size_t topk_select_workspace_bytes(int rows, int vocab, int k) {
  check_topk(vocab, k);
  const TopkSplit split = topk_select_split(rows, vocab);
  if (split.chunks <= 1) return 0;
  const std::size_t slots = static_cast<std::size_t>(rows) * split.chunks;
  return counter_bytes() + slots * kernel_k(k) * (sizeof(float) + sizeof(std::int32_t)) + slots * 2 * sizeof(float);
}

void launch_topk_select(const float* logits, int rows, int vocab, int topk, std::int32_t* ids, float* probs,
                        void* workspace, cudaStream_t stream) {
  check_topk(vocab, topk);
  if (rows <= 0) return;
  const TopkSplit split = topk_select_split(rows, vocab);
  if (split.chunks > 1 && !workspace)
    throw InputError(fmt::format("top-k selection: {} rows of {} logits split into {} chunks need a workspace of {} "
                                 "bytes, got none", rows, vocab, split.chunks,
                                 topk_select_workspace_bytes(rows, vocab, topk)));
  const int kk = kernel_k(topk);
  const k::TopkScratch ws = split.chunks > 1 ? carve_workspace(workspace, rows, split.chunks, kk) : k::TopkScratch{};
  switch (kk) {
    case 1: launch_topk_kernel<1>(logits, rows, vocab, topk, split, ids, probs, ws, stream); break;
    case 2: launch_topk_kernel<2>(logits, rows, vocab, topk, split, ids, probs, ws, stream); break;
    case 4: launch_topk_kernel<4>(logits, rows, vocab, topk, split, ids, probs, ws, stream); break;
    case 8: launch_topk_kernel<8>(logits, rows, vocab, topk, split, ids, probs, ws, stream); break;
    default: launch_topk_kernel<16>(logits, rows, vocab, topk, split, ids, probs, ws, stream); break;
  }
}

void launch_tree_build(const float* scores, const std::int32_t* cand_parent, int batch, int candidates, int tokens,
                       std::int32_t* node_of, const TreeBuildOutputs& out, cudaStream_t stream) {
  if (tokens < 1 || tokens - 1 > candidates)
    throw InputError(fmt::format("tree building: expected 1 <= tokens <= candidates + 1 = {}, got {}", candidates + 1,
                                 tokens));
  if (batch <= 0) return;
  // The scores are staged in shared memory when they fit the default 48 KB with the node arrays.
  constexpr std::size_t kSmemLimit = 48 * 1024;
  const std::size_t node_smem = k::tree_build_node_smem(tokens);
  const std::size_t score_smem = static_cast<std::size_t>(candidates) * sizeof(float);
  if (node_smem > kSmemLimit)
    throw InputError(fmt::format("tree building: {} tokens need {} bytes of shared memory, more than {}", tokens,
                                 node_smem, kSmemLimit));
  const bool stage = node_smem + score_smem <= kSmemLimit;
  k::tree_build_kernel<<<batch, k::kTreeBuildThreads, node_smem + (stage ? score_smem : 0), stream>>>(
      scores, cand_parent, candidates, tokens, stage, node_of, out.parent, out.depth, out.first_child,
      out.next_sibling, out.mask);
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
