// Correctness of our allreduce kernels (kernels/, src/cuda/comm/custom_comm.*) on real GPUs.
// Random data (never zeros), outputs poisoned with NaN before every call, results compared with
// a CPU reference: exact strategies must match, BITWISE, the fp32 sum in rank order 0..N-1
// rounded to the dtype (what the kernels promise), quant must be within the fp8 bound, and every
// rank must hold bitwise-identical bytes. Failures are counted (#wrong), not just flagged.
// EAGLESIM_TEST_QUICK=1 trims the sizes (for compute-sanitizer runs);
// EAGLESIM_TEST_TIMEOUT_S sets the peer-wait timeout (default 20 s).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "cuda/comm/custom_comm.hpp"
#include "cuda/comm/nccl_comms.hpp"

namespace eaglesim::cuda {
namespace {

#define SKIP_WITHOUT_2_GPUS()                                                \
  int gpu_count_ = 0;                                                        \
  if (cudaGetDeviceCount(&gpu_count_) != cudaSuccess || gpu_count_ < 2) {    \
    GTEST_SKIP() << "needs 2 GPUs";                                          \
  }

void ok(cudaError_t rc) { ASSERT_EQ(rc, cudaSuccess) << cudaGetErrorString(rc); }

bool quick() { return std::getenv("EAGLESIM_TEST_QUICK") != nullptr; }
double timeout_s() {
  const char* v = std::getenv("EAGLESIM_TEST_TIMEOUT_S");
  return v ? std::atof(v) : 20.0;
}
int rank_count() {
  int n = 0;
  cudaGetDeviceCount(&n);
  return n >= 8 ? 8 : n >= 4 ? 4 : 2;
}


// Host-side conversions, bit-exact with the device's round-to-nearest-even.
float to_f(DType t, const unsigned char* p) {
  if (t == DType::bf16) { __nv_bfloat16 v; std::memcpy(&v, p, 2); return __bfloat162float(v); }
  if (t == DType::fp16) { __half v; std::memcpy(&v, p, 2); return __half2float(v); }
  float v; std::memcpy(&v, p, 4); return v;
}
void from_f(DType t, float f, unsigned char* p) {
  if (t == DType::bf16) { __nv_bfloat16 v = __float2bfloat16_rn(f); std::memcpy(p, &v, 2); }
  else if (t == DType::fp16) { __half v = __float2half_rn(f); std::memcpy(p, &v, 2); }
  else std::memcpy(p, &f, 4);
}

using Bytes = std::vector<unsigned char>;

Bytes random_bytes(DType t, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  Bytes b(count * element_bytes(t));
  for (std::size_t i = 0; i < count; ++i) from_f(t, dist(rng), b.data() + i * element_bytes(t));
  return b;
}

// A device allocation on one GPU holding `bytes` plus slack so tests can use offset pointers.
struct DevBuf {
  int device = 0;
  unsigned char* base = nullptr;
  std::size_t bytes = 0;
  DevBuf(int d, std::size_t b) : device(d), bytes(b) {
    cudaSetDevice(d);
    EXPECT_EQ(cudaMalloc(&base, b + 64), cudaSuccess);
  }
  ~DevBuf() {
    cudaSetDevice(device);
    cudaFree(base);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

struct Rig {
  int n = 2;
  std::vector<cudaStream_t> streams;
  explicit Rig(int ranks) : n(ranks) {
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      cudaStream_t s;
      EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
      streams.push_back(s);
    }
  }
  ~Rig() {
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      cudaStreamDestroy(streams[r]);
    }
  }
  void sync() {
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      EXPECT_EQ(cudaStreamSynchronize(streams[r]), cudaSuccess);
    }
  }
};

std::unique_ptr<CustomCommGroup> make_group(const std::string& strategy, int n, std::size_t max_bytes,
                                            double timeout = timeout_s(), const FusedKernelOptions& fused = {}) {
  CommGroupConfig c;
  c.strategy = strategy;
  c.ranks = n;
  c.max_bytes = max_bytes;
  c.timeout_s = timeout;
  c.fused = fused;
  return make_custom_comm_group(c);
}

// The fused kernel's ways to meet split rows (FusedKernelOptions): the default pulls, then syncs
// the row's blocks through the global-memory rendezvous.
FusedKernelOptions fused_options(std::size_t chunk_units, bool push, bool cluster) {
  FusedKernelOptions o;
  o.chunk_units = chunk_units;
  o.push = push;
  o.cluster = cluster;
  return o;
}

bool exact(const std::string& s) { return s != "quant"; }

// #wrong of one allreduce: outputs[r] against the CPU reference of inputs, + cross-rank bytes.
std::int64_t count_wrong(const std::string& strategy, DType t, const std::vector<Bytes>& in,
                         const std::vector<Bytes>& out, std::size_t count, bool via_nccl = false) {
  const std::size_t e = element_bytes(t);
  const int n = static_cast<int>(in.size());
  std::int64_t wrong = 0;
  std::vector<double> amax_sum((count + 127) / 128, 0.0);
  for (int r = 0; r < n; ++r) {
    std::vector<double> amax(amax_sum.size(), 0.0);
    for (std::size_t i = 0; i < count; ++i)
      amax[i / 128] = std::max(amax[i / 128], std::fabs(static_cast<double>(to_f(t, in[r].data() + i * e))));
    for (std::size_t g = 0; g < amax.size(); ++g) amax_sum[g] += amax[g];
  }
  for (std::size_t i = 0; i < count; ++i) {
    float acc = 0.f;  // the kernels' promise: fp32, rank order 0..n-1
    double ref = 0, abs_sum = 0;
    for (int r = 0; r < n; ++r) {
      const float v = to_f(t, in[r].data() + i * e);
      acc += v;
      ref += v;
      abs_sum += std::fabs(v);
    }
    unsigned char want[4];
    from_f(t, acc, want);
    for (int r = 0; r < n; ++r) {
      const unsigned char* got = out[r].data() + i * e;
      const double g = to_f(t, got);
      if (via_nccl) {
        const double u = t == DType::bf16 ? 1.0 / 128 : t == DType::fp16 ? 1.0 / 1024 : 1e-6;
        if (!(std::fabs(g - ref) <= n * u * abs_sum)) ++wrong;
      } else if (exact(strategy)) {
        if (std::memcmp(got, want, e) != 0) ++wrong;
      } else {
        const double u = t == DType::bf16 ? 1.0 / 256 : t == DType::fp16 ? 1.0 / 2048 : 1e-7;
        if (!(std::fabs(g - ref) <= amax_sum[i / 128] / 16.0 + u * std::fabs(ref) + 1e-6)) ++wrong;
      }
      if (r > 0 && std::memcmp(got, out[0].data() + i * e, e) != 0) ++wrong;
    }
  }
  return wrong;
}

// One allreduce of `count` elements on every rank, pointers offset by `offset` elements.
std::int64_t run_once(CustomCommGroup& g, Rig& rig, const std::string& s, DType t, std::size_t count,
                      std::size_t offset, std::uint64_t seed, bool in_place = false) {
  const std::size_t e = element_bytes(t), bytes = count * e;
  std::vector<std::unique_ptr<DevBuf>> din, dout;
  std::vector<Bytes> in, out(rig.n, Bytes(bytes));
  for (int r = 0; r < rig.n; ++r) {
    in.push_back(random_bytes(t, count, seed * 97 + r));
    din.push_back(std::make_unique<DevBuf>(r, bytes + offset * e));
    dout.push_back(std::make_unique<DevBuf>(r, bytes + offset * e));
    cudaSetDevice(r);
    EXPECT_EQ(cudaMemcpy(din[r]->base + offset * e, in[r].data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemset(dout[r]->base, 0xFF, bytes + offset * e), cudaSuccess);  // NaN poison
  }
  {
    NcclGroup group;
    for (int r = 0; r < rig.n; ++r) {
      cudaSetDevice(r);
      unsigned char* src = din[r]->base + offset * e;
      unsigned char* dst = in_place ? src : dout[r]->base + offset * e;
      g.rank(r).allreduce(src, dst, count, t, rig.streams[r]);
    }
  }
  rig.sync();
  for (int r = 0; r < rig.n; ++r) {
    cudaSetDevice(r);
    const unsigned char* src = (in_place ? din[r]->base : dout[r]->base) + offset * e;
    EXPECT_EQ(cudaMemcpy(out[r].data(), src, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return count_wrong(s, t, in, out, count, bytes > g.rank(0).max_bytes());
}

// Every strategy the table runs on one of our kernels (reference, oneshot, oneshot_push, twoshot,
// fused, quant, and any registered beside them).
std::vector<std::string> own_kernel_strategies() {
  std::vector<std::string> out;
  for (const StrategyFacts& f : strategy_table())
    if (f.runtime == StrategyRuntime::own_kernel) out.emplace_back(f.name);
  return out;
}
const std::vector<std::string> kStrategies = own_kernel_strategies();

TEST(CustomAllreduce, EveryStrategyDtypeAndSize) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  std::vector<std::size_t> counts = {1, 3, 8, 13, 500, 21504, 500001, (1u << 20) + 7};
  if (quick()) counts = {1, 3, 13, 21504, 70001};
  for (const std::string& s : kStrategies) {
    auto g = make_group(s, n, 8u << 20);
    for (DType t : {DType::bf16, DType::fp16, DType::fp32}) {
      for (std::size_t count : counts) {
        for (std::size_t offset : {0, 1}) {
          if (offset == 1 && count != 13 && count != 500001 && count != 70001) continue;
          const std::int64_t wrong = run_once(*g, rig, s, t, count, offset, count + offset);
          EXPECT_EQ(wrong, 0) << s << " " << to_string(t) << " count " << count << " offset " << offset;
        }
      }
    }
    EXPECT_EQ(g->failure(), "");
  }
}

TEST(CustomAllreduce, InPlace) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  for (const std::string& s : kStrategies) {
    auto g = make_group(s, n, 1u << 20);
    EXPECT_EQ(run_once(*g, rig, s, DType::bf16, 21504, 0, 5, true), 0) << s;
    EXPECT_EQ(run_once(*g, rig, s, DType::bf16, 100003, 0, 6, true), 0) << s;
  }
}

// Many calls in a row without a host sync, each on its own buffers with its own data: a rank
// running ahead into the next call must not corrupt what a slow peer still reads.
TEST(CustomAllreduce, BackToBackCallsAndGraphReplays) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  const int calls = quick() ? 6 : 48;
  const std::size_t counts[] = {21504, 300007};
  for (const std::string& s : kStrategies) {
    auto g = make_group(s, n, 1u << 20);
    for (std::size_t count : counts) {
      const DType t = DType::bf16;
      const std::size_t bytes = count * 2;
      std::vector<std::vector<std::unique_ptr<DevBuf>>> din(calls), dout(calls);
      for (int c = 0; c < calls; ++c)
        for (int r = 0; r < n; ++r) {
          din[c].push_back(std::make_unique<DevBuf>(r, bytes));
          dout[c].push_back(std::make_unique<DevBuf>(r, bytes));
        }
      auto upload = [&](std::uint64_t seed, std::vector<std::vector<Bytes>>& in) {
        in.assign(calls, {});
        for (int c = 0; c < calls; ++c)
          for (int r = 0; r < n; ++r) {
            in[c].push_back(random_bytes(t, count, seed + c * 31 + r));
            cudaSetDevice(r);
            EXPECT_EQ(cudaMemcpy(din[c][r]->base, in[c][r].data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
            EXPECT_EQ(cudaMemset(dout[c][r]->base, 0xFF, bytes), cudaSuccess);
          }
      };
      auto check = [&](const std::vector<std::vector<Bytes>>& in, const std::string& what) {
        std::int64_t wrong = 0;
        for (int c = 0; c < calls; ++c) {
          std::vector<Bytes> out(n, Bytes(bytes));
          for (int r = 0; r < n; ++r) {
            cudaSetDevice(r);
            EXPECT_EQ(cudaMemcpy(out[r].data(), dout[c][r]->base, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
          }
          wrong += count_wrong(s, t, in[c], out, count);
        }
        EXPECT_EQ(wrong, 0) << s << " count " << count << " " << what;
      };
      auto enqueue = [&] {
        for (int c = 0; c < calls; ++c)
          for (int r = 0; r < n; ++r) {
            cudaSetDevice(r);
            g->rank(r).allreduce(din[c][r]->base, dout[c][r]->base, count, t, rig.streams[r]);
          }
      };
      std::vector<std::vector<Bytes>> in;
      upload(1000, in);
      enqueue();
      rig.sync();
      check(in, "back-to-back");

      // The same calls captured once per rank and replayed: epochs live on the device.
      std::vector<cudaGraphExec_t> execs(n);
      for (int r = 0; r < n; ++r) {
        cudaSetDevice(r);
        ok(cudaStreamBeginCapture(rig.streams[r], cudaStreamCaptureModeRelaxed));
      }
      enqueue();
      for (int r = 0; r < n; ++r) {
        cudaSetDevice(r);
        cudaGraph_t graph;
        ok(cudaStreamEndCapture(rig.streams[r], &graph));
        ok(cudaGraphInstantiate(&execs[r], graph, 0));
        cudaGraphDestroy(graph);
      }
      const int replays = quick() ? 3 : 25;
      for (int rep = 0; rep < replays; ++rep) {
        const bool checked = rep < 2 || rep == replays - 1;
        if (checked) upload(5000 + rep * 7, in);
        for (int r = 0; r < n; ++r) {
          cudaSetDevice(r);
          ok(cudaGraphLaunch(execs[r], rig.streams[r]));
        }
        if (checked) {
          rig.sync();
          check(in, "graph replay " + std::to_string(rep));
        }
      }
      rig.sync();
      for (int r = 0; r < n; ++r) {
        cudaSetDevice(r);
        cudaGraphExecDestroy(execs[r]);
      }
    }
    EXPECT_EQ(g->failure(), "");
  }
}

// One fused call's data on every rank: residual += allreduce(in); normed = rmsnorm(residual) *
// weight. upload() writes fresh random inputs and residual and NaN-poisons `normed`;
// count_wrong() checks against the CPU and across ranks.
struct FusedCall {
  DType t;
  std::size_t tokens, hidden;
  int n;
  std::vector<Bytes> in;
  Bytes residual0, weight;
  std::vector<std::unique_ptr<DevBuf>> din, dres, dw, dnorm;

  FusedCall(DType type, std::size_t rows, std::size_t width, int ranks)
      : t(type), tokens(rows), hidden(width), n(ranks) {
    for (int r = 0; r < n; ++r) {
      din.push_back(std::make_unique<DevBuf>(r, bytes()));
      dres.push_back(std::make_unique<DevBuf>(r, bytes()));
      dw.push_back(std::make_unique<DevBuf>(r, hidden * element_bytes(t)));
      dnorm.push_back(std::make_unique<DevBuf>(r, bytes()));
    }
  }
  std::size_t count() const { return tokens * hidden; }
  std::size_t bytes() const { return count() * element_bytes(t); }

  void upload(std::uint64_t seed) {
    const std::size_t e = element_bytes(t);
    in.clear();
    residual0 = random_bytes(t, count(), seed + 100);
    weight = random_bytes(t, hidden, seed + 200);
    for (int r = 0; r < n; ++r) {
      in.push_back(random_bytes(t, count(), seed * 13 + r));
      cudaSetDevice(r);
      EXPECT_EQ(cudaMemcpy(din[r]->base, in[r].data(), bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(dres[r]->base, residual0.data(), bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(dw[r]->base, weight.data(), hidden * e, cudaMemcpyHostToDevice), cudaSuccess);
      EXPECT_EQ(cudaMemset(dnorm[r]->base, 0xFF, bytes()), cudaSuccess);
    }
  }

  FusedNormArgs args(int r) const {
    FusedNormArgs a;
    a.residual = dres[r]->base;
    a.weight = dw[r]->base;
    a.normed = dnorm[r]->base;
    a.tokens = tokens;
    a.hidden = hidden;
    a.eps = 1e-6f;
    return a;
  }

  // Must be called on a synchronised rig. `exact_residual`: the custom kernels promise the new
  // residual BITWISE: old + (fp32 sum in rank order 0..n-1, rounded to T), rounded to T (not
  // true of the NCCL fallback, whose sum order is NCCL's).
  std::int64_t count_wrong(bool exact_residual) const {
    const std::size_t e = element_bytes(t), b = bytes();
    std::int64_t wrong = 0;
    const double u = t == DType::bf16 ? 1.0 / 128 : t == DType::fp16 ? 1.0 / 1024 : 1e-6;
    std::vector<Bytes> res(n, Bytes(b)), normed(n, Bytes(b));
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      EXPECT_EQ(cudaMemcpy(res[r].data(), dres[r]->base, b, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(normed[r].data(), dnorm[r]->base, b, cudaMemcpyDeviceToHost), cudaSuccess);
      for (std::size_t row = 0; row < tokens; ++row) {
        double ss = 0;
        for (std::size_t h = 0; h < hidden; ++h) {
          const std::size_t i = row * hidden + h;
          double sum = 0, abs_sum = 0;
          float acc = 0.f;
          for (int p = 0; p < n; ++p) {
            const float v = to_f(t, in[p].data() + i * e);
            acc += v;
            sum += v;
            abs_sum += std::fabs(v);
          }
          const double before = to_f(t, residual0.data() + i * e);
          const double want = before + sum, got = to_f(t, res[r].data() + i * e);
          if (exact_residual) {
            unsigned char rounded_sum[4], want_bits[4];
            from_f(t, acc, rounded_sum);
            from_f(t, to_f(t, residual0.data() + i * e) + to_f(t, rounded_sum), want_bits);
            if (std::memcmp(want_bits, res[r].data() + i * e, e) != 0) ++wrong;
          } else if (!(std::fabs(got - want) <= u * (std::fabs(want) + std::fabs(before)) + n * 1.2e-7 * abs_sum)) {
            ++wrong;
          }
          ss += got * got;
        }
        const double inv = 1.0 / std::sqrt(ss / hidden + 1e-6);
        for (std::size_t h = 0; h < hidden; ++h) {
          const std::size_t i = row * hidden + h;
          const double want = to_f(t, res[r].data() + i * e) * inv * to_f(t, weight.data() + h * e);
          const double got = to_f(t, normed[r].data() + i * e);
          if (!(std::fabs(got - want) <= u * std::fabs(want) + 1e-5)) ++wrong;
        }
      }
      if (r > 0) {
        for (std::size_t i = 0; i < count(); ++i)
          if (std::memcmp(res[r].data() + i * e, res[0].data() + i * e, e) ||
              std::memcmp(normed[r].data() + i * e, normed[0].data() + i * e, e))
            ++wrong;
      }
    }
    return wrong;
  }
};

// One fused call, one host thread per rank as the replay backend drives them: the NCCL fallback
// of the fused strategy enqueues a kernel after its ncclAllReduce, which an NCCL group (needed
// when one thread drives several NCCL ranks) would reorder.
// `normed0`, when given, receives rank 0's normed output (to compare two groups bitwise).
std::int64_t run_fused(CustomCommGroup& g, Rig& rig, DType t, std::size_t tokens, std::size_t hidden,
                       std::uint64_t seed, Bytes* normed0 = nullptr) {
  FusedCall call(t, tokens, hidden, rig.n);
  call.upload(seed);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(rig.n);
  for (int r = 0; r < rig.n; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      try {
        g.rank(r).allreduce_residual_rmsnorm(call.din[r]->base, call.args(r), t, rig.streams[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int r = 0; r < rig.n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  rig.sync();
  const bool via_nccl = tokens * ((hidden * element_bytes(t) + 15) / 16 * 16) > g.rank(0).max_bytes();
  if (normed0 != nullptr) {
    normed0->assign(call.bytes(), 0);
    cudaSetDevice(0);
    EXPECT_EQ(cudaMemcpy(normed0->data(), call.dnorm[0]->base, call.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return call.count_wrong(!via_nccl);
}

TEST(CustomAllreduce, FusedResidualRmsNorm) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  auto g = make_group("fused", n, 4u << 20);
  EXPECT_TRUE(g->rank(0).supports_fused());
  struct Shape { std::size_t tokens, hidden; };
  std::vector<Shape> shapes = {{1, 7168}, {3, 7168}, {7, 1000}, {2, 13}, {130, 4096}, {5, 8191}, {2, 20000}};
  if (quick()) shapes = {{3, 7168}, {2, 13}, {130, 64}, {1, 20000}};
  for (DType t : {DType::bf16, DType::fp16, DType::fp32})
    for (const auto& s : shapes)
      EXPECT_EQ(run_fused(*g, rig, t, s.tokens, s.hidden, s.tokens * 7 + s.hidden), 0)
          << to_string(t) << " " << s.tokens << "x" << s.hidden;
  // Oversize: NCCL allreduce + the separate residual/RMSNorm kernel.
  auto small = make_group("fused", n, 16u << 10);
  EXPECT_EQ(run_fused(*small, rig, DType::bf16, 3, 7168, 99), 0) << "fallback";
  EXPECT_EQ(g->failure(), "");
}

// Whether every GPU of the test's groups is sm_90+ (cluster row sync expected by default;
// assumes the build holds sm_90 code, as CMAKE_CUDA_ARCHITECTURES=90 does).
bool all_sm90(int n) {
  for (int d = 0; d < n; ++d) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess || major < 9) return false;
  }
  return true;
}

// Few long rows are split over several blocks. Three groups, one per way the split rows meet:
// pull with a row sync of the blocks' partial sums of squares through the global-memory
// rendezvous (the default) or thread-block clusters (FusedKernelOptions::cluster, sm_90+), and push
// (FusedKernelOptions::push: chunks pushed to every rank, each block reads the whole row locally
// and computes the row's sum of squares itself). Every split target: default (256 units), none (one
// block per row, the pre-split kernels), 32 (as many chunks as the 16-block cap allows: up to
// 16 per row, so clusters of <= 8 and the rendezvous for the rest; push while the whole row fits
// 4 units per thread of a 512-thread block), 1000 and 2048 (chunks wider than one block: pull
// with 2 and 4 units per thread, push not possible); rows 1..4 x 7168 / 8192 and odd widths
// (partial last unit, unaligned rows); 5 and 8 rows (chunks cut to fit the cap), 40 rows (no
// split); 1 x 20000 at the default target is 10 chunks (rendezvous even in the cluster group;
// too wide for push, which then pulls). Each call is checked against the CPU and across ranks,
// and the two pull groups' normed outputs must be bitwise identical (same fixed-order sum of
// the partials).
TEST(CustomAllreduce, FusedSplitRows) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  struct Shape { std::size_t tokens, hidden; };
  std::vector<Shape> shapes;
  for (std::size_t tokens = 1; tokens <= 4; ++tokens)
    for (std::size_t hidden : {7168, 8192, 7167, 20000}) shapes.push_back({tokens, hidden});
  shapes.push_back({2, 4099});
  shapes.push_back({5, 7168});
  shapes.push_back({8, 7168});
  shapes.push_back({40, 7168});
  if (quick()) shapes = {{1, 7168}, {3, 7168}, {4, 8192}, {2, 7167}, {1, 20000}};
  for (const std::size_t target : {kFusedChunkUnits, std::size_t{0}, std::size_t{32}, std::size_t{1000},
                                    std::size_t{2048}}) {
    const std::unique_ptr<CustomCommGroup> pushed =
        make_group("fused", n, 4u << 20, timeout_s(), fused_options(target, true, false));
    const std::unique_ptr<CustomCommGroup> clustered =
        make_group("fused", n, 4u << 20, timeout_s(), fused_options(target, false, true));
    // The default: pull, then the rendezvous.
    const std::unique_ptr<CustomCommGroup> rendezvous =
        make_group("fused", n, 4u << 20, timeout_s(), fused_options(target, false, false));
    EXPECT_TRUE(pushed->fused_push());
    EXPECT_FALSE(clustered->fused_push());
    EXPECT_FALSE(rendezvous->fused_push());
    EXPECT_EQ(clustered->fused_row_clusters(), all_sm90(n)) << "built without sm_90 code?";
    EXPECT_FALSE(rendezvous->fused_row_clusters());
    for (DType t : {DType::bf16, DType::fp16, DType::fp32}) {
      if (quick() && t == DType::fp16) continue;
      for (const auto& s : shapes) {
        const std::uint64_t seed = s.tokens * 7 + s.hidden;
        const std::string what = "target " + std::to_string(target) + " " + to_string(t) + " " +
                                 std::to_string(s.tokens) + "x" + std::to_string(s.hidden);
        Bytes by_cluster, by_rendezvous;
        EXPECT_EQ(run_fused(*pushed, rig, t, s.tokens, s.hidden, seed, nullptr), 0) << what << " push";
        EXPECT_EQ(run_fused(*clustered, rig, t, s.tokens, s.hidden, seed, &by_cluster), 0) << what << " cluster";
        EXPECT_EQ(run_fused(*rendezvous, rig, t, s.tokens, s.hidden, seed, &by_rendezvous), 0)
            << what << " rendezvous";
        EXPECT_TRUE(by_cluster == by_rendezvous) << what << ": cluster and rendezvous normed outputs differ";
      }
    }
    EXPECT_EQ(pushed->failure(), "") << "target " << target;
    EXPECT_EQ(clustered->failure(), "") << "target " << target;
    EXPECT_EQ(rendezvous->failure(), "") << "target " << target;
  }
  const FusedKernelOptions push_on = fused_options(kFusedChunkUnits, true, false);
  const FusedKernelOptions cluster_on = fused_options(kFusedChunkUnits, false, true);
  EXPECT_TRUE(make_group("fused", n, 1u << 20, timeout_s(), push_on)->fused_push());
  EXPECT_FALSE(make_group("fused", n, 1u << 20)->fused_push());
  EXPECT_FALSE(make_group("oneshot", n, 1u << 20, timeout_s(), push_on)->fused_push());
  EXPECT_EQ(make_group("fused", n, 1u << 20, timeout_s(), cluster_on)->fused_row_clusters(), all_sm90(n));
  EXPECT_FALSE(make_group("fused", n, 1u << 20)->fused_row_clusters());
  EXPECT_FALSE(make_group("oneshot", n, 1u << 20, timeout_s(), cluster_on)->fused_row_clusters());
}

// A fused split call whose peers never arrive, pushed and under both pull row syncs: every
// block's cross-GPU (row) barrier times out. The cluster blocks must still pass both cluster
// barriers together (no block may leave its cluster early), so the call ends after the timeout
// instead of hanging.
TEST(CustomAllreduce, FusedSplitDeadPeerTimesOut) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  for (const char* sync : {"push", "cluster", "rendezvous"}) {
    const bool push = std::string(sync) == "push", cluster = std::string(sync) == "cluster";
    auto g = make_group("fused", n, 1u << 20, 0.3, fused_options(kFusedChunkUnits, push, cluster));
    FusedCall call(DType::bf16, 3, 7168, n);  // 3 rows x 4 chunks
    call.upload(17);
    cudaSetDevice(0);
    const auto start = std::chrono::steady_clock::now();
    g->rank(0).allreduce_residual_rmsnorm(call.din[0]->base, call.args(0), DType::bf16, rig.streams[0]);
    rig.sync();
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(waited, 10.0) << sync;
    EXPECT_NE(g->failure().find("timed out"), std::string::npos) << sync << ": " << g->failure();
    EXPECT_THROW(
        g->rank(0).allreduce_residual_rmsnorm(call.din[0]->base, call.args(0), DType::bf16, rig.streams[0]),
        DeviceError)
        << sync;
  }
}

// Back-to-back fused calls without a host sync, shapes alternating between split (3 x 7168,
// 1 x 8192, 2 x 7167) and unsplit (130 x 64, 4 x 1024) grids, each call on its own buffers;
// then the same calls captured in one graph per rank and replayed with fresh data. A rank that
// runs ahead, a split grid following a smaller one (epoch entries), and the row sync (cluster
// launches inside a graph; the rendezvous words, never reset) must all stay consistent. Once per
// way split rows meet (push; else pull, then the row sync: clusters on sm_90+, or the
// rendezvous).
void fused_back_to_back_and_graph_replays(bool push, bool cluster) {
  const int n = rank_count();
  Rig rig(n);
  const std::unique_ptr<CustomCommGroup> g =
      make_group("fused", n, 1u << 20, timeout_s(), fused_options(kFusedChunkUnits, push, cluster));
  SCOPED_TRACE(std::string("push=") + (push ? "yes" : "no") + " cluster=" + (cluster ? "yes" : "no"));
  struct Shape { std::size_t tokens, hidden; };
  const Shape cycle[] = {{3, 7168}, {130, 64}, {1, 8192}, {2, 7167}, {4, 1024}, {3, 7168}};
  const int calls = quick() ? 6 : 30;
  std::vector<std::unique_ptr<FusedCall>> work;
  for (int c = 0; c < calls; ++c) {
    const Shape& s = cycle[c % 6];
    work.push_back(std::make_unique<FusedCall>(DType::bf16, s.tokens, s.hidden, n));
  }
  auto upload = [&](std::uint64_t seed) {
    for (int c = 0; c < calls; ++c) work[c]->upload(seed + c * 31);
  };
  auto enqueue = [&] {
    for (int c = 0; c < calls; ++c)
      for (int r = 0; r < n; ++r) {
        cudaSetDevice(r);
        g->rank(r).allreduce_residual_rmsnorm(work[c]->din[r]->base, work[c]->args(r), DType::bf16, rig.streams[r]);
      }
  };
  auto check = [&](const std::string& what) {
    std::int64_t wrong = 0;
    for (int c = 0; c < calls; ++c) wrong += work[c]->count_wrong(true);
    EXPECT_EQ(wrong, 0) << what;
  };
  upload(700);
  enqueue();
  rig.sync();
  check("back-to-back");

  std::vector<cudaGraphExec_t> execs(n);
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(r);
    ok(cudaStreamBeginCapture(rig.streams[r], cudaStreamCaptureModeRelaxed));
  }
  enqueue();
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(r);
    cudaGraph_t graph;
    ok(cudaStreamEndCapture(rig.streams[r], &graph));
    ok(cudaGraphInstantiate(&execs[r], graph, 0));
    cudaGraphDestroy(graph);
  }
  const int replays = quick() ? 3 : 20;
  for (int rep = 0; rep < replays; ++rep) {
    // The residual is updated in place: re-upload before every checked replay; unchecked
    // replays just keep accumulating (and keep the epochs moving).
    const bool checked = rep < 2 || rep == replays - 1;
    if (checked) {
      rig.sync();  // the uploads (legacy stream) must not race a replay still updating residuals
      upload(9000 + rep * 7);
    }
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      ok(cudaGraphLaunch(execs[r], rig.streams[r]));
    }
    if (checked) {
      rig.sync();
      check("graph replay " + std::to_string(rep));
    }
  }
  rig.sync();
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(r);
    cudaGraphExecDestroy(execs[r]);
  }
  EXPECT_EQ(g->failure(), "");
}

TEST(CustomAllreduce, FusedBackToBackAndGraphReplays) {
  SKIP_WITHOUT_2_GPUS();
  fused_back_to_back_and_graph_replays(false, false);
  fused_back_to_back_and_graph_replays(true, false);
  fused_back_to_back_and_graph_replays(false, true);
}

TEST(CustomAllreduce, OversizeFallsBackToNccl) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  for (const char* s : {"oneshot", "twoshot"}) {
    auto g = make_group(s, n, 64u << 10);
    EXPECT_EQ(run_once(*g, rig, s, DType::bf16, 100001, 0, 3), 0) << s;
    EXPECT_EQ(run_once(*g, rig, s, DType::bf16, 1000, 0, 4), 0) << s << " (custom path after fallback)";
  }
}

// A peer that never arrives: the waiting kernel gives up after the timeout instead of hanging.
TEST(CustomAllreduce, DeadPeerTimesOutWithError) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  auto g = make_group("oneshot", n, 1u << 20, 0.3);
  DevBuf buf(0, 4096);
  cudaSetDevice(0);
  const auto start = std::chrono::steady_clock::now();
  g->rank(0).allreduce(buf.base, buf.base, 2048, DType::bf16, rig.streams[0]);
  rig.sync();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 10.0);
  EXPECT_NE(g->failure().find("timed out"), std::string::npos) << g->failure();
  EXPECT_THROW(g->rank(0).allreduce(buf.base, buf.base, 2048, DType::bf16, rig.streams[0]), DeviceError);
}

TEST(CustomAllreduce, AbortReleasesWaitingKernel) {
  SKIP_WITHOUT_2_GPUS();
  const int n = rank_count();
  Rig rig(n);
  auto g = make_group("twoshot", n, 1u << 20, 600.0);
  DevBuf buf(0, 4096);
  cudaSetDevice(0);
  g->rank(0).allreduce(buf.base, buf.base, 2048, DType::bf16, rig.streams[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  g->abort();
  rig.sync();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_NE(g->failure().find("aborted"), std::string::npos) << g->failure();
}

TEST(CustomAllreduce, RejectsBadConfig) {
  SKIP_WITHOUT_2_GPUS();
  EXPECT_THROW(make_group("ring", 2, 1 << 20), InputError);
  EXPECT_THROW(make_group("oneshot", 3, 1 << 20), InputError);
  // Strategies that are not ours by the strategy table: NCCL's and the ones without a kernel.
  EXPECT_THROW(make_group(nccl_strategy(), 2, 1 << 20), InputError);
  EXPECT_THROW(make_group(lower_bound_strategy(), 2, 1 << 20), InputError);
  EXPECT_EQ(strategy_facts("twoshot").runtime, StrategyRuntime::own_kernel);
  EXPECT_TRUE(uses_p2p_kernels("twoshot"));
  EXPECT_FALSE(uses_p2p_kernels(nccl_strategy()));
}

}  // namespace
}  // namespace eaglesim::cuda
