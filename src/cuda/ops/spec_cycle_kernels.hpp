#pragma once
// Host entry points of the per-cycle kernels of EAGLE speculative decoding (kernels/topk_select.cuh,
// tree_build.cuh, greedy_verify.cuh): the draft's top-k, building the verify tree from the
// draft's scores, the target's greedy acceptance. Stream-ordered, graph-capturable, each
// checks its launch.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace eaglesim::cuda {

constexpr int kTopkSelectMax = 16;  // the most tokens topk_select keeps per row

// How launch_topk_select splits each row over blocks on the current GPU: `chunks` chunks of
// `chunk` elements (a multiple of 4; the last may be shorter), enough blocks for about four per
// SM, each chunk at least kTopkMinChunk elements; chunks == 1: one block per row, no merge.
constexpr int kTopkMinChunk = 2048;
struct TopkSplit {
  int chunks = 1;
  int chunk = 0;
};
TopkSplit topk_select_split(int rows, int vocab);

// The device workspace launch_topk_select needs for these shapes on the current GPU: per row a
// counter of finished chunks, the chunks' candidates and softmax partials (0 when a row is one
// chunk). The counters sit at the same place for every shape.
std::size_t topk_select_workspace_bytes(int rows, int vocab, int k);

// ids/probs [rows, k]: the k most likely tokens of each row of fp32 logits [rows, vocab] (equal
// logits: the lower token first) and their softmax probabilities (probs may be null).
// workspace: topk_select_workspace_bytes(rows, vocab, k) bytes of device memory, 16-byte aligned
// (may be null when that is 0), zero-filled before its first launch; every launch leaves its
// counters zero, so one workspace (sized for the largest shape) serves every shape in stream
// order, and graph replays. InputError unless 1 <= k <= kTopkSelectMax and k <= vocab, or when
// the workspace is missing.
void launch_topk_select(const float* logits, int rows, int vocab, int k, std::int32_t* ids, float* probs,
                        void* workspace, cudaStream_t stream);

// The verify tree of each of `batch` requests from its `candidates` draft scores (tree_build.cuh
// for the arrays); node_of: [batch, candidates], each candidate's node (-1: not selected); mask: [batch, tokens, ceil(tokens / 32)].
struct TreeBuildOutputs {
  std::int32_t* parent = nullptr;        // [batch, tokens]
  std::int32_t* depth = nullptr;         // [batch, tokens]
  std::int32_t* first_child = nullptr;   // [batch, tokens]
  std::int32_t* next_sibling = nullptr;  // [batch, tokens]
  std::uint32_t* mask = nullptr;         // [batch, tokens, words]
};
void launch_tree_build(const float* scores, const std::int32_t* cand_parent, int batch, int candidates, int tokens,
                       std::int32_t* node_of, const TreeBuildOutputs& out, cudaStream_t stream);

// Greedy acceptance over `batch` requests of `tokens` nodes: predict = the target's argmax per
// node (launch_topk_select at k = 1), draft = the tokens the nodes propose, one tree's
// first_child / next_sibling for every request. accept_len [batch], accepted [batch, tokens].
void launch_greedy_verify(const std::int32_t* draft, const std::int32_t* predict, const std::int32_t* first_child,
                          const std::int32_t* next_sibling, int batch, int tokens, std::int32_t* accept_len,
                          std::int32_t* accepted, cudaStream_t stream);

}  // namespace eaglesim::cuda
