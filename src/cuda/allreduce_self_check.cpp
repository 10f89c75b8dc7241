#include "cuda/allreduce_self_check.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/host_elements.hpp"

namespace eaglesim::cuda {

namespace {

constexpr std::size_t kQuantGroup = 128;  // elements per fp8 scale (quant_allreduce.cuh)

bool checkable(DType t) { return t == DType::bf16 || t == DType::fp16 || t == DType::fp32; }

// Small integers: exact in every checked dtype, and so are their sums over up to 8 ranks.
double input_of(int rank, std::size_t i) { return static_cast<double>((i * 5 + rank * 7) % 13) - 6; }
double residual_of(std::size_t i) { return static_cast<double>((i * 3) % 7) - 3; }
double weight_of(std::size_t i) { return 1 + static_cast<double>(i % 5) / 8; }

// `count` elements of type t, element i = value(i).
template <class Value>
std::vector<unsigned char> encode(DType t, std::size_t count, Value value) {
  std::vector<unsigned char> bytes(count * element_bytes(t));
  for (std::size_t i = 0; i < count; ++i) write_element(t, bytes.data(), i, value(i));
  return bytes;
}

ReplayBuffer upload(const std::vector<unsigned char>& bytes) {
  ReplayBuffer b(bytes.size());
  EAGLESIM_CUDA_CHECK(cudaMemcpy(b.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return b;
}

std::vector<unsigned char> download(const ReplayBuffer& b) {
  std::vector<unsigned char> bytes(b.bytes());
  EAGLESIM_CUDA_CHECK(cudaMemcpy(bytes.data(), b.get(), bytes.size(), cudaMemcpyDeviceToHost));
  return bytes;
}

std::string describe(const CollectiveUse& u) {
  return u.fused ? fmt::format("fused allreduce + residual + RMSNorm of {} x {} {}", u.tokens, u.hidden,
                               to_string(u.dtype))
                 : fmt::format("allreduce of {} {}", u.count, to_string(u.dtype));
}

// Counts the elements of `got` farther from `want(i)` than `tolerance(i)`; remembers the first.
struct Mismatches {
  std::size_t count = 0, first = 0;
  double first_got = 0, first_want = 0;
  template <class Want, class Tolerance>
  void scan(DType t, const std::vector<unsigned char>& got, std::size_t n, Want want, Tolerance tolerance) {
    for (std::size_t i = 0; i < n; ++i) {
      const double g = read_element(t, got.data(), i), w = want(i);
      if (std::fabs(g - w) <= tolerance(i)) continue;  // NaN fails here too
      if (count++ == 0) first = i, first_got = g, first_want = w;
    }
  }
};

}  // namespace

AllreduceSelfCheck::AllreduceSelfCheck(const std::vector<CollectiveUse>& uses, int rank) : rank_(rank) {
  for (const CollectiveUse& u : uses) {
    if (u.comm->strategy() == "ideal") continue;
    ranks_ = u.comm->ranks();  // one group per step: every use has the same
    if (!checkable(u.dtype) || u.count == 0) {
      unchecked_.push_back(describe(u));
      continue;
    }
    Case c{u, {}, {}, {}, {}, {}};
    c.in = upload(encode(u.dtype, u.count, [rank](std::size_t i) { return input_of(rank, i); }));
    if (u.fused) {
      c.residual = upload(encode(u.dtype, u.count, residual_of));
      c.weight = upload(encode(u.dtype, u.hidden, weight_of));
      c.normed = ReplayBuffer(u.count * element_bytes(u.dtype));
      EAGLESIM_CUDA_CHECK(cudaMemset(c.normed.get(), 0xff, c.normed.bytes()));  // NaN until written
    } else {
      c.out = ReplayBuffer(u.count * element_bytes(u.dtype));
      EAGLESIM_CUDA_CHECK(cudaMemset(c.out.get(), 0xff, c.out.bytes()));
    }
    cases_.push_back(std::move(c));
  }
}

void AllreduceSelfCheck::enqueue(cudaStream_t stream) {
  for (Case& c : cases_) {
    const CollectiveUse& u = c.use;
    if (u.fused) {
      FusedNormArgs a;
      a.residual = c.residual.get();
      a.weight = c.weight.get();
      a.normed = c.normed.get();
      a.tokens = u.tokens;
      a.hidden = u.hidden;
      a.eps = u.eps;
      u.comm->allreduce_residual_rmsnorm(c.in.get(), a, u.dtype, stream);
    } else {
      u.comm->allreduce(c.in.get(), c.out.get(), u.count, u.dtype, stream);
    }
  }
}

std::string AllreduceSelfCheck::verify() const {
  for (const Case& c : cases_) {
    const CollectiveUse& u = c.use;
    std::vector<double> sum(u.count, 0), abs_group(u.count / kQuantGroup + 1, 0);
    for (int r = 0; r < ranks_; ++r) {
      std::vector<double> amax(abs_group.size(), 0);
      for (std::size_t i = 0; i < u.count; ++i) {
        sum[i] += input_of(r, i);
        amax[i / kQuantGroup] = std::max(amax[i / kQuantGroup], std::fabs(input_of(r, i)));
      }
      for (std::size_t g = 0; g < amax.size(); ++g) abs_group[g] += amax[g];
    }
    const bool lossy = u.comm->strategy() == "quant";
    // Exact sums for the plain strategies; quant: its bound, plus the output's own rounding.
    auto sum_tolerance = [&](std::size_t i) {
      return lossy ? abs_group[i / kQuantGroup] / 16 + std::fabs(sum[i]) / 128 + 1e-3 : 0.0;
    };
    Mismatches m;
    std::string what = "sum";
    if (!u.fused) {
      m.scan(u.dtype, download(c.out), u.count, [&](std::size_t i) { return sum[i]; }, sum_tolerance);
    } else {
      const std::vector<unsigned char> residual = download(c.residual);
      auto new_residual = [&](std::size_t i) { return residual_of(i) + sum[i]; };
      m.scan(u.dtype, residual, u.count, new_residual, sum_tolerance);
      if (m.count > 0) {
        what = "residual + sum";
      } else {
        // The norm of the residual the GPU holds (exact when the sums are), rounded twice at
        // most (the normalised value, then the product with the weight).
        auto held = [&](std::size_t i) { return read_element(u.dtype, residual.data(), i); };
        std::vector<double> want(u.count);
        for (std::size_t t = 0; t < u.tokens; ++t) {
          double squares = 0;
          for (std::size_t h = 0; h < u.hidden; ++h) squares += std::pow(held(t * u.hidden + h), 2);
          const double inv = 1 / std::sqrt(squares / static_cast<double>(u.hidden) + u.eps);
          for (std::size_t h = 0; h < u.hidden; ++h) want[t * u.hidden + h] = held(t * u.hidden + h) * inv * weight_of(h);
        }
        m.scan(u.dtype, download(c.normed), u.count, [&](std::size_t i) { return want[i]; },
               [&](std::size_t i) { return std::fabs(want[i]) / 64 + 1e-3; });
        what = "RMSNorm";
      }
    }
    if (m.count > 0)
      throw DeviceError(fmt::format(
          "rank {}: {} {} is wrong on this machine: {} of {} elements off the reference {} (first: element {} = {}, "
          "expected {}); nothing was timed",
          rank_, u.comm->strategy(), describe(u), m.count, u.count, what, m.first, m.first_got, m.first_want));
  }
  std::string shapes;
  for (const Case& c : cases_) shapes += (shapes.empty() ? "" : ", ") + describe(c.use);
  std::string note = fmt::format("allreduce self-check on {} ranks before timing: {} matched the reference", ranks_,
                                 shapes.empty() ? "nothing to check" : shapes);
  if (!unchecked_.empty()) {
    std::string list;
    for (const auto& s : unchecked_) list += (list.empty() ? "" : ", ") + s;
    note += "; not checked (no exact host reference for the dtype): " + list;
  }
  return note;
}

}  // namespace eaglesim::cuda
