// GPU tests of the per-cycle kernels (top-k selection, tree building, greedy acceptance) and of
// the replay's batched attention (batch of requests, ragged KV, chain / tree / branches masks,
// GQA and MLA) against CPU references, and of a version-2 batch trace with the engine's cycle
// replayed end to end. Every test skips cleanly without a GPU. Small shapes, so that
// compute-sanitizer runs them in seconds (EngineCycle.* and ReplayAttention.*), except the top-k
// test over bench_topk_select's shapes (up to 1024 x 128256 logits, 525 MB).
#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "core/errors.hpp"

#include "cuda/replay/cuda_backend.hpp"
#include "cuda/runtime/device_buffer.hpp"
#include "cuda/ops/draft_candidates.hpp"
#include "cuda/ops/spec_cycle_kernels.hpp"
#include "cuda/comm/ideal_comm_group.hpp"
#include "cuda/replay/rank_program.hpp"
#include "gpu_skip.hpp"
#include "host_bf16.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "trace/eagle_tree.hpp"

using namespace eaglesim;
using namespace eaglesim::cuda;

namespace {

template <typename T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b(std::max<std::size_t>(1, v.size()) * sizeof(T));
  EXPECT_EQ(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return b;
}
template <typename T>
std::vector<T> download(const DeviceBuffer& b, std::size_t count) {
  std::vector<T> v(count);
  EXPECT_EQ(cudaMemcpy(v.data(), b.get(), count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}
template <typename T>
std::vector<T> download_ptr(const void* p, std::size_t count) {
  std::vector<T> v(count);
  EXPECT_EQ(cudaMemcpy(v.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}
DeviceBuffer poisoned(std::size_t bytes) {
  DeviceBuffer b(bytes);
  EXPECT_EQ(cudaMemset(b.get(), 0xFF, bytes), cudaSuccess);
  return b;
}

// Logits on a coarse grid, so that equal values (ties) occur in every row.
std::vector<float> tied_logits(std::size_t rows, int vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> grid(-400, 400);
  std::vector<float> v(rows * static_cast<std::size_t>(vocab));
  for (float& x : v) x = static_cast<float>(grid(rng)) / 64.f;
  return v;
}

// The k best of a row (higher logit first, equal logits: the lower token) and their softmax.
void topk_reference(const float* row, int vocab, int k, std::vector<int>& ids, std::vector<double>& probs) {
  std::vector<int> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
  double mx = row[order[0]], sum = 0;
  for (int t = 0; t < vocab; ++t) sum += std::exp(static_cast<double>(row[t]) - mx);
  ids.assign(order.begin(), order.begin() + k);
  probs.clear();
  for (int r = 0; r < k; ++r) probs.push_back(std::exp(static_cast<double>(row[ids[r]]) - mx) / sum);
}

}  // namespace

namespace {

// A top-k workspace as launch_topk_select expects it: zero-filled.
DeviceBuffer topk_workspace(int rows, int vocab, int k) {
  const std::size_t bytes = std::max<std::size_t>(1, topk_select_workspace_bytes(rows, vocab, k));
  DeviceBuffer b(bytes);
  EXPECT_EQ(cudaMemset(b.get(), 0, bytes), cudaSuccess);
  return b;
}

// The k best of a row by a partial sort (higher logit first, equal logits: the lower token), for
// rows too many to sort whole.
std::vector<int> topk_ids_reference(const float* row, int vocab, int k) {
  std::vector<int> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  order.resize(static_cast<std::size_t>(k));
  return order;
}

// launch_topk_select over `logits` [rows, vocab] (with its workspace) checked against
// topk_reference row by row; without probabilities (the verify's argmax) only the ids.
void expect_topk_matches_reference(const std::vector<float>& logits, int rows, int vocab, int k,
                                   bool with_probs = true) {
  const DeviceBuffer dl = upload(logits);
  DeviceBuffer ids = poisoned(static_cast<std::size_t>(rows) * k * 4), probs = poisoned(static_cast<std::size_t>(rows) * k * 4);
  const DeviceBuffer ws = topk_workspace(rows, vocab, k);
  launch_topk_select(dl.as<float>(), rows, vocab, k, ids.as<std::int32_t>(), with_probs ? probs.as<float>() : nullptr,
                     ws.get(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto gi = download<std::int32_t>(ids, static_cast<std::size_t>(rows) * k);
  const auto gp = download<float>(probs, static_cast<std::size_t>(rows) * k);
  for (int r = 0; r < rows; ++r) {
    std::vector<int> ri;
    std::vector<double> rp;
    topk_reference(logits.data() + static_cast<std::size_t>(r) * vocab, vocab, k, ri, rp);
    for (int j = 0; j < k; ++j) {
      ASSERT_EQ(gi[static_cast<std::size_t>(r) * k + j], ri[j]) << "row " << r << " rank " << j;
      if (with_probs)
        EXPECT_NEAR(gp[static_cast<std::size_t>(r) * k + j], rp[j], 1e-5 + 1e-4 * rp[j]) << "row " << r << " rank " << j;
    }
  }
}

// NaN-free random logits (full float mantissas in [-8, 8)) from a fast hash, with each row's
// maximum repeated at `repeats` places spread over the row (chunk boundaries included when the
// row is split): the argmax is the first of them.
std::vector<float> logits_with_repeated_maxima(std::size_t rows, int vocab, int repeats, std::uint64_t seed,
                                               const TopkSplit& split) {
  std::vector<float> v(rows * static_cast<std::size_t>(vocab));
  std::uint64_t h = seed * 0x9e3779b97f4a7c15ull + 1;
  for (float& x : v) {
    h ^= h << 13;
    h ^= h >> 7;
    h ^= h << 17;
    x = static_cast<float>(h >> 40) * (16.f / 16777216.f) - 8.f;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = v.data() + r * static_cast<std::size_t>(vocab);
    const std::size_t start = (r * 7919) % static_cast<std::size_t>(vocab);
    for (int j = 0; j < repeats; ++j)
      row[(start + static_cast<std::size_t>(j) * (static_cast<std::size_t>(vocab) / repeats + 1)) % vocab] = 9.f;
    for (int c = 1; c < split.chunks && r % 2 == 0; ++c) {
      row[static_cast<std::size_t>(c) * split.chunk] = 9.f;
      row[static_cast<std::size_t>(c) * split.chunk - 1] = 9.f;
    }
  }
  return v;
}

}  // namespace

// One block per row: enough rows that a row is one chunk.
TEST(EngineCycle, TopkSelectMatchesCpuReference) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(11);
  for (const int vocab : {1000, 8001})
    for (const int k : {1, 2, 3, 4, 8, 13, 16}) {
      const int rows = vocab > 5000 ? 600 : 23;
      SCOPED_TRACE("rows " + std::to_string(rows) + " vocab " + std::to_string(vocab) + " k " + std::to_string(k));
      ASSERT_EQ(topk_select_split(rows, vocab).chunks, 1);
      expect_topk_matches_reference(tied_logits(static_cast<std::size_t>(rows), vocab, rng), rows, vocab, k);
    }
}

// Few rows: each row split into chunks, then merged; unaligned rows (vocab 32001) included.
TEST(EngineCycle, TopkSelectSplitRowsMatchCpuReference) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(12);
  for (const int vocab : {32000, 32001, 128256})
    for (const int rows : {1, 2, 3, 4})
      for (const int k : {1, 3, 4, 8, 16}) {
        SCOPED_TRACE("rows " + std::to_string(rows) + " vocab " + std::to_string(vocab) + " k " + std::to_string(k));
        const TopkSplit split = topk_select_split(rows, vocab);
        ASSERT_GT(split.chunks, 1);
        EXPECT_GT(topk_select_workspace_bytes(rows, vocab, k), 0u);
        expect_topk_matches_reference(tied_logits(static_cast<std::size_t>(rows), vocab, rng), rows, vocab, k);
        if (k == 1)
          expect_topk_matches_reference(tied_logits(static_cast<std::size_t>(rows), vocab, rng), rows, vocab, k, false);
      }
}

// Equal best logits on both sides of every chunk boundary, and rows of one value: the lower
// token index wins across chunks.
TEST(EngineCycle, TopkSelectTiesAcrossChunksGoToTheLowerToken) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(13);
  for (const int vocab : {32001, 128256})
    for (const int k : {1, 2, 5, 8, 16}) {
      const int rows = 3;
      SCOPED_TRACE("vocab " + std::to_string(vocab) + " k " + std::to_string(k));
      const TopkSplit split = topk_select_split(rows, vocab);
      ASSERT_GT(split.chunks, 1);
      std::vector<float> logits = tied_logits(static_cast<std::size_t>(rows), vocab, rng);
      float* boundary_row = logits.data();
      for (int c = 1; c < split.chunks; ++c) {
        boundary_row[c * split.chunk - 1] = 20.f;
        boundary_row[c * split.chunk] = 20.f;
      }
      std::fill(logits.begin() + vocab, logits.begin() + 2 * static_cast<std::ptrdiff_t>(vocab), 1.5f);
      for (int c = split.chunks - 1; c >= 0; --c) logits[2 * static_cast<std::size_t>(vocab) + c * split.chunk] = 7.f;
      expect_topk_matches_reference(logits, rows, vocab, k);
      if (k == 1) expect_topk_matches_reference(logits, rows, vocab, k, false);
    }
}

// The verify's argmax (k = 1, no probabilities) and a draft's top-8 over every row count of
// bench_topk_select, on random logits whose maximum repeats within the row and on both sides of
// chunk boundaries: the first occurrence wins. Covers split rows, one chunk per row, and the
// unrolled and remainder loops.
TEST(EngineCycle, TopkSelectBenchShapesWithRepeatedMaxima) {
  SKIP_WITHOUT_GPU();
  for (const int vocab : {32000, 128256})
    for (const int rows : {1, 4, 16, 64, 256, 1024}) {
      const TopkSplit split = topk_select_split(rows, vocab);
      const std::vector<float> logits = logits_with_repeated_maxima(static_cast<std::size_t>(rows), vocab, 5,
                                                                    static_cast<std::uint64_t>(rows) * vocab, split);
      const DeviceBuffer dl = upload(logits);
      for (const int k : {1, 8}) {
        SCOPED_TRACE("rows " + std::to_string(rows) + " vocab " + std::to_string(vocab) + " k " + std::to_string(k));
        DeviceBuffer ids = poisoned(static_cast<std::size_t>(rows) * k * 4);
        DeviceBuffer probs = poisoned(static_cast<std::size_t>(rows) * k * 4);
        const DeviceBuffer ws = topk_workspace(rows, vocab, k);
        launch_topk_select(dl.as<float>(), rows, vocab, k, ids.as<std::int32_t>(), k > 1 ? probs.as<float>() : nullptr,
                           ws.get(), nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const auto gi = download<std::int32_t>(ids, static_cast<std::size_t>(rows) * k);
        for (int r = 0; r < rows; ++r) {
          const float* row = logits.data() + static_cast<std::size_t>(r) * vocab;
          const std::vector<int> want = k == 1 ? std::vector<int>{static_cast<int>(std::max_element(row, row + vocab) - row)}
                                               : topk_ids_reference(row, vocab, k);
          for (int j = 0; j < k; ++j)
            ASSERT_EQ(gi[static_cast<std::size_t>(r) * k + j], want[static_cast<std::size_t>(j)]) << "row " << r << " rank " << j;
        }
      }
    }
}

// One workspace serves split launches of different shapes one after another (each launch leaves
// its counters zero), as the replay's ops share it.
TEST(EngineCycle, TopkSelectReusesOneWorkspaceAcrossShapes) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(14);
  const int vocab = 32001;
  const std::vector<float> logits = tied_logits(8, vocab, rng);
  std::size_t bytes = 0;
  for (const int rows : {1, 3, 8})
    for (const int k : {1, 16}) bytes = std::max(bytes, topk_select_workspace_bytes(rows, vocab, k));
  DeviceBuffer ws(bytes);
  ASSERT_EQ(cudaMemset(ws.get(), 0, bytes), cudaSuccess);
  const DeviceBuffer dl = upload(logits);
  for (int pass = 0; pass < 2; ++pass)
    for (const int rows : {8, 1, 3})
      for (const int k : {16, 1, 3}) {
        SCOPED_TRACE("pass " + std::to_string(pass) + " rows " + std::to_string(rows) + " k " + std::to_string(k));
        ASSERT_GT(topk_select_split(rows, vocab).chunks, 1);
        DeviceBuffer ids = poisoned(static_cast<std::size_t>(rows) * k * 4);
        launch_topk_select(dl.as<float>(), rows, vocab, k, ids.as<std::int32_t>(), nullptr, ws.get(), nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const auto gi = download<std::int32_t>(ids, static_cast<std::size_t>(rows) * k);
        for (int r = 0; r < rows; ++r) {
          const std::vector<int> want = topk_ids_reference(logits.data() + static_cast<std::size_t>(r) * vocab, vocab, k);
          for (int j = 0; j < k; ++j)
            ASSERT_EQ(gi[static_cast<std::size_t>(r) * k + j], want[static_cast<std::size_t>(j)]) << "row " << r << " rank " << j;
        }
      }
}

TEST(EngineCycle, TopkSelectNeedsItsWorkspace) {
  SKIP_WITHOUT_GPU();
  ASSERT_GT(topk_select_split(1, 128256).chunks, 1);
  EXPECT_THROW(launch_topk_select(nullptr, 1, 128256, 1, nullptr, nullptr, nullptr, nullptr), InputError);
}

TEST(EngineCycle, TopkSelectRefusesMoreThanItKeeps) {
  EXPECT_THROW(launch_topk_select(nullptr, 1, 100, kTopkSelectMax + 1, nullptr, nullptr, nullptr, nullptr), InputError);
  EXPECT_THROW(launch_topk_select(nullptr, 1, 100, 0, nullptr, nullptr, nullptr, nullptr), InputError);
}

namespace {

// The verify tree built on the host as the kernel documents it.
struct TreeRef {
  std::vector<int> parent, depth, first, next;
  std::vector<std::uint32_t> mask;
};
TreeRef tree_reference(const float* s, const std::int32_t* cp, int c, int d) {
  TreeRef t;
  t.parent = verify_tree_parents(s, cp, c, d);
  t.depth = tree_depths(t.parent);
  std::vector<std::int32_t> f, nx;
  child_lists(t.parent, f, nx);
  t.first.assign(f.begin(), f.end());
  t.next.assign(nx.begin(), nx.end());
  const int words = (d + 31) / 32;
  t.mask.assign(static_cast<std::size_t>(d) * words, 0);
  for (int n = 0; n < d; ++n)
    for (int a = n; a >= 0; a = t.parent[static_cast<std::size_t>(a)]) {
      t.mask[static_cast<std::size_t>(n) * words + a / 32] |= 1u << (a % 32);
      if (a == 0) break;
    }
  return t;
}

}  // namespace

namespace {

// Builds the trees of `cand` on the GPU and compares every array with tree_reference;
// sglang_tree: the scores are path products, so the result is a tree SGLang could draft.
void expect_tree_build_matches(const DraftCandidates& cand, int batch, int steps, int topk, int tokens,
                               bool sglang_tree) {
  const int c = static_cast<int>(draft_candidates(steps, topk));
  const int d = tokens, words = (d + 31) / 32;
  const std::size_t bd = static_cast<std::size_t>(batch) * d;
  const DeviceBuffer ds = upload(cand.scores), dp = upload(cand.parent);
  DeviceBuffer node_of = poisoned(static_cast<std::size_t>(batch) * c * 4);
  DeviceBuffer parent = poisoned(bd * 4), depth = poisoned(bd * 4), first = poisoned(bd * 4), next = poisoned(bd * 4),
               mask = poisoned(bd * words * 4);
  TreeBuildOutputs out{parent.as<std::int32_t>(), depth.as<std::int32_t>(), first.as<std::int32_t>(),
                       next.as<std::int32_t>(), mask.as<std::uint32_t>()};
  launch_tree_build(ds.as<float>(), dp.as<std::int32_t>(), batch, c, d, node_of.as<std::int32_t>(), out, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto gp = download<std::int32_t>(parent, bd), gd = download<std::int32_t>(depth, bd);
  const auto gf = download<std::int32_t>(first, bd), gn = download<std::int32_t>(next, bd);
  const auto gm = download<std::uint32_t>(mask, bd * words);
  const auto gnode = download<std::int32_t>(node_of, static_cast<std::size_t>(batch) * c);
  for (int b = 0; b < batch; ++b) {
    const float* sc = cand.scores.data() + static_cast<std::size_t>(b) * c;
    const TreeRef ref = tree_reference(sc, cand.parent.data() + static_cast<std::size_t>(b) * c, c, d);
    if (sglang_tree) EXPECT_FALSE(find_tree_problem(ref.parent, steps, topk, d).has_value());
    int selected = 0;
    for (int k = 0; k < c; ++k) {
      const int node = gnode[static_cast<std::size_t>(b) * c + k];
      ASSERT_TRUE(node == -1 || (node >= 1 && node < d)) << "request " << b << " candidate " << k;
      selected += node > 0 ? 1 : 0;
    }
    EXPECT_EQ(selected, d - 1);
    for (int n = 0; n < d; ++n) {
      const std::size_t at = static_cast<std::size_t>(b) * d + n;
      ASSERT_EQ(gp[at], ref.parent[n]) << "request " << b << " node " << n;
      EXPECT_EQ(gd[at], ref.depth[n]);
      EXPECT_EQ(gf[at], ref.first[n]);
      EXPECT_EQ(gn[at], ref.next[n]);
      for (int w = 0; w < words; ++w) EXPECT_EQ(gm[at * words + w], ref.mask[static_cast<std::size_t>(n) * words + w]);
    }
  }
}

}  // namespace

TEST(EngineCycle, TreeBuildMatchesCpuReference) {
  SKIP_WITHOUT_GPU();
  struct Config { int steps, topk, tokens, batch; };
  for (const Config cfg : {Config{3, 1, 4, 3}, Config{5, 4, 8, 4}, Config{6, 8, 32, 2}, Config{6, 8, 48, 2},
                           Config{6, 8, 32, 64}, Config{8, 10, 64, 3}, Config{4, 8, 200, 2},
                           Config{4, 64, 64, 1}}) {  // the last: scores too many to stage in shared memory
    SCOPED_TRACE(std::to_string(cfg.steps) + "," + std::to_string(cfg.topk) + "," + std::to_string(cfg.tokens) +
                 " B=" + std::to_string(cfg.batch));
    const int c = static_cast<int>(draft_candidates(cfg.steps, cfg.topk));
    const DraftCandidates cand = random_draft_candidates(cfg.batch, c, cfg.steps, cfg.topk, 5);
    expect_tree_build_matches(cand, cfg.batch, cfg.steps, cfg.topk, cfg.tokens, true);
  }
}

// Scores that are not path products, with many ties: children may outrank their parents, so
// selected candidates whose parent was not selected hang from the root, and equal scores go
// to the lower candidate.
TEST(EngineCycle, TreeBuildTiesAndOrphansMatchCpuReference) {
  SKIP_WITHOUT_GPU();
  struct Config { int steps, topk, tokens, batch; };
  // (6, 8, 32): one candidate per thread; (4, 32, 64): 3104 candidates, the radix search.
  for (const Config cfg : {Config{6, 8, 32, 5}, Config{4, 32, 64, 3}}) {
    SCOPED_TRACE(std::to_string(cfg.steps) + "," + std::to_string(cfg.topk) + "," + std::to_string(cfg.tokens));
    const int c = static_cast<int>(draft_candidates(cfg.steps, cfg.topk));
    DraftCandidates cand = random_draft_candidates(cfg.batch, c, cfg.steps, cfg.topk, 11);
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> level(0, 7);
    for (float& s : cand.scores) s = static_cast<float>(level(rng)) / 8.0f;  // ties everywhere, zeros too
    expect_tree_build_matches(cand, cfg.batch, cfg.steps, cfg.topk, cfg.tokens, false);
  }
}

TEST(EngineCycle, GreedyAcceptanceMatchesCpuReference) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(3);
  for (const auto& parents : {derive_eagle_tree(5, 4, 8), derive_eagle_tree(3, 1, 4), derive_eagle_tree(6, 8, 32)}) {
    const int d = static_cast<int>(parents.size()), batch = 6, vocab = 5000;
    const std::size_t rows = static_cast<std::size_t>(batch) * d;
    const std::vector<float> logits = tied_logits(rows, vocab, rng);
    std::vector<int> argmax(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<int> ids;
      std::vector<double> probs;
      topk_reference(logits.data() + r * vocab, vocab, 1, ids, probs);
      argmax[r] = ids[0];
    }
    std::vector<std::int32_t> first, next;
    child_lists(parents, first, next);
    // Drafts: random tokens, except that request b's drafts match the target along a random
    // path for its first b % (depth + 1) levels, so that accepted lengths differ.
    std::vector<std::int32_t> draft(rows);
    std::uniform_int_distribution<int> tok(0, vocab - 1);
    for (auto& t : draft) t = tok(rng);
    std::vector<int> expect_len(static_cast<std::size_t>(batch), 0);
    const std::vector<int> depths = tree_depths(parents);
    const int max_depth = *std::max_element(depths.begin(), depths.end());
    for (int b = 0; b < batch; ++b) {
      const std::size_t base = static_cast<std::size_t>(b) * d;
      for (int n = 0; n < d; ++n) {
        // No accidental matches: every draft differs from its parent's argmax.
        const int p = parents[static_cast<std::size_t>(n)];
        if (p >= 0 && draft[base + n] == argmax[base + p]) draft[base + n] = (draft[base + n] + 1) % vocab;
      }
      int node = 0;
      const int want = b % (max_depth + 1);
      for (int level = 0; level < want; ++level) {
        std::vector<int> kids;
        for (int c = first[node]; c >= 0; c = next[c]) kids.push_back(c);
        if (kids.empty()) break;
        const int child = kids[static_cast<std::size_t>(rng() % kids.size())];
        draft[base + child] = argmax[base + node];
        node = child;
        ++expect_len[static_cast<std::size_t>(b)];
      }
    }
    const DeviceBuffer dl = upload(logits), dd = upload(draft), df = upload(first), dn = upload(next);
    DeviceBuffer predict = poisoned(rows * 4), len = poisoned(batch * 4), accepted = poisoned(rows * 4);
    const DeviceBuffer ws = topk_workspace(static_cast<int>(rows), vocab, 1);
    launch_topk_select(dl.as<float>(), static_cast<int>(rows), vocab, 1, predict.as<std::int32_t>(), nullptr, ws.get(),
                       nullptr);
    launch_greedy_verify(dd.as<std::int32_t>(), predict.as<std::int32_t>(), df.as<std::int32_t>(), dn.as<std::int32_t>(),
                         batch, d, len.as<std::int32_t>(), accepted.as<std::int32_t>(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto gl = download<std::int32_t>(len, static_cast<std::size_t>(batch));
    const auto ga = download<std::int32_t>(accepted, rows);
    const auto gpred = download<std::int32_t>(predict, rows);
    for (std::size_t r = 0; r < rows; ++r) ASSERT_EQ(gpred[r], argmax[r]) << "row " << r;
    for (int b = 0; b < batch; ++b) {
      EXPECT_EQ(gl[static_cast<std::size_t>(b)], expect_len[static_cast<std::size_t>(b)]) << "request " << b;
      // The emitted tokens: the target's token at each node of the accepted path.
      const std::size_t base = static_cast<std::size_t>(b) * d;
      int node = 0;
      for (int j = 0; j <= gl[static_cast<std::size_t>(b)]; ++j) {
        EXPECT_EQ(ga[base + j], argmax[base + node]) << "request " << b << " token " << j;
        int c = first[node];
        while (c >= 0 && draft[base + c] != argmax[base + node]) c = next[c];
        if (c < 0) break;
        node = c;
      }
    }
  }
}

namespace {

using test::from_bf;

// One attention op of a version-2 trace.
Op attention_op(int batch, int q, std::vector<std::int64_t> kv_lens, AttentionMask mask, bool mla) {
  Op op;
  op.kind = OpKind::attention;
  op.name = "attn";
  op.layer = 0;
  op.batch = batch;
  op.q_tokens = q;
  op.mask = mask;
  op.kv_len = *std::max_element(kv_lens.begin(), kv_lens.end());
  if (std::adjacent_find(kv_lens.begin(), kv_lens.end(), std::not_equal_to<>()) != kv_lens.end())
    op.kv_lens = std::move(kv_lens);
  if (mla) {
    op.variant = AttentionVariant::mla;
    op.heads = 16;
    op.kv_heads = 1;
    op.kv_lora_rank = 512;
    op.rope_dim = 64;
  } else {
    op.heads = 32;
    op.kv_heads = 8;
    op.head_dim = 128;
  }
  return op;
}

// The op's output in double from the buffers the program ran it on: request r's query token t
// sees the request's prefix and the draft positions its mask word allows (chain: j <= t).
std::vector<double> attention_reference(const Op& op, const RankProgram::AttentionIo& io) {
  const bool mla = op.variant == AttentionVariant::mla;
  const int B = op.batch, Q = static_cast<int>(op.q_tokens), H = static_cast<int>(op.heads);
  const int KVH = mla ? 1 : static_cast<int>(op.kv_heads);
  const int DK = mla ? 576 : static_cast<int>(op.head_dim), DV = mla ? 512 : DK;
  std::size_t positions = 0;
  for (std::int32_t l : io.kv_len) positions += static_cast<std::size_t>(l);
  const auto q = download_ptr<std::uint16_t>(io.q, static_cast<std::size_t>(B) * Q * H * DK);
  const auto k = download_ptr<std::uint16_t>(io.k, positions * KVH * DK);
  const auto v = mla ? k : download_ptr<std::uint16_t>(io.v, positions * KVH * DV);
  const int v_pitch = mla ? DK : DV;
  std::vector<double> out(static_cast<std::size_t>(B) * Q * H * DV);
  const double scale = 1.0 / std::sqrt(static_cast<double>(DK));
  std::size_t start = 0;
  for (int r = 0; r < B; ++r) {
    const int L = io.kv_len[static_cast<std::size_t>(r)];
    for (int t = 0; t < Q; ++t)
      for (int h = 0; h < H; ++h) {
        const int kvh = h / (H / KVH);
        std::vector<int> seen;
        for (int p = 0; p < L; ++p) {
          const int j = p - (L - Q);
          const bool visible = j < 0 || (io.mask.empty() ? j <= t : ((io.mask[static_cast<std::size_t>(t)] >> j) & 1u));
          if (visible) seen.push_back(p);
        }
        std::vector<double> sc;
        double mx = -1e300;
        for (int p : seen) {
          double dot = 0;
          for (int e = 0; e < DK; ++e)
            dot += static_cast<double>(from_bf(q[((static_cast<std::size_t>(r) * Q + t) * H + h) * DK + e])) *
                   from_bf(k[((start + p) * KVH + kvh) * DK + e]);
          sc.push_back(dot * scale);
          mx = std::max(mx, sc.back());
        }
        double sum = 0;
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int e = 0; e < DV; ++e) {
          double acc = 0;
          for (std::size_t n = 0; n < seen.size(); ++n)
            acc += sc[n] * from_bf(v[((start + seen[n]) * KVH + kvh) * v_pitch + e]);
          out[((static_cast<std::size_t>(r) * Q + t) * H + h) * DV + e] = acc / sum;
        }
      }
    start += static_cast<std::size_t>(L);
  }
  return out;
}

SpeculativeConfig tree_config(int steps, int topk, int tokens) {
  SpeculativeConfig c;
  c.num_steps = steps;
  c.eagle_topk = topk;
  c.num_draft_tokens = tokens;
  c.mask = topk > 1 ? VerifyMask::tree : VerifyMask::chain;
  if (topk > 1) c.parents = derive_eagle_tree(steps, topk, tokens);
  return c;
}

}  // namespace

// Each shape class of the replay's attention (batch, ragged KV, chain / tree / branches masks,
// GQA and MLA) runs on the verify-attention kernel and matches the CPU reference on the buffers
// it ran on.
TEST(ReplayAttention, BatchedRaggedTreeShapesMatchCpuReference) {
  SKIP_WITHOUT_GPU();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  struct Case {
    const char* name;
    Op op;
    SpeculativeConfig spec;
  };
  const std::vector<Case> cases = {
      {"gqa B=2 ragged chain", attention_op(2, 4, {300, 1000}, AttentionMask::causal, false), tree_config(3, 1, 4)},
      {"gqa B=4 ragged tree", attention_op(4, 8, {100, 700, 64, 2048}, AttentionMask::tree, false), tree_config(5, 4, 8)},
      {"gqa B=8 branches", attention_op(8, 4, {90, 200, 333, 128, 1000, 77, 500, 64}, AttentionMask::branches, false),
       tree_config(5, 4, 8)},
      {"gqa B=3 tree 32 tokens", attention_op(3, 32, {512, 1500, 40}, AttentionMask::tree, false), tree_config(6, 8, 32)},
      {"mla B=3 ragged tree", attention_op(3, 8, {400, 1200, 65}, AttentionMask::tree, true), tree_config(5, 4, 8)},
      {"gqa B=8 decode", attention_op(8, 1, {2048, 2048, 2048, 2048, 2048, 2048, 2048, 2048}, AttentionMask::causal, false),
       tree_config(3, 1, 4)},
  };
  CommGroupConfig cc;
  cc.strategy = "ideal";
  cc.ranks = 1;
  cc.devices = {0};
  auto group = create_ideal_comm_group(cc);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Step step;
    step.name = "verify";
    step.ops = {c.op};
    ProgramOptions popts;
    popts.batch = c.op.batch;
    popts.speculative = c.spec;
    RankProgram program(step, 0, group->rank(0), nullptr, popts);
    EXPECT_NE(program.detail(0).find("verify-attention kernel"), std::string::npos) << program.detail(0);
    const RankProgram::AttentionIo io = program.attention_io(0);
    ASSERT_EQ(io.kv_len.size(), static_cast<std::size_t>(c.op.batch));
    if (c.op.mask == AttentionMask::causal) EXPECT_TRUE(io.mask.empty());
    else ASSERT_EQ(io.mask.size(), static_cast<std::size_t>(c.op.q_tokens));
    const bool mla = c.op.variant == AttentionVariant::mla;
    const std::size_t out_elems =
        static_cast<std::size_t>(c.op.batch) * c.op.q_tokens * c.op.heads * (mla ? 512 : c.op.head_dim);
    ASSERT_EQ(cudaMemset(const_cast<void*>(io.out), 0xFF, out_elems * 2), cudaSuccess);  // NaN
    program.enqueue(0, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<double> ref = attention_reference(c.op, io);
    const auto got = download_ptr<std::uint16_t>(io.out, out_elems);
    double num = 0, den = 0;
    for (std::size_t e = 0; e < out_elems; ++e) {
      const double g = from_bf(got[e]);
      ASSERT_TRUE(std::isfinite(g)) << "element " << e;
      num += (g - ref[e]) * (g - ref[e]);
      den += ref[e] * ref[e];
    }
    EXPECT_LT(std::sqrt(num / std::max(den, 1e-30)), 1e-2);
  }
}

// A batch whose KV cache cannot fit on the GPU is bad input (exit 2) naming the op, before
// anything is allocated for it.
TEST(ReplayAttention, KvCacheLargerThanTheGpuIsAnInputError) {
  SKIP_WITHOUT_GPU();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  Step step;
  step.name = "verify";
  // 4096 requests x 64Ki positions x 8 KV heads x 128 x 2 (K, V) x 2 bytes: 1 TiB.
  step.ops = {attention_op(4096, 4, {1 << 16}, AttentionMask::causal, false)};
  ProgramOptions popts;
  popts.batch = 4096;
  CommGroupConfig cc;
  cc.strategy = "ideal";
  cc.ranks = 1;
  cc.devices = {0};
  auto group = create_ideal_comm_group(cc);
  try {
    RankProgram program(step, 0, group->rank(0), nullptr, popts);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("KV cache"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("op 0 'attn'"), std::string::npos) << e.what();
  }
}

namespace {

// Llama-3.1-8B TP1 with its EAGLE-3 head, a ragged batch, SGLang's (steps, topk, draft tokens)
// and the engine's cycle, cut to the first decoder layer (and the ops outside layers) per step.
Trace small_batch_trace(int batch, std::vector<std::int64_t> kv_lens, int steps, int topk, int tokens) {
  const std::string repo = EAGLESIM_REPO;
  GenOptions g;
  g.tp = 1;
  g.batch = batch;
  g.kv_lens = std::move(kv_lens);
  g.speculative = tree_config(steps, topk, tokens);
  g.speculative->method = SpecMethod::eagle3;
  g.engine_cycle = true;
  g.draft = read_model_config(repo + "/models/llm/llama-3.1-8b-eagle3.json");
  Trace t = generate_trace(read_model_config(repo + "/models/llm/llama-3.1-8b.json"), g);
  for (Step& s : t.steps) {
    std::vector<Op> kept;
    for (const Op& op : s.ops)
      if (op.layer <= 0) kept.push_back(op);
    s.ops = kept;
  }
  return t;
}

}  // namespace

// A version-2 batch trace with a tree mask and the engine's cycle replays every step: the
// per-cycle kernels run (top-k, tree building, sampling), the host synchronisation splits the
// verify step's graph and is timed, the attention runs over the batch on the verify kernel.
TEST(CudaReplay, BatchTreeTraceWithTheEngineCycleRuns) {
  SKIP_WITHOUT_GPU();
  const Trace t = small_batch_trace(4, {300, 2048, 1000, 64}, 5, 4, 8);
  RunOptions opts;
  opts.iters = 5;
  opts.warmup = 1;
  opts.ranks = 1;
  auto backend = make_cuda_backend();
  for (const Step& step : t.steps) {
    SCOPED_TRACE(step.name);
    const StepResult r = backend->run_step(t, step, "ideal", nullptr, opts);
    EXPECT_GT(r.step_us, 0);
    EXPECT_EQ(r.samples, 5);
    // Every kind takes time, except a residual add, which the fused add + RMSNorm after it
    // reports as rmsnorm.
    for (const Op& op : step.ops)
      if (!op.is_comm() && op.kind != OpKind::residual_add)
        EXPECT_GT(r.kind_us[static_cast<int>(op.kind)], 0) << to_string(op.kind);
    bool any_attention = false;
    for (const Span& s : r.timeline.spans)
      if (s.kind == OpKind::attention) {
        any_attention = true;
        EXPECT_NE(s.detail.find("verify-attention kernel"), std::string::npos) << s.detail;
        EXPECT_NE(s.detail.find("4 requests"), std::string::npos) << s.detail;
      }
    EXPECT_TRUE(any_attention);
    const bool has_sync = std::any_of(step.ops.begin(), step.ops.end(), [](const Op& op) { return op.kind == OpKind::host_sync; });
    const bool noted = std::any_of(r.notes.begin(), r.notes.end(),
                                   [](const std::string& n) { return n.find("host synchronisation") != std::string::npos; });
    EXPECT_EQ(noted, has_sync);
  }
}

// The draft's candidates the replay's tree building scores (host only, no GPU): SGLang's
// structure (topk children of the root, then topk x topk children of each level's topk best,
// parent slot major) and path-product scores, so a parent always outranks its children.
TEST(DraftCandidates, SglangStructureAndPathProductScores) {
  const int steps = 5, topk = 4, batch = 3;
  const int c = static_cast<int>(draft_candidates(steps, topk));
  const DraftCandidates d = random_draft_candidates(batch, c, steps, topk, 9);
  ASSERT_EQ(d.scores.size(), static_cast<std::size_t>(batch * c));
  for (int b = 0; b < batch; ++b) {
    const float* s = d.scores.data() + static_cast<std::size_t>(b) * c;
    const std::int32_t* p = d.parent.data() + static_cast<std::size_t>(b) * c;
    for (int i = 0; i < topk; ++i) EXPECT_EQ(p[i], -1);
    int level_begin = 0, level_end = topk;
    for (int step = 1; step < steps; ++step) {
      // The parents of this level are the previous level's topk best, best first.
      std::vector<int> prev(static_cast<std::size_t>(level_end - level_begin));
      std::iota(prev.begin(), prev.end(), level_begin);
      std::stable_sort(prev.begin(), prev.end(), [&](int x, int y) { return s[x] > s[y]; });
      for (int j = 0; j < topk; ++j)
        for (int r = 0; r < topk; ++r) {
          const int idx = level_end + j * topk + r;
          ASSERT_EQ(p[idx], prev[static_cast<std::size_t>(j)]) << "candidate " << idx;
          EXPECT_LT(s[idx], s[p[idx]]);
        }
      level_begin = level_end;
      level_end += topk * topk;
    }
    EXPECT_EQ(level_end, c);
  }
  // Any other count: every candidate a child of the root.
  const DraftCandidates flat = random_draft_candidates(2, 10, 0, 0, 1);
  for (std::int32_t parent : flat.parent) EXPECT_EQ(parent, -1);
}

// The host's selection: the best tokens - 1 (equal scores: the lower candidate), in candidate
// order, under their candidate parent's node or, when it was not selected, the root.
TEST(DraftCandidates, VerifyTreeParentsSelectsAndNumbersInCandidateOrder) {
  const std::vector<float> scores = {0.9f, 0.5f, 0.8f, 0.5f, 0.1f, 0.7f};
  const std::vector<std::int32_t> parent = {-1, -1, 0, 1, 0, 3};
  // Selected: 0 (0.9), 2 (0.8), 5 (0.7), 1 (0.5, before 3 by index) -> nodes 1..4 in candidate
  // order 0, 1, 2, 5; candidate 5's parent 3 was not selected, so node 4 hangs from the root.
  EXPECT_EQ(verify_tree_parents(scores.data(), parent.data(), 6, 5), (std::vector<int>{-1, 0, 0, 1, 0}));
  EXPECT_EQ(verify_tree_parents(scores.data(), parent.data(), 6, 1), (std::vector<int>{-1}));
}

TEST(DraftCandidates, ChildListsInIndexOrder) {
  std::vector<std::int32_t> first, next;
  child_lists({-1, 0, 0, 1, 1, 3, 5, 6}, first, next);
  EXPECT_EQ(first, (std::vector<std::int32_t>{1, 3, -1, 5, -1, 6, 7, -1}));
  EXPECT_EQ(next, (std::vector<std::int32_t>{-1, 2, -1, 4, -1, -1, -1, -1}));
}
