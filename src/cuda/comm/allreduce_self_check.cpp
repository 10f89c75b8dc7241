#include "cuda/comm/allreduce_self_check.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

std::size_t differing_elements(DType t, std::size_t count, const std::vector<const HostBytes*>& mine,
                               const std::vector<const HostBytes*>& theirs) {
  const std::size_t e = element_bytes(t);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t b = 0; b < mine.size(); ++b)
      if (std::memcmp(mine[b]->data() + i * e, theirs[b]->data() + i * e, e) != 0) {
        ++differing;
        break;
      }
  return differing;
}

namespace {

bool checkable(DType t) { return t == DType::bf16 || t == DType::fp16 || t == DType::fp32; }

// Small integers: exact in every checked dtype, and so are their sums over up to 8 ranks.
double input_of(int rank, std::size_t i) { return static_cast<double>((i * 5 + rank * 7) % 13) - 6; }
double residual_of(std::size_t i) { return static_cast<double>((i * 3) % 7) - 3; }
double weight_of(std::size_t i) { return 1 + static_cast<double>(i % 5) / 8; }

// `count` elements of type t, element i = value(i).
template <class Value>
HostBytes encode(DType t, std::size_t count, Value value) {
  HostBytes bytes(count * element_bytes(t));
  for (std::size_t i = 0; i < count; ++i) write_element(t, bytes.data(), i, value(i));
  return bytes;
}

DeviceBuffer upload(const HostBytes& bytes) {
  DeviceBuffer b(bytes.size());
  EAGLESIM_CUDA_CHECK(cudaMemcpy(b.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return b;
}

HostBytes download(const DeviceBuffer& b) {
  HostBytes bytes(b.bytes());
  EAGLESIM_CUDA_CHECK(cudaMemcpy(bytes.data(), b.get(), bytes.size(), cudaMemcpyDeviceToHost));
  return bytes;
}

std::string describe(const CollectiveUse& u) {
  return u.fused ? fmt::format("fused allreduce + residual + RMSNorm of {} x {} {}", u.tokens, u.hidden,
                               to_string(u.dtype))
                 : fmt::format("allreduce of {} {}", u.count, to_string(u.dtype));
}

// Exact sums for the exact strategies; a lossy one: its bound (amax * 2^-4 per rank and group),
// plus the output's own rounding.
SumTolerance self_check_tolerance(const std::string& strategy) {
  SumTolerance tol;
  if (!is_exact(strategy)) {
    tol.of_group_amax = 1.0 / 16;
    tol.of_sum = 1.0 / 128;
    tol.absolute = 1e-3;
  }
  return tol;
}

}  // namespace

AllreduceSelfCheck::AllreduceSelfCheck(const std::vector<CollectiveUse>& uses, int rank) : rank_(rank) {
  for (const CollectiveUse& u : uses) {
    if (is_lower_bound(u.comm->strategy())) continue;
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
      c.normed = DeviceBuffer(u.count * element_bytes(u.dtype));
      EAGLESIM_CUDA_CHECK(cudaMemset(c.normed.get(), 0xff, c.normed.bytes()));  // NaN until written
    } else {
      c.out = DeviceBuffer(u.count * element_bytes(u.dtype));
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
    AllreduceReference ref(u.count);
    for (int r = 0; r < ranks_; ++r) ref.add_rank([r](std::size_t i) { return input_of(r, i); });
    const SumTolerance tol = self_check_tolerance(u.comm->strategy());
    auto sum_tolerance = [&](std::size_t i) { return tol.at(ref, i); };
    Mismatches m;
    std::string what = "sum";
    if (!u.fused) {
      m.scan(u.dtype, download(c.out), u.count, [&](std::size_t i) { return ref.sum[i]; }, sum_tolerance);
    } else {
      const HostBytes residual = download(c.residual);
      auto new_residual = [&](std::size_t i) { return residual_of(i) + ref.sum[i]; };
      m.scan(u.dtype, residual, u.count, new_residual, sum_tolerance);
      if (m.count > 0) {
        what = "residual + sum";
      } else {
        // The norm of the residual the GPU holds (exact when the sums are), rounded twice at
        // most (the normalised value, then the product with the weight).
        const std::vector<double> want = rmsnorm_reference(u.dtype, residual, u.tokens, u.hidden, u.eps, weight_of);
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
    note += fmt::format("; not checked (no exact host reference for the dtype): {}", fmt::join(unchecked_, ", "));
  }
  return note;
}

}  // namespace eaglesim::cuda
