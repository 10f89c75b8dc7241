#include "cuda/ops/gemm_candidates.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

namespace {

// Split counts tried, and the least k each split must keep (shorter splits spend more on the
// reduction than they win in parallelism).
constexpr int kSplits[] = {2, 3, 4, 6, 8, 12, 16};
constexpr std::int64_t kMinSplitDepth = 256;
// A split that launches more than this many waves of CTAs has gone past filling the GPU.
constexpr float kMaxSplitWaves = 2.0f;

// One scalar attribute of an algorithm, through its getter (configuration or capability); 0 when
// the library does not have it.
template <typename T, typename Attr>
T algo_attribute(cublasStatus_t (*get)(const cublasLtMatmulAlgo_t*, Attr, void*, std::size_t, std::size_t*),
                 const cublasLtMatmulAlgo_t& algo, Attr attr) {
  T value{};
  std::size_t written = 0;
  get(&algo, attr, &value, sizeof(value), &written);
  return value;
}

template <typename T>
T config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  return algo_attribute<T>(cublasLtMatmulAlgoConfigGetAttribute, algo, attr);
}

template <typename T>
bool set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T value) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
}

template <typename T>
T capability(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  return algo_attribute<T>(cublasLtMatmulAlgoCapGetAttribute, algo, attr);
}

// An array capability (tile or stage ids); empty when the algorithm lists none.
std::vector<std::uint32_t> capability_ids(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  std::size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0)
    return {};
  std::vector<std::uint32_t> ids(bytes / sizeof(std::uint32_t));
  std::size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, ids.data(), ids.size() * sizeof(std::uint32_t), &written) !=
      CUBLAS_STATUS_SUCCESS)
    return {};
  ids.resize(written / sizeof(std::uint32_t));
  return ids;
}

// What makes two configurations the same kernel launch.
using ConfigKey = std::tuple<int, std::uint32_t, std::uint32_t, int, std::uint32_t, std::uint32_t, std::uint32_t,
                             std::uint16_t, std::uint16_t>;
ConfigKey config_key(const cublasLtMatmulAlgo_t& a) {
  return {config<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_ID),
          config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
          config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID),
          std::max(1, config<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)),
          config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
          config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
          config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
          config<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID),
          config<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)};
}

bool proposes(const std::vector<GemmCandidate>& list, const ConfigKey& key) {
  return std::any_of(list.begin(), list.end(), [&](const GemmCandidate& c) {
    return c.source != GemmSource::cublas_default && config_key(c.algo) == key;
  });
}

// Whether `list` has the algorithm in this tile size already (in whatever other configuration).
bool proposes_tile(const std::vector<GemmCandidate>& list, int algo_id, std::uint32_t tile) {
  return std::any_of(list.begin(), list.end(), [&](const GemmCandidate& c) {
    return c.source != GemmSource::cublas_default && config<std::int32_t>(c.algo, CUBLASLT_ALGO_CONFIG_ID) == algo_id &&
           config<std::uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_TILE_ID) == tile;
  });
}

// Fills `out` when cuBLASLt accepts `algo` for the shape within the workspace.
bool check(const GemmShapeDescriptors& d, const cublasLtMatmulAlgo_t& algo, GemmCandidate& out) {
  cublasLtMatmulHeuristicResult_t r{};
  if (cublasLtMatmulAlgoCheck(d.lt, d.op, d.a, d.b, d.c, d.c, &algo, &r) != CUBLAS_STATUS_SUCCESS) return false;
  if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > d.workspace_bytes) return false;
  out.algo = algo;
  out.workspace = r.workspaceSize;
  out.waves = r.wavesCount;
  return true;
}

// The fp32 reduction where the algorithm has it (exact partial sums), else the output type's.
std::uint32_t reduction_scheme(const cublasLtMatmulAlgo_t& algo) {
  const auto mask = capability<std::uint32_t>(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
  for (std::uint32_t s : {CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE,
                          CUBLASLT_REDUCTION_SCHEME_INPLACE})
    if (mask & s) return s;
  return CUBLASLT_REDUCTION_SCHEME_NONE;
}

const char* reduction_name(std::uint32_t scheme) {
  switch (scheme) {
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "fp32";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "bf16";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    default: return "none";
  }
}

// How much of the GPU the last wave of CTAs keeps busy (1: every wave full); under one wave, the
// share of the GPU the launch uses at all.
double wave_fill(float waves) { return waves > 0 ? waves / std::ceil(waves) : 0.0; }

}  // namespace

std::vector<GemmCandidate> heuristic_candidates(const GemmShapeDescriptors& d) {
  cublasLtMatmulPreference_t pref = nullptr;
  EAGLESIM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::uint64_t ws = d.workspace_bytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  std::vector<cublasLtMatmulHeuristicResult_t> results(kHeuristicRequest);
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(d.lt, d.op, d.a, d.b, d.c, d.c, pref, kHeuristicRequest,
                                                           results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  std::vector<GemmCandidate> out;
  for (int r = 0; st == CUBLAS_STATUS_SUCCESS && r < found; ++r) {
    if (results[r].state != CUBLAS_STATUS_SUCCESS) continue;
    GemmCandidate c;
    c.source = GemmSource::heuristic;
    c.algo = results[r].algo;
    c.workspace = results[r].workspaceSize;
    c.waves = results[r].wavesCount;
    const int split = config<std::int32_t>(c.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    c.name = split > 1 ? fmt::format("lt#{} splitK={}", r, split) : fmt::format("lt#{}", r);
    out.push_back(c);
  }
  if (out.empty())
    throw DeviceError(fmt::format("cuBLASLt has no algorithm for the GEMM ({})", cublasLtGetStatusName(st)));
  return out;
}

std::vector<GemmCandidate> split_k_candidates(const GemmShapeDescriptors& d, const std::vector<GemmCandidate>& proposed) {
  std::vector<GemmCandidate> out;
  int bases = 0;
  for (std::size_t r = 0; r < proposed.size() && bases < kSplitKBases; ++r) {
    const GemmCandidate& base = proposed[r];
    if (base.source != GemmSource::heuristic) continue;
    if (config<std::int32_t>(base.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) > 1) continue;
    // A proposal that already fills the GPU gains nothing from more, smaller pieces of work.
    if (base.waves >= 1.0f) continue;
    if (capability<std::int32_t>(base.algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) == 0) continue;
    const std::uint32_t scheme = reduction_scheme(base.algo);
    if (scheme == CUBLASLT_REDUCTION_SCHEME_NONE) continue;
    ++bases;
    for (int s : kSplits) {
      if (d.k / s < kMinSplitDepth || static_cast<int>(out.size()) >= kSplitKMax) break;
      cublasLtMatmulAlgo_t algo = base.algo;
      if (!set_config<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, s) ||
          !set_config<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, scheme))
        break;
      if (proposes(proposed, config_key(algo))) continue;
      GemmCandidate c;
      if (!check(d, algo, c)) continue;
      if (c.waves > kMaxSplitWaves) break;  // larger splits only launch more waves
      c.source = GemmSource::split_k;
      c.name = fmt::format("{} splitK={} ({} reduction)", base.name, s, reduction_name(scheme));
      out.push_back(c);
    }
  }
  return out;
}

std::vector<GemmCandidate> enumerated_candidates(const GemmShapeDescriptors& d,
                                                 const std::vector<GemmCandidate>& proposed) {
  constexpr int kMaxIds = 128;
  int ids[kMaxIds];
  int n_ids = 0;
  if (cublasLtMatmulAlgoGetIds(d.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, d.in_type, d.in_type, CUDA_R_16BF, CUDA_R_16BF,
                               kMaxIds, ids, &n_ids) != CUBLAS_STATUS_SUCCESS)
    return {};
  std::vector<GemmCandidate> found;
  // The checks shared out over the algorithms, so that the last listed get their turn too.
  const int checks_per_algo = std::max(4, kEnumerationChecks / std::max(n_ids, 1));
  for (int i = 0; i < n_ids; ++i) {
    int checks = 0;
    cublasLtMatmulAlgo_t algo{};
    if (cublasLtMatmulAlgoInit(d.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, d.in_type, d.in_type, CUDA_R_16BF, CUDA_R_16BF,
                               ids[i], &algo) != CUBLAS_STATUS_SUCCESS)
      continue;
    std::vector<std::uint32_t> tiles = capability_ids(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
    if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
    std::vector<std::uint32_t> stages = capability_ids(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
    if (stages.empty()) stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
    // The library's own stage count for a stage size (the ...xAUTO ids) before fixed counts.
    std::stable_partition(stages.begin(), stages.end(), [](std::uint32_t s) {
      return s >= CUBLASLT_MATMUL_STAGES_8xAUTO && s <= CUBLASLT_MATMUL_STAGES_768xAUTO;
    });
    // Largest tiles first (cuBLASLt numbers them by size): the fewest reads of the operands.
    std::reverse(tiles.begin(), tiles.end());
    for (std::uint32_t tile : tiles) {
      if (proposes_tile(proposed, ids[i], tile)) continue;
      // One stage setting per tile: the first that cuBLASLt accepts, of the first two.
      for (std::size_t s = 0; s < std::min<std::size_t>(2, stages.size()) && checks < checks_per_algo; ++s) {
        cublasLtMatmulAlgo_t cfg = algo;
        if (!set_config<std::uint32_t>(cfg, CUBLASLT_ALGO_CONFIG_TILE_ID, tile) ||
            !set_config<std::uint32_t>(cfg, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages[s]))
          continue;
        ++checks;
        GemmCandidate c;
        if (!check(d, cfg, c)) continue;
        c.source = GemmSource::enumerated;
        c.name = fmt::format("lt algo={} tile={} stages={}", ids[i], tile, stages[s]);
        found.push_back(c);
        break;
      }
    }
  }
  // Tiles so small that they launch more than twice the waves of the heuristic's first choice read
  // the operands too often to win; the rest, fullest last wave first, among equals fewer waves
  // (larger tiles).
  const float first_waves = proposed.empty() ? 0.f : proposed.front().waves;
  const float max_waves = std::max(kMaxSplitWaves, 2 * first_waves);
  found.erase(std::remove_if(found.begin(), found.end(), [&](const GemmCandidate& c) { return c.waves > max_waves; }),
              found.end());
  std::stable_sort(found.begin(), found.end(), [](const GemmCandidate& a, const GemmCandidate& b) {
    const double fa = wave_fill(a.waves), fb = wave_fill(b.waves);
    return fa != fb ? fa > fb : a.waves < b.waves;
  });
  if (found.size() > static_cast<std::size_t>(kEnumeratedMax)) found.resize(kEnumeratedMax);
  return found;
}

GemmCandidate cublas_default_candidate() {
  GemmCandidate c;
  c.source = GemmSource::cublas_default;
  c.name = "cublas default";
  return c;
}

}  // namespace eaglesim::cuda
