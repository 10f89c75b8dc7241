#pragma once
// Shapes live on the CPU side of a profile: the kernel only says which code ran, the ATen op
// that launched it says on what (`Input Dims`, `Input type`, and for collectives
// record_param_comms' "In msg nelems"). shape_linker walks from a kernel's launching op up
// through its enclosing ops to the first one that carries the shape for the kind of kernel,
// and fills the typed fields of an Op. Without record_shapes nothing is found and the caller
// falls back to a duration-only `other` op.
#include <optional>
#include <string>

#include "import/kernel_classifier.hpp"
#include "import/kineto_reader.hpp"
#include "trace/op.hpp"

namespace eaglesim {

struct LinkedShape {
  Op op;                   // kind and shape fields set; name/us/layer left to the caller
  std::string source_op;   // the CPU op the shape came from (e.g. "aten::mm")
};

// nullopt when no enclosing op carries a usable shape. `cls` must be one of gemm, allreduce,
// attention, norm, fused_add_norm, residual_add, act, act_partial.
std::optional<LinkedShape> link_shape(const RankTrace& rank, const GpuActivity& kernel, KernelClass cls);

// Bytes moved by a copy (memcpy bytes, or the numel x element size of aten::copy_'s input).
std::optional<std::int64_t> copy_bytes(const RankTrace& rank, const GpuActivity& activity);

// Profiler type names ("c10::BFloat16", "BFloat16", "c10::Half", "float", "c10::Float8_e4m3fn").
std::optional<DType> dtype_from_profiler(const std::string& name);

}  // namespace eaglesim
