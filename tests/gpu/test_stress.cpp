// Stress tests of the allreduce strategies on 2 GPUs (issue #9).
//
// Stress.RandomSizes: for every strategy, EAGLESIM_STRESS_CALLS (default 100000) bf16
// allreduces of random sizes (fixed-seed RNG, log-uniform from 2 B to 1 MiB, plus edge sizes
// first), one host thread per rank, and EVERY result checked on the host:
//  * inputs are slices (random offset, half of them 16-byte aligned, half arbitrary) of one
//    fixed random pool per rank, uploaded once; so the expected result of any call is a slice of
//    one precomputed array: the fp32 sum in rank order of the two pools, rounded to bf16 (what
//    the custom kernels promise, bitwise);
//  * calls run in batches (<= 256 calls, <= 32 MiB of outputs); every call writes its own
//    region of an output arena that is NaN-poisoned (0xFF) before the batch, with poisoned gaps
//    between regions, so a missing write, a stale slot or an overrun is seen;
//  * after each batch both arenas come back and are compared: rank 0 against the reference,
//    rank 1 bitwise against rank 0, and every gap byte must still be 0xFF.
// quant is lossy: checked against the fp8 bound of kernels/quant_allreduce.cuh (as
// test_custom_allreduce.cpp does). nccl is checked within a bf16 tolerance (its summation is
// NCCL's business); bitwise differences from the reference are reported as a note. fused runs
// its own path, allreduce_residual_rmsnorm, on random [tokens, hidden] shapes of the same sizes
// (new residual bitwise, normed within bf16 rounding, both identical across ranks).
// EAGLESIM_STRESS_SECONDS (default 60) caps each strategy's wall time: a strategy that reaches
// it stops after the current batch, says so, and fails only on wrong results.
// One line per strategy on stdout: STRESS strategy=X calls=N bytes_total=B wrong=W seconds=S.
//
// Stress.StalledRankAbortsWithinTimeout: rank 0 allreduces, rank 1 never does; rank 0 must get
// an error within the timeout instead of hanging (oneshot: the kernel's own timeout from
// CommGroupConfig::timeout_s; nccl: the backend's Watchdog aborting the communicator).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "cuda/comm/custom_comm.hpp"
#include "cuda/comm/nccl_comm_group.hpp"
#include "cuda/comm/rank_comm.hpp"
#include "cuda/runtime/watchdog.hpp"

namespace eaglesim::cuda {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr int kRanks = 2;
constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 20;  // largest message: 1 MiB
constexpr std::size_t kMaxCount = kMaxMessageBytes / 2;          // in bf16 elements
constexpr std::size_t kPoolElems = std::size_t{4} << 20;         // random input pool per rank (8 MiB)
constexpr std::size_t kArenaBytes = std::size_t{32} << 20;       // outputs of one batch, per rank
constexpr std::size_t kBatchCalls = 256;
constexpr std::size_t kGuardBytes = 32;  // poisoned gap after every output region
constexpr std::uint64_t kSeed = 0x5EED0009;
constexpr float kRmsEps = 1e-6f;

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess)
    throw DeviceError(std::string(what) + ": " + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ")");
}

// A positive number from the environment, `fallback` when unset; anything else is an error.
double env_positive(const char* name, double fallback, bool integral) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (*end != '\0' || !(d > 0) || (integral && d != std::floor(d)))
    throw InputError(std::string(name) + ": expected a positive " + (integral ? "integer" : "number") + ", got '" +
                     v + "'");
  return d;
}

// ------------------------------------------------------------------ bf16 on the host
float bf16_to_f(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t cuda_f_to_bf16(float f) {  // the CUDA headers' host conversion (round to nearest even)
  const __nv_bfloat16 b = __float2bfloat16_rn(f);
  std::uint16_t bits;
  std::memcpy(&bits, &b, 2);
  return bits;
}

// Round to nearest even on the bits: the same result as __float2bfloat16_rn for finite values
// (make_pools checks that on millions of values), several times faster in the check loops.
std::uint16_t f_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

std::uint16_t load_bits(const unsigned char* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

const unsigned char* bytes_of(const std::vector<std::uint16_t>& v) {
  return reinterpret_cast<const unsigned char*>(v.data());
}

// Host copies of everything the GPUs read, and the precomputed exact result.
struct HostPools {
  std::vector<std::uint16_t> in[kRanks];  // each rank's input pool (bf16 bits)
  std::vector<std::uint16_t> sum;         // bf16(fp32 0 + in[0] + in[1]): the custom kernels' promise
  std::vector<std::uint16_t> residual;    // fused: the residual before the call (same on every rank)
  std::vector<std::uint16_t> weight;      // fused: RMSNorm weight (same on every rank)
};

std::vector<std::uint16_t> random_bf16(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);  // never all zeros; no -0 (see sum)
  std::vector<std::uint16_t> out(count);
  for (auto& v : out) v = cuda_f_to_bf16(dist(rng));
  return out;
}

HostPools make_pools() {
  HostPools p;
  for (int r = 0; r < kRanks; ++r) p.in[r] = random_bf16(kPoolElems, kSeed + 1 + r);
  p.sum.resize(kPoolElems);
  for (std::size_t j = 0; j < kPoolElems; ++j) {
    float acc = 0.f;  // exactly the kernels' accumulation: fp32 from +0, rank order 0..N-1
    for (int r = 0; r < kRanks; ++r) acc += bf16_to_f(p.in[r][j]);
    p.sum[j] = cuda_f_to_bf16(acc);
  }
  p.residual = random_bf16(kPoolElems, kSeed + 100);
  p.weight = random_bf16(kPoolElems, kSeed + 200);
  // The fast rounding must agree with CUDA's on the kind of values the checks round.
  for (std::size_t j = 0; j < kPoolElems; ++j) {
    const float values[] = {bf16_to_f(p.in[0][j]) + bf16_to_f(p.in[1][j]),
                            bf16_to_f(p.residual[j]) + bf16_to_f(p.sum[(j * 7919) % kPoolElems]),
                            bf16_to_f(p.residual[j]) * 0.7f * bf16_to_f(p.weight[j])};
    for (float v : values)
      if (f_to_bf16(v) != cuda_f_to_bf16(v))
        throw std::logic_error(fmt::format("test bug: bf16 rounding of {} differs from __float2bfloat16_rn", v));
  }
  return p;
}

// ------------------------------------------------------------------ device resources (RAII)
struct DeviceBytes {
  int device = 0;
  unsigned char* p = nullptr;
  DeviceBytes(int d, std::size_t bytes) : device(d) {
    cuda_check(cudaSetDevice(d), "cudaSetDevice");
    cuda_check(cudaMalloc(&p, bytes), "cudaMalloc");
  }
  ~DeviceBytes() {
    cudaSetDevice(device);
    cudaFree(p);
  }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
};

struct PinnedBytes {
  unsigned char* p = nullptr;
  explicit PinnedBytes(std::size_t bytes) { cuda_check(cudaMallocHost(&p, bytes), "cudaMallocHost"); }
  ~PinnedBytes() { cudaFreeHost(p); }
  PinnedBytes(const PinnedBytes&) = delete;
  PinnedBytes& operator=(const PinnedBytes&) = delete;
};

struct Stream {
  int device = 0;
  cudaStream_t s = nullptr;
  explicit Stream(int d) : device(d) {
    cuda_check(cudaSetDevice(d), "cudaSetDevice");
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~Stream() {
    cudaSetDevice(device);
    cudaStreamDestroy(s);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// One rank's buffers: the pools (uploaded once) and the per-batch arenas with host copies.
struct RankBuffers {
  int device;
  Stream stream;
  DeviceBytes in_pool, residual_pool, weight_pool;
  DeviceBytes out;       // allreduce outputs (fused: normed)
  DeviceBytes residual;  // fused: per-call residual, updated in place by the kernel
  PinnedBytes out_host, residual_host;

  RankBuffers(int d, const HostPools& pools)
      : device(d),
        stream(d),
        in_pool(d, 2 * kPoolElems),
        residual_pool(d, 2 * kPoolElems),
        weight_pool(d, 2 * kPoolElems),
        out(d, kArenaBytes),
        residual(d, kArenaBytes),
        out_host(kArenaBytes),
        residual_host(kArenaBytes) {
    cuda_check(cudaSetDevice(d), "cudaSetDevice");
    cuda_check(cudaMemcpy(in_pool.p, pools.in[d].data(), 2 * kPoolElems, cudaMemcpyHostToDevice), "upload inputs");
    cuda_check(cudaMemcpy(residual_pool.p, pools.residual.data(), 2 * kPoolElems, cudaMemcpyHostToDevice),
               "upload residuals");
    cuda_check(cudaMemcpy(weight_pool.p, pools.weight.data(), 2 * kPoolElems, cudaMemcpyHostToDevice),
               "upload weights");
  }
};

// ------------------------------------------------------------------ the calls
struct Call {
  std::size_t count = 0;               // elements (fused: tokens * hidden)
  std::size_t tokens = 1, hidden = 0;  // fused shape
  std::size_t in_off = 0;              // element offset into the input pools (same on every rank)
  std::size_t res_off = 0, w_off = 0;  // fused: element offsets into the residual / weight pools
  std::size_t out_shift = 0;           // elements past the 16-byte boundary where the output starts
  std::size_t out_at = 0;              // byte offset of the output (fused: and residual) in the arenas
};

std::string describe(const Call& c, std::int64_t index) {
  return fmt::format("call {}: count {} ({}x{}) in_off {} res_off {} w_off {} out_at {}", index, c.count, c.tokens,
                     c.hidden, c.in_off, c.res_off, c.w_off, c.out_at);
}

// The fixed-seed sequence of calls of one strategy: edge sizes first, then random ones.
class CallSource {
 public:
  explicit CallSource(bool fused) : fused_(fused), rng_(kSeed) {}

  Call next() {
    Call c;
    const std::size_t i = index_++;
    if (fused_) {
      struct Shape { std::size_t tokens, hidden; };
      // Split rows (few long rows), odd widths, many rows (more rows than blocks), 1 MiB.
      static const Shape kEdges[] = {{1, 1},    {1, 7},     {5, 1},    {2, 13},    {1, 7168}, {3, 7168},
                                     {2, 7167}, {4, 8192},  {8, 4096}, {16, 7168}, {130, 64}, {256, 2048},
                                     {1, kMaxCount}, {3, 4099}};
      if (i < sizeof(kEdges) / sizeof(kEdges[0])) {
        c.tokens = kEdges[i].tokens;
        c.hidden = kEdges[i].hidden;
      } else {
        const std::size_t count = random_count();
        const std::size_t max_tokens = std::min<std::size_t>(256, count);
        std::uniform_real_distribution<double> log_t(0.0, std::log(static_cast<double>(max_tokens) + 1.0));
        c.tokens = std::clamp<std::size_t>(static_cast<std::size_t>(std::exp(log_t(rng_))), 1, max_tokens);
        c.hidden = count / c.tokens;
      }
      c.count = c.tokens * c.hidden;
    } else {
      static const std::size_t kEdges[] = {1,    2,    3,     7,     8,     9,     15,            16,       17,
                                           127,  128,  129,   255,   256,   257,   4095,          4096,     4097,
                                           65535, 65536, 65537, 100003, kMaxCount - 1, kMaxCount};
      c.count = i < sizeof(kEdges) / sizeof(kEdges[0]) ? kEdges[i] : random_count();
    }
    // Half the calls with every pointer 16-byte aligned (packed path), half anywhere (scalar
    // path for the unaligned ones, and partial last units either way).
    const bool aligned = (rng_() & 1) != 0;
    c.in_off = offset_for(c.count, aligned);
    c.res_off = offset_for(c.count, aligned);
    c.w_off = offset_for(c.hidden, aligned);
    c.out_shift = aligned ? 0 : pick(7);
    return c;
  }

 private:
  // Log-uniform message size in bytes from 2 B to 1 MiB, as a bf16 element count.
  std::size_t random_count() {
    std::uniform_real_distribution<double> log_bytes(std::log(2.0), std::log(static_cast<double>(kMaxMessageBytes)));
    const double bytes = std::exp(log_bytes(rng_));
    return std::clamp<std::size_t>(static_cast<std::size_t>(std::llround(bytes / 2)), 1, kMaxCount);
  }
  std::size_t pick(std::size_t hi) { return std::uniform_int_distribution<std::size_t>(0, hi)(rng_); }
  std::size_t offset_for(std::size_t len, bool aligned) {
    const std::size_t room = kPoolElems - len;
    return aligned ? pick(room / 8) * 8 : pick(room);
  }

  bool fused_;
  std::mt19937_64 rng_;
  std::size_t index_ = 0;
};

// Places a call's output after `cursor` (16-byte boundary + its shift, then a poisoned gap).
// False when the arena is full: the call goes into the next batch.
bool place(Call& c, std::size_t& cursor) {
  const std::size_t at = (cursor + 15) / 16 * 16 + 2 * c.out_shift;
  const std::size_t end = at + 2 * c.count + kGuardBytes;
  if (end > kArenaBytes) return false;
  c.out_at = at;
  cursor = end;
  return true;
}

// Enqueues one batch on one rank, copies the arenas back and waits. Returns "" or the error.
std::string run_batch(RankComm& comm, RankBuffers& b, const std::vector<Call>& calls, std::size_t used, bool fused) {
  try {
    cuda_check(cudaSetDevice(b.device), "cudaSetDevice");
    const cudaStream_t s = b.stream.s;
    cuda_check(cudaMemsetAsync(b.out.p, 0xFF, used, s), "cudaMemsetAsync (poison outputs)");
    if (fused) cuda_check(cudaMemsetAsync(b.residual.p, 0xFF, used, s), "cudaMemsetAsync (poison residuals)");
    for (const Call& c : calls) {
      const unsigned char* in = b.in_pool.p + 2 * c.in_off;
      if (!fused) {
        comm.allreduce(in, b.out.p + c.out_at, c.count, DType::bf16, s);
        continue;
      }
      cuda_check(cudaMemcpyAsync(b.residual.p + c.out_at, b.residual_pool.p + 2 * c.res_off, 2 * c.count,
                                 cudaMemcpyDeviceToDevice, s),
                 "cudaMemcpyAsync (residual)");
      FusedNormArgs a;
      a.residual = b.residual.p + c.out_at;
      a.weight = b.weight_pool.p + 2 * c.w_off;
      a.normed = b.out.p + c.out_at;
      a.tokens = c.tokens;
      a.hidden = c.hidden;
      a.eps = kRmsEps;
      comm.allreduce_residual_rmsnorm(in, a, DType::bf16, s);
    }
    cuda_check(cudaMemcpyAsync(b.out_host.p, b.out.p, used, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (outputs)");
    if (fused)
      cuda_check(cudaMemcpyAsync(b.residual_host.p, b.residual.p, used, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync (residuals)");
    cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

// ------------------------------------------------------------------ checks
enum class Check { exact, nccl, quant, fused };

struct Tally {
  std::int64_t wrong = 0;        // wrong elements (+ elements that differ across ranks + overrun bytes)
  std::int64_t not_bitwise = 0;  // nccl: elements within tolerance but not the bitwise reference
};

// 2-byte elements where a and b differ.
std::int64_t differing(const unsigned char* a, const unsigned char* b, std::size_t count) {
  if (std::memcmp(a, b, 2 * count) == 0) return 0;
  std::int64_t n = 0;
  for (std::size_t i = 0; i < count; ++i) n += std::memcmp(a + 2 * i, b + 2 * i, 2) != 0 ? 1 : 0;
  return n;
}

// Bytes in [from, to) no longer holding the 0xFF poison.
std::int64_t unpoisoned(const unsigned char* p, std::size_t from, std::size_t to) {
  std::int64_t n = 0;
  for (std::size_t i = from; i < to; ++i) n += p[i] != 0xFF ? 1 : 0;
  return n;
}

// The host copies of one batch's arenas, per rank.
struct BatchOutputs {
  const unsigned char* out[kRanks];       // allreduce outputs (fused: normed)
  const unsigned char* residual[kRanks];  // fused: updated residuals
};

// Rank 0's output against the reference; then every other rank bitwise against rank 0.
Tally check_call(Check kind, const HostPools& p, const Call& c, const BatchOutputs& o) {
  Tally t;
  const std::size_t n = c.count;
  const unsigned char* got = o.out[0] + c.out_at;
  const unsigned char* want = bytes_of(p.sum) + 2 * c.in_off;
  switch (kind) {
    case Check::exact:
      t.wrong += differing(got, want, n);
      break;
    case Check::nccl: {
      if (std::memcmp(got, want, 2 * n) == 0) break;
      for (std::size_t i = 0; i < n; ++i) {
        if (std::memcmp(got + 2 * i, want + 2 * i, 2) == 0) continue;
        ++t.not_bitwise;
        double ref = 0, abs_sum = 0;
        for (int r = 0; r < kRanks; ++r) {
          const double v = bf16_to_f(p.in[r][c.in_off + i]);
          ref += v;
          abs_sum += std::fabs(v);
        }
        const double g = bf16_to_f(load_bits(got + 2 * i));
        if (!(std::fabs(g - ref) <= kRanks * (1.0 / 128) * abs_sum)) ++t.wrong;
      }
      break;
    }
    case Check::quant: {
      // Bound of kernels/quant_allreduce.cuh: sum over ranks of the 128-element group's amax
      // times 2^-4 (e4m3), plus the final rounding to bf16 (same bound as test_custom_allreduce).
      const std::uint16_t* in[kRanks];
      for (int r = 0; r < kRanks; ++r) in[r] = p.in[r].data() + c.in_off;
      for (std::size_t g0 = 0; g0 < n; g0 += 128) {
        const std::size_t g1 = std::min(n, g0 + 128);
        double amax_sum = 0;
        for (int r = 0; r < kRanks; ++r) {
          float amax = 0;
          for (std::size_t i = g0; i < g1; ++i) amax = std::max(amax, std::fabs(bf16_to_f(in[r][i])));
          amax_sum += amax;
        }
        for (std::size_t i = g0; i < g1; ++i) {
          double ref = 0;
          for (int r = 0; r < kRanks; ++r) ref += bf16_to_f(in[r][i]);
          const double g = bf16_to_f(load_bits(got + 2 * i));
          if (!(std::fabs(g - ref) <= amax_sum / 16.0 + std::fabs(ref) / 256.0 + 1e-6)) ++t.wrong;
        }
      }
      break;
    }
    case Check::fused: {
      // New residual, bitwise: bf16(old + bf16(sum)). Normed: rmsnorm(new residual) * weight
      // within bf16 rounding (the kernel's sum of squares is fp32, ours double).
      const unsigned char* res = o.residual[0] + c.out_at;
      const std::uint16_t* old_res = p.residual.data() + c.res_off;
      const std::uint16_t* sum = p.sum.data() + c.in_off;
      const std::uint16_t* weight = p.weight.data() + c.w_off;
      for (std::size_t row = 0; row < c.tokens; ++row) {
        const std::size_t first = row * c.hidden;
        double ss = 0;
        for (std::size_t i = first; i < first + c.hidden; ++i) {
          const std::uint16_t have = load_bits(res + 2 * i);
          if (have != f_to_bf16(bf16_to_f(old_res[i]) + bf16_to_f(sum[i]))) ++t.wrong;
          const double x = bf16_to_f(have);
          ss += x * x;
        }
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(c.hidden) + kRmsEps);
        for (std::size_t h = 0; h < c.hidden; ++h) {
          const std::size_t i = first + h;
          const double expect = bf16_to_f(load_bits(res + 2 * i)) * inv * bf16_to_f(weight[h]);
          const double g = bf16_to_f(load_bits(got + 2 * i));
          if (!(std::fabs(g - expect) <= std::fabs(expect) / 128.0 + 1e-5)) ++t.wrong;
        }
      }
      break;
    }
  }
  for (int r = 1; r < kRanks; ++r) {
    t.wrong += differing(o.out[r] + c.out_at, got, n);
    if (kind == Check::fused) t.wrong += differing(o.residual[r] + c.out_at, o.residual[0] + c.out_at, n);
  }
  return t;
}

// Every byte of the used arena outside the calls' regions must still be poison (no overrun).
std::int64_t count_overruns(const std::vector<Call>& calls, std::size_t used, const unsigned char* arena) {
  std::int64_t n = 0;
  std::size_t prev_end = 0;
  for (const Call& c : calls) {
    n += unpoisoned(arena, prev_end, c.out_at);
    prev_end = c.out_at + 2 * c.count;
  }
  return n + unpoisoned(arena, prev_end, used);
}

struct StressResult {
  std::int64_t calls = 0;
  std::int64_t bytes_total = 0;
  Tally tally;
  std::int64_t overruns = 0;
  double seconds = 0;
  bool time_capped = false;
  std::string error;      // a call or CUDA error that stopped the strategy
  std::string first_bad;  // the first call with a wrong result
};

StressResult stress_strategy(const std::string& strategy, Check kind, std::vector<std::unique_ptr<RankBuffers>>& ranks,
                             const HostPools& pools, std::int64_t calls_wanted, double seconds_cap) {
  StressResult res;
  CommGroupConfig cfg;
  cfg.strategy = strategy;
  cfg.ranks = kRanks;
  cfg.devices = {0, 1};
  // Twice the largest message: fused rows are padded to 16 bytes in the registered slot, and
  // no call may take the NCCL fallback (its results are not the custom kernels' bitwise ones).
  cfg.max_bytes = 2 * kMaxMessageBytes;
  cfg.timeout_s = 30;
  std::unique_ptr<CommGroup> group = create_comm_group(cfg);
  auto* custom = dynamic_cast<CustomCommGroup*>(group.get());
  const bool fused = kind == Check::fused;
  if (fused && !group->rank(0).supports_fused()) {
    res.error = strategy + ": supports_fused() is false";
    return res;
  }

  const unsigned check_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  CallSource source(fused);
  Call pending;
  bool have_pending = false;
  std::vector<Call> batch;
  const auto start = Clock::now();
  while (res.calls < calls_wanted) {
    if (res.calls > 0 && seconds_since(start) > seconds_cap) {  // at least one batch always runs
      res.time_capped = true;
      break;
    }
    batch.clear();
    std::size_t cursor = 0;
    while (batch.size() < kBatchCalls && res.calls + static_cast<std::int64_t>(batch.size()) < calls_wanted) {
      Call c = have_pending ? pending : source.next();
      have_pending = false;
      if (!place(c, cursor)) {  // always fits an empty arena (1 MiB + 64 B < 32 MiB)
        pending = c;
        have_pending = true;
        break;
      }
      batch.push_back(c);
    }
    const std::size_t used = cursor;

    std::vector<std::string> errors(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
      threads.emplace_back([&, r] { errors[r] = run_batch(group->rank(r), *ranks[r], batch, used, fused); });
    for (auto& th : threads) th.join();
    for (int r = 0; r < kRanks; ++r)
      if (!errors[r].empty()) res.error += fmt::format("{}rank {}: {}", res.error.empty() ? "" : "; ", r, errors[r]);
    if (custom != nullptr && !custom->failure().empty())
      res.error += (res.error.empty() ? "" : "; ") + custom->failure();
    if (!res.error.empty()) break;

    BatchOutputs outputs{};
    for (int r = 0; r < kRanks; ++r) {
      outputs.out[r] = ranks[r]->out_host.p;
      outputs.residual[r] = ranks[r]->residual_host.p;
    }
    // Calls are independent: check them on several host threads (the lossy checks cost a few
    // ns per element, ~40k elements per call on average).
    std::vector<Tally> tallies(batch.size());
    std::atomic<std::size_t> next_call{0};
    std::vector<std::thread> checkers;
    for (unsigned w = 0; w < check_threads; ++w)
      checkers.emplace_back([&] {
        for (std::size_t k; (k = next_call++) < batch.size();) tallies[k] = check_call(kind, pools, batch[k], outputs);
      });
    for (auto& th : checkers) th.join();
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const Tally& t = tallies[k];
      res.tally.wrong += t.wrong;
      res.tally.not_bitwise += t.not_bitwise;
      if (t.wrong != 0 && res.first_bad.empty())
        res.first_bad = describe(batch[k], res.calls + static_cast<std::int64_t>(k)) + fmt::format(": {} wrong", t.wrong);
      res.bytes_total += static_cast<std::int64_t>(2 * batch[k].count);
    }
    for (int r = 0; r < kRanks; ++r) {
      res.overruns += count_overruns(batch, used, ranks[r]->out_host.p);
      if (fused) res.overruns += count_overruns(batch, used, ranks[r]->residual_host.p);
    }
    res.calls += static_cast<std::int64_t>(batch.size());
  }
  res.seconds = seconds_since(start);
  res.tally.wrong += res.overruns;
  return res;
}

struct Plan {
  const char* strategy;  // as create_comm_group() spells it
  Check check;
};
const Plan kPlans[] = {
    {"nccl", Check::nccl},     {"oneshot", Check::exact}, {"oneshot_push", Check::exact},
    {"twoshot", Check::exact}, {"fused", Check::fused},   {"quant", Check::quant},
};

TEST(Stress, RandomSizes) {
  if (gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const auto calls_wanted = static_cast<std::int64_t>(env_positive("EAGLESIM_STRESS_CALLS", 100000, true));
  const double seconds_cap = env_positive("EAGLESIM_STRESS_SECONDS", 60, false);
  const HostPools pools = make_pools();
  std::vector<std::unique_ptr<RankBuffers>> ranks;
  for (int r = 0; r < kRanks; ++r) ranks.push_back(std::make_unique<RankBuffers>(r, pools));

  for (const Plan& plan : kPlans) {
    const StressResult res = stress_strategy(plan.strategy, plan.check, ranks, pools, calls_wanted, seconds_cap);
    fmt::print("STRESS strategy={} calls={} bytes_total={} wrong={} seconds={:.2f}\n", plan.strategy, res.calls,
               res.bytes_total, res.tally.wrong, res.seconds);
    if (res.time_capped)
      fmt::print("STRESS strategy={} time-capped at {} calls of {} (EAGLESIM_STRESS_SECONDS={}); not a failure\n",
                 plan.strategy, res.calls, calls_wanted, seconds_cap);
    if (res.tally.not_bitwise != 0)
      fmt::print("STRESS strategy={} note: {} elements within tolerance but not the bitwise fp32-sum reference\n",
                 plan.strategy, res.tally.not_bitwise);
    std::fflush(stdout);
    EXPECT_EQ(res.error, "") << plan.strategy;
    EXPECT_EQ(res.tally.wrong, 0) << plan.strategy << ": " << res.overruns << " bytes written outside the outputs; first: "
                                  << res.first_bad;
    EXPECT_GT(res.calls, 0) << plan.strategy;
  }
}

// The stall tests' timeout (CommGroupConfig::timeout_s, the watchdog's) and the elements of the allreduce
// rank 1 never joins.
constexpr double kStallTimeout = 1.0;
constexpr std::size_t kStallCount = 2048;

// A stall test's group of both GPUs, whose peers time out after kStallTimeout.
CommGroupConfig stall_config(const char* strategy) {
  CommGroupConfig cfg;
  cfg.strategy = strategy;
  cfg.ranks = kRanks;
  cfg.devices = {0, 1};
  cfg.timeout_s = kStallTimeout;
  return cfg;
}

// oneshot: the waiting kernel gives up by itself after CommGroupConfig::timeout_s, records
// the failure in the group, and returns (the stream stays usable).
void check_oneshot_stall_aborts() {
  CommGroupConfig cfg = stall_config("oneshot");
  cfg.max_bytes = kMaxMessageBytes;
  std::unique_ptr<CommGroup> group = create_comm_group(cfg);
  auto* custom = dynamic_cast<CustomCommGroup*>(group.get());
  ASSERT_NE(custom, nullptr);
  DeviceBytes buf(0, 2 * kStallCount);
  Stream stream(0);
  cudaError_t sync_rc = cudaErrorUnknown;
  double waited = -1;
  std::string error;
  std::thread rank0([&] {  // rank 1's thread never calls
    try {
      cuda_check(cudaSetDevice(0), "cudaSetDevice");
      cuda_check(cudaMemset(buf.p, 0, 2 * kStallCount), "cudaMemset");
      const auto start = Clock::now();
      group->rank(0).allreduce(buf.p, buf.p, kStallCount, DType::bf16, stream.s);
      sync_rc = cudaStreamSynchronize(stream.s);
      waited = seconds_since(start);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  rank0.join();
  ASSERT_EQ(error, "");
  fmt::print("STALL strategy=oneshot aborted_after_s={:.3f}\n", waited);
  std::fflush(stdout);
  EXPECT_EQ(sync_rc, cudaSuccess) << cudaGetErrorString(sync_rc);
  EXPECT_GE(waited, 0.5 * kStallTimeout);  // it did wait for the peer
  EXPECT_LT(waited, kStallTimeout + 10.0);
  EXPECT_NE(custom->failure().find("rank 0"), std::string::npos) << custom->failure();
  EXPECT_NE(custom->failure().find("timed out"), std::string::npos) << custom->failure();
  EXPECT_THROW(custom->throw_if_failed(), DeviceError);
  cuda_check(cudaSetDevice(0), "cudaSetDevice");
  EXPECT_THROW(group->rank(0).allreduce(buf.p, buf.p, kStallCount, DType::bf16, stream.s), DeviceError);
}

// Warm-up on both ranks with the stalled call's size: NCCL sets up its connections here, so
// the stalled call below only enqueues its kernel (its host side never waits for rank 1).
void warm_up_both_ranks(CommGroup& group, const std::vector<std::unique_ptr<DeviceBytes>>& bufs,
                        const std::vector<std::unique_ptr<Stream>>& streams) {
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      try {
        cuda_check(cudaSetDevice(r), "cudaSetDevice");
        cuda_check(cudaMemset(bufs[r]->p, 0, 2 * kStallCount), "cudaMemset");
        group.rank(r).allreduce(bufs[r]->p, bufs[r]->p, kStallCount, DType::bf16, streams[r]->s);
        cuda_check(cudaStreamSynchronize(streams[r]->s), "cudaStreamSynchronize (warm-up)");
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(errors[r], "") << "warm-up, rank " << r;
}

// What rank 0's stalled nccl allreduce saw: how long it waited, its error, and how its stream
// came back after the abort (cudaErrorNotReady: not within 20 s).
struct StalledCall {
  double waited = -1;
  std::string error;
  cudaError_t drained = cudaErrorNotReady;
};

// Rank 0 alone allreduces under the watchdog, then waits (bounded) for its stream.
StalledCall stall_rank0(CommGroup& group, Watchdog& watchdog, DeviceBytes& buf, Stream& stream) {
  StalledCall call;
  std::thread rank0([&] {
    cudaEvent_t done = nullptr;
    try {
      cuda_check(cudaSetDevice(0), "cudaSetDevice");
      cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
      watchdog.arm(0, 0, {WatchedOp{done, "the stalled nccl allreduce"}}, "the stall test", 0);
      const auto start = Clock::now();
      try {
        group.rank(0).allreduce(buf.p, buf.p, kStallCount, DType::bf16, stream.s);
        cuda_check(cudaEventRecord(done, stream.s), "cudaEventRecord");
        watchdog.progress(0, 1);
        watchdog.wait(0, done);
      } catch (const std::exception& e) {
        call.error = e.what();
      }
      call.waited = seconds_since(start);
      // The aborted kernel must hand the stream back; poll (bounded) rather than block.
      const auto drain_start = Clock::now();
      while ((call.drained = cudaStreamQuery(stream.s)) == cudaErrorNotReady && seconds_since(drain_start) < 20)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } catch (const std::exception& e) {
      call.error = std::string("test setup: ") + e.what();
    }
    if (done != nullptr) cudaEventDestroy(done);
  });
  rank0.join();
  return call;
}

// nccl: NCCL has no timeout of its own; the backend's Watchdog (as the replay runs it) aborts
// the communicator after the timeout, which makes the stuck NCCL kernel return.
void check_nccl_stall_aborts() {
  std::unique_ptr<CommGroup> group = create_comm_group(stall_config("nccl"));
  auto* nccl = dynamic_cast<NcclCommGroup*>(group.get());
  ASSERT_NE(nccl, nullptr);
  std::vector<std::unique_ptr<DeviceBytes>> bufs;
  std::vector<std::unique_ptr<Stream>> streams;
  for (int r = 0; r < kRanks; ++r) {
    bufs.push_back(std::make_unique<DeviceBytes>(r, 2 * kStallCount));
    streams.push_back(std::make_unique<Stream>(r));
  }
  ASSERT_NO_FATAL_FAILURE(warm_up_both_ranks(*group, bufs, streams));

  Watchdog watchdog(kRanks, kStallTimeout, [&group] { group->abort(); }, [nccl] { return nccl->async_error(); });
  const StalledCall call = stall_rank0(*group, watchdog, *bufs[0], *streams[0]);
  fmt::print("STALL strategy=nccl aborted_after_s={:.3f}\n", call.waited);
  fmt::print("STALL strategy=nccl stream returned after the abort: {}\n", cudaGetErrorName(call.drained));
  std::fflush(stdout);
  EXPECT_NE(call.error, "") << "rank 0's stalled allreduce reported no error";
  EXPECT_TRUE(watchdog.fired());
  const std::string why = watchdog.message();
  EXPECT_NE(why.find("did not complete within"), std::string::npos) << why << " / " << call.error;
  EXPECT_NE(why.find("rank 0"), std::string::npos) << why;
  EXPECT_GE(call.waited, 0.5 * kStallTimeout);
  EXPECT_LT(call.waited, kStallTimeout + 20.0);
  EXPECT_NE(call.drained, cudaErrorNotReady) << "the aborted NCCL kernel did not return within 20 s";
}

// A fatal failure of the oneshot part ends the test before the nccl part.
TEST(Stress, StalledRankAbortsWithinTimeout) {
  if (gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs";
  ASSERT_NO_FATAL_FAILURE(check_oneshot_stall_aborts());
  check_nccl_stall_aborts();
}

}  // namespace
}  // namespace eaglesim::cuda
