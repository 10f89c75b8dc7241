// The replay's memory-bound kernels (kernels/row_norm.cuh, kernels/pointwise_bf16.cuh, launched
// through src/cuda/ops/replay_kernels.cu) against CPU references on the same bf16 inputs: RMSNorm,
// the fused residual add + RMSNorm (both of its outputs), residual add and SiLU * mul, over
// packed widths (16-byte loads), widths that are not a multiple of 8 and unaligned pointers
// (scalar loads), one row, a few rows and many rows, and each launch geometry the planner picks
// (one warp per row, one block per row with 1, 2 and 4 vectors per thread). Inputs are fresh
// random values drawn on the host, outputs poisoned with NaN before every launch, and the
// elements just past every output are checked to be untouched. ElementwisePlan.* test the
// host planner and need no GPU; ElementwiseKernels.* skip cleanly without one. The early start
// (programmatic dependent launch) is checked behind a kernel that writes the inputs late.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "cuda/ops/elementwise_plan.hpp"
#include "cuda/ops/replay_kernels.hpp"
#include "gpu_skip.hpp"
#include "host_bf16.hpp"
#include "slow_writer.hpp"

namespace eaglesim::cuda {
namespace {

// EAGLESIM_TEST_QUICK=1 (the sanitizer runs) leaves out the many-row shapes.
bool quick() { return std::getenv("EAGLESIM_TEST_QUICK") != nullptr; }

constexpr float kEps = 1e-5f;
constexpr std::uint16_t kPoison = 0xFFFF;  // a bf16 NaN
// Elements of slack after every buffer (and before, for the unaligned cases): a write past an
// output's end shows as a changed poison value.
constexpr std::size_t kSlack = 64;

using test::from_bf;
using test::to_bf;

std::vector<std::uint16_t> random_bf16(std::size_t n, std::uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<std::uint16_t> v(n);
  for (auto& e : v) e = to_bf(dist(rng));
  return v;
}

// A device buffer of `n` bf16 elements at element offset `offset` (1: not 16-byte aligned) inside
// an allocation with kSlack poisoned elements on either side.
class Buf {
 public:
  Buf(std::size_t n, std::size_t offset) : n_(n), offset_(offset) {
    EXPECT_EQ(cudaMalloc(&base_, (n + offset + 2 * kSlack) * 2), cudaSuccess);
    poison_all();
  }
  ~Buf() { cudaFree(base_); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  std::uint16_t* ptr() const { return base_ + kSlack + offset_; }
  void upload(const std::vector<std::uint16_t>& h) {
    ASSERT_EQ(h.size(), n_);
    ASSERT_EQ(cudaMemcpy(ptr(), h.data(), n_ * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  void poison_all() {
    const std::vector<std::uint16_t> p(n_ + offset_ + 2 * kSlack, kPoison);
    ASSERT_EQ(cudaMemcpy(base_, p.data(), p.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<std::uint16_t> download() const {
    std::vector<std::uint16_t> h(n_);
    EXPECT_EQ(cudaMemcpy(h.data(), ptr(), n_ * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  // The slack after the buffer is still poison (nothing wrote past the end).
  bool tail_untouched() const {
    std::vector<std::uint16_t> t(kSlack);
    EXPECT_EQ(cudaMemcpy(t.data(), ptr() + n_, kSlack * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    return std::all_of(t.begin(), t.end(), [](std::uint16_t v) { return v == kPoison; });
  }

 private:
  std::uint16_t* base_ = nullptr;
  std::size_t n_, offset_;
};

struct Compare {
  double rel_l2 = 0, worst = 0;  // worst: max |got - ref| / (max |ref| over its row)
  std::size_t nan = 0;
};

// Rows of `width`; every row normalised by its own largest reference value, so that one wrong
// element of any row shows.
Compare compare(const std::vector<std::uint16_t>& got, const std::vector<double>& ref, std::size_t width) {
  Compare c;
  double num = 0, den = 0;
  for (std::size_t row = 0; row * width < ref.size(); ++row) {
    double peak = 1e-30;
    for (std::size_t i = row * width; i < (row + 1) * width; ++i) peak = std::max(peak, std::fabs(ref[i]));
    for (std::size_t i = row * width; i < (row + 1) * width; ++i) {
      const double g = from_bf(got[i]);
      if (!std::isfinite(g)) {
        ++c.nan;
        continue;
      }
      num += (g - ref[i]) * (g - ref[i]);
      den += ref[i] * ref[i];
      c.worst = std::max(c.worst, std::fabs(g - ref[i]) / peak);
    }
  }
  c.rel_l2 = std::sqrt(num / std::max(den, 1e-30));
  return c;
}

void expect_close(const Compare& c, const std::string& what) {
  EXPECT_EQ(c.nan, 0u) << what;
  EXPECT_LT(c.rel_l2, 5e-3) << what;
  EXPECT_LT(c.worst, 2e-2) << what;
}

std::string shape_text(const char* op, int rows, int width, std::size_t offset) {
  std::ostringstream os;
  os << op << " rows=" << rows << " width=" << width << (offset ? " unaligned" : "");
  return os.str();
}

// RMSNorm of x (rows x width, bf16 values) with weight w in double.
std::vector<double> rmsnorm_reference(const std::vector<float>& x, const std::vector<std::uint16_t>& w, int rows,
                                      int width) {
  std::vector<double> ref(x.size());
  for (int t = 0; t < rows; ++t) {
    const std::size_t at = static_cast<std::size_t>(t) * width;
    double ss = 0;
    for (int i = 0; i < width; ++i) ss += double(x[at + i]) * x[at + i];
    const double inv = 1.0 / std::sqrt(ss / width + kEps);
    for (int i = 0; i < width; ++i) ref[at + i] = x[at + i] * inv * from_bf(w[i]);
  }
  return ref;
}

// offset: element offset of every buffer (1: none 16-byte aligned). add: the fused residual add
// + RMSNorm, else the plain RMSNorm. in_place: out is x.
void check_row_norm(bool add, int rows, int width, std::size_t offset = 0, bool in_place = false) {
  const std::string what = shape_text(add ? (in_place ? "add_rmsnorm in place" : "add_rmsnorm") : "rmsnorm", rows,
                                      width, offset);
  SCOPED_TRACE(what);
  const std::size_t n = static_cast<std::size_t>(rows) * width;
  const auto seed = static_cast<std::uint32_t>(rows * 7919 + width + offset);
  const auto hx = random_bf16(n, seed, -2.f, 2.f);
  const auto hr = random_bf16(n, seed + 1, -3.f, 3.f);
  const auto hw = random_bf16(width, seed + 2, 0.5f, 1.5f);
  Buf x(n, offset), r(n, offset), w(width, offset), out(n, offset);
  x.upload(hx);
  r.upload(hr);
  w.upload(hw);
  Buf& y = in_place ? x : out;
  if (add) launch_add_rmsnorm(x.ptr(), r.ptr(), w.ptr(), y.ptr(), rows, width, kEps, nullptr);
  else launch_rmsnorm(x.ptr(), w.ptr(), y.ptr(), rows, width, kEps, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // The norm's input: x, or the residual x + r rounded to bf16 (which the kernel writes back
  // and normalises).
  std::vector<float> in(n);
  std::vector<std::uint16_t> sum(n);
  for (std::size_t i = 0; i < n; ++i) {
    sum[i] = to_bf(from_bf(hx[i]) + from_bf(hr[i]));
    in[i] = add ? from_bf(sum[i]) : from_bf(hx[i]);
  }
  expect_close(compare(y.download(), rmsnorm_reference(in, hw, rows, width), width), what);
  EXPECT_TRUE(y.tail_untouched()) << what << ": wrote past the output";
  if (add) {
    EXPECT_EQ(r.download(), sum) << what << ": the residual is not x + residual rounded to bf16";
    EXPECT_TRUE(r.tail_untouched()) << what << ": wrote past the residual";
  } else {
    EXPECT_EQ(r.download(), hr) << what << ": the plain RMSNorm touched the residual";
  }
}

// Widths of every launch geometry: one warp per row (<= 128 units, V 1/2/4), one block per row
// with V = 1 (<= 1024 units), 2 and 4 (32768, the widest), packed and scalar.
const std::vector<int> kNormWidths = {64, 100, 512, 1000, 1001, 1024, 1536, 4096, 5003, 7168,
                                      8192, 14336, 16384, 25000, 25001, 32768};

TEST(ElementwiseKernels, RmsNormMatchesCpuAcrossWidthsAndRows) {
  SKIP_WITHOUT_GPU();
  for (int width : kNormWidths)
    for (int rows : {1, 3, 64}) check_row_norm(false, rows, width);
  check_row_norm(false, 301, 128);  // one-warp rows: 76 blocks of 4, the last one short
  if (quick()) return;
  for (int rows : {300, 4096}) check_row_norm(false, rows, 4096);
  check_row_norm(false, 4096, 8192);
}

TEST(ElementwiseKernels, FusedAddRmsNormMatchesCpuBothOutputs) {
  SKIP_WITHOUT_GPU();
  for (int width : kNormWidths)
    for (int rows : {1, 3, 64}) check_row_norm(true, rows, width);
  check_row_norm(true, 301, 128);
  if (quick()) return;
  for (int rows : {300, 4096}) check_row_norm(true, rows, 4096);
  check_row_norm(true, 4096, 7168);
  check_row_norm(true, 4096, 8192);
}

TEST(ElementwiseKernels, RowNormsTakeUnalignedPointersAndInPlaceOutput) {
  SKIP_WITHOUT_GPU();
  for (int width : {4096, 1000, 64}) {
    check_row_norm(false, 5, width, 1);
    check_row_norm(true, 5, width, 1);
    check_row_norm(true, 5, width, 0, true);  // SGLang/vLLM write the norm over the input
  }
}

// Each glue kernel launched with early_start right behind a kernel that lets it launch at once
// and writes its inputs (x, the residual, gate_up) only 30 us later: the outputs must be those
// of a plain launch on the written inputs, bit for bit, and nothing past them touched.
TEST(ElementwiseKernels, EarlyStartReadsThePreviousKernelsOutput) {
  SKIP_WITHOUT_GPU();
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  struct Case {
    const char* op;
    int rows, width;
  };
  for (const Case& c : {Case{"rmsnorm", 4, 7168}, Case{"rmsnorm", 64, 1536}, Case{"add_rmsnorm", 4, 7168},
                        Case{"add_rmsnorm", 300, 4096}, Case{"add_rmsnorm", 3, 1000}, Case{"residual_add", 4, 7168},
                        Case{"silu_mul", 4, 2048}, Case{"silu_mul", 64, 1000}}) {
    const std::string what = shape_text(c.op, c.rows, c.width, 0) + " early start";
    SCOPED_TRACE(what);
    const std::string op = c.op;
    const std::size_t n = static_cast<std::size_t>(c.rows) * c.width;
    const std::size_t in_n = op == "silu_mul" ? 2 * n : n;
    const auto hx = random_bf16(in_n, 91 + c.rows, -2.f, 2.f), hr = random_bf16(n, 92 + c.rows, -3.f, 3.f);
    const auto hw = random_bf16(static_cast<std::size_t>(c.width), 93, 0.5f, 1.5f);
    Buf w(static_cast<std::size_t>(c.width), 0);
    w.upload(hw);
    // out and residual after a plain launch on the final inputs, then after an early one
    std::vector<std::uint16_t> out[2], res[2];
    for (int early = 0; early < 2; ++early) {
      Buf x(in_n, 0), r(n, 0), o(n, 0), sx(in_n, 0), sr(n, 0);
      sx.upload(hx);
      sr.upload(hr);
      auto launch = [&](cudaStream_t st, bool e) {
        if (op == "rmsnorm") launch_rmsnorm(x.ptr(), w.ptr(), o.ptr(), c.rows, c.width, kEps, st, e);
        else if (op == "add_rmsnorm") launch_add_rmsnorm(x.ptr(), r.ptr(), w.ptr(), o.ptr(), c.rows, c.width, kEps, st, e);
        else if (op == "residual_add") launch_residual_add(r.ptr(), x.ptr(), n, st, e);
        else launch_silu_mul(x.ptr(), o.ptr(), c.rows, c.width, st, e);
      };
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      if (early) {
        // x and the residual hold NaN until the writer, 30 us after it lets the next kernel start
        EXPECT_EQ(test::launch_slow_writer({{x.ptr(), sx.ptr(), in_n * 2}, {r.ptr(), sr.ptr(), n * 2}}, 30.0, s), 0);
        launch(s, true);
      } else {
        x.upload(hx);
        r.upload(hr);
        launch(s, false);
      }
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      out[early] = o.download();
      res[early] = r.download();
      EXPECT_TRUE(o.tail_untouched()) << what;
      EXPECT_TRUE(r.tail_untouched()) << what;
    }
    if (op != "residual_add") {
      EXPECT_EQ(out[1], out[0]) << what << ": out differs from the plain launch's";
      EXPECT_TRUE(std::none_of(out[1].begin(), out[1].end(), [](std::uint16_t v) { return v == kPoison; })) << what;
    }
    EXPECT_EQ(res[1], res[0]) << what << ": the residual differs from the plain launch's";
  }
  cudaStreamDestroy(s);
}

TEST(ElementwiseKernels, RowNormRefusesRowsWiderThanItsRegisters) {
  SKIP_WITHOUT_GPU();
  Buf x(2 * 8, 0);
  EXPECT_THROW(launch_rmsnorm(x.ptr(), x.ptr(), x.ptr(), 1, static_cast<int>(kRowNormMaxHidden) + 8, kEps, nullptr),
               InputError);
}

void check_residual_add(std::size_t n, std::size_t offset = 0) {
  const std::string what = "residual_add n=" + std::to_string(n) + (offset ? " unaligned" : "");
  SCOPED_TRACE(what);
  const auto seed = static_cast<std::uint32_t>(n + 17 * offset);
  const auto hx = random_bf16(n, seed, -2.f, 2.f), hr = random_bf16(n, seed + 1, -3.f, 3.f);
  Buf x(n, offset), r(n, offset);
  x.upload(hx);
  r.upload(hr);
  launch_residual_add(r.ptr(), x.ptr(), n, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::uint16_t> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = to_bf(from_bf(hr[i]) + from_bf(hx[i]));
  EXPECT_EQ(r.download(), want) << what;
  EXPECT_TRUE(r.tail_untouched()) << what << ": wrote past the residual";
  EXPECT_EQ(x.download(), hx) << what << ": the input changed";
}

TEST(ElementwiseKernels, ResidualAddMatchesCpuWithTails) {
  SKIP_WITHOUT_GPU();
  // 1, 7: tail only; 4096 * 3 + 5: body and a 5-element tail; up to 4096 rows of 8192.
  for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(8), std::size_t(4096), std::size_t(4096 * 3 + 5),
                        std::size_t(64) * 7168})
    check_residual_add(n);
  check_residual_add(4096 * 3 + 5, 1);
  check_residual_add(64 * 4096, 1);
  if (quick()) return;
  check_residual_add(std::size_t(1024) * 8192 + 3);
  check_residual_add(std::size_t(4096) * 8192);
}

void check_silu_mul(int rows, int width, std::size_t offset = 0) {
  const std::string what = shape_text("silu_mul", rows, width, offset);
  SCOPED_TRACE(what);
  const std::size_t n = static_cast<std::size_t>(rows) * width;
  const auto hgu = random_bf16(2 * n, static_cast<std::uint32_t>(rows * 31 + width + offset), -6.f, 6.f);
  Buf gu(2 * n, offset), out(n, offset);
  gu.upload(hgu);
  launch_silu_mul(gu.ptr(), out.ptr(), rows, width, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> ref(n);
  for (int t = 0; t < rows; ++t)
    for (int h = 0; h < width; ++h) {
      const std::size_t row = static_cast<std::size_t>(t) * 2 * width;
      const double g = from_bf(hgu[row + h]), u = from_bf(hgu[row + width + h]);
      ref[static_cast<std::size_t>(t) * width + h] = g / (1 + std::exp(-g)) * u;
    }
  expect_close(compare(out.download(), ref, static_cast<std::size_t>(width)), what);
  EXPECT_TRUE(out.tail_untouched()) << what << ": wrote past the output";
}

TEST(ElementwiseKernels, SiluMulMatchesCpuOnModelWidths) {
  SKIP_WITHOUT_GPU();
  // Llama-3.1-8B / 70B and Kimi-K2 (dense and expert) intermediate sizes at TP1 and TP8, and
  // widths that are not a multiple of 8.
  for (int width : {14336, 1792, 28672, 3584, 18432, 2304, 2048, 256, 1000, 1001, 7})
    for (int rows : {1, 4, 32}) check_silu_mul(rows, width);
  check_silu_mul(3, 4096, 1);
  check_silu_mul(70000, 8);  // more rows than a grid's y dimension: the kernel strides over them
  if (quick()) return;
  check_silu_mul(4096, 14336);
  check_silu_mul(4096, 1001);
}

// ------------------------------------------------------------------ the planner (no GPU)

TEST(ElementwisePlan, RowNormGeometryHoldsTheRowInAsFewVectorsAsFit) {
  struct Want {
    std::int64_t hidden;
    bool packed, warp;
    int v, threads;
  };
  for (const Want& w : {Want{64, true, true, 1, 128}, Want{512, true, true, 2, 128}, Want{1024, true, true, 4, 128},
                        Want{1001, false, true, 4, 128}, Want{1536, true, false, 1, 192},
                        Want{4096, true, false, 1, 512}, Want{7168, true, false, 1, 896},
                        Want{8192, true, false, 1, 1024}, Want{8200, true, false, 2, 544},
                        Want{16384, true, false, 2, 1024}, Want{32768, true, false, 4, 1024},
                        Want{25000, true, false, 4, 800}, Want{25001, false, false, 4, 800},
                        Want{5003, false, false, 1, 640}}) {
    const RowNormGeometry g = row_norm_geometry(10, w.hidden, true);
    EXPECT_EQ(g.packed, w.packed) << w.hidden;
    EXPECT_EQ(g.warp_per_row, w.warp) << w.hidden;
    EXPECT_EQ(g.vectors_per_thread, w.v) << w.hidden;
    EXPECT_EQ(g.threads, w.threads) << w.hidden;
    EXPECT_EQ(g.blocks, w.warp ? 3 : 10) << w.hidden;  // one-warp rows: 4 per block
    // Every unit of the row has a thread: lanes x V >= units.
    const int lanes = g.warp_per_row ? 32 : g.threads;
    EXPECT_GE(static_cast<std::int64_t>(lanes) * g.vectors_per_thread, (w.hidden + 7) / 8) << w.hidden;
  }
  EXPECT_FALSE(row_norm_geometry(1, 4096, false).packed) << "unaligned pointers";
  EXPECT_THROW(row_norm_geometry(1, kRowNormMaxHidden + 1, true), InputError);
  EXPECT_THROW(row_norm_geometry(1, 0, true), InputError);
  EXPECT_THROW(row_norm_geometry(0, 4096, true), InputError);
}

TEST(ElementwisePlan, PointwiseGeometryKeepsSeveralBlocksPerSm) {
  struct Want {
    std::int64_t rows, units;
    int u;
    std::int64_t grid_x;
    int grid_y;
    const char* why;
  };
  for (const Want& w : {
           Want{4096, 1792, 4, 2, 4096, "4096 rows of 14336: 4 vectors per thread still leave 8192 blocks"},
           Want{1, 1792, 1, 7, 1, "one row of 14336: even one vector per thread is only 7 blocks"},
           Want{1, 32768, 1, 128, 1, "64 x 4096 flat: 2 per thread would be 64 blocks, < 4 per SM"},
           Want{1, 4194304, 4, 4096, 1, "4096 x 8192 flat: 4096 blocks of 4 vectors per thread"},
           Want{70000, 1, 4, 1, 65535, "rows beyond the grid's y: the kernel strides over them"},
           Want{1, 0, 1, 1, 1, "nothing to do: one idle block"},
       }) {
    const PointwiseGeometry g = pointwise_geometry(w.rows, w.units, 132);
    EXPECT_EQ(g.units_per_thread, w.u) << w.why;
    EXPECT_EQ(g.grid_x, w.grid_x) << w.why;
    EXPECT_EQ(g.grid_y, w.grid_y) << w.why;
    EXPECT_EQ(g.threads, kPointwiseThreads) << w.why;
  }
}

}  // namespace
}  // namespace eaglesim::cuda
