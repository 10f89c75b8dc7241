#include "cuda/rank_program.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/replay_kernels.hpp"

namespace eaglesim::cuda {

namespace {

// cuBLASLt recommends 32 MiB of workspace on Hopper (cuBLAS docs, "cublasSetWorkspace").
constexpr std::size_t kLtWorkspaceBytes = 32u << 20;
// Rows of the embedding table we gather from (the real vocabulary is not needed: only the
// gathered rows are read, and a few thousand rows keep them out of L2 between steps).
constexpr int kEmbeddingRows = 4096;
constexpr float kRmsEps = 1e-5f;

std::size_t align256(std::size_t v) { return (v + 255) / 256 * 256; }
std::size_t as_size(std::int64_t v) { return static_cast<std::size_t>(v); }

}  // namespace

// How one matmul is run on this GPU (named by rank_program.hpp's private phases, as is ProgramPlan).
struct MatmulChoice {
  bool int4_kernel = false;   // our dequant-GEMM kernel reading packed int4
  DType lt_dtype = DType::bf16;  // cuBLASLt operand type otherwise
  std::int64_t k_eff = 0;     // k given to the GEMM (differs when a stand-in keeps the byte count)
  std::size_t weight_bytes = 0;
  std::string detail;
  std::string note;           // substitution to report, empty if none
};

// What the program needs to know before it allocates anything (pass 1), per op: how it runs and
// the bytes of its own region (weights, KV cache, norm weight, embedding table); over all ops,
// the shared scratch buffers' sizes (bytes; attention's partials in floats, ids in ints).
struct ProgramPlan {
  explicit ProgramPlan(std::size_t ops) : region_bytes(ops, 0), choice(ops), attention(ops) {}
  std::vector<std::size_t> region_bytes;
  std::vector<MatmulChoice> choice;      // matmuls
  std::vector<AttentionPlan> attention;  // attention ops
  std::size_t x = 256, x8 = 256, y = 256, z = 256, residual = 256, acc_floats = 1, ml_floats = 1, ids = 1;
};

namespace {

MatmulChoice choose_matmul(std::int64_t m_max, std::int64_t n, std::int64_t k, DType dtype, bool has_fp8, int cc) {
  MatmulChoice c;
  c.k_eff = k;
  switch (dtype) {
    case DType::bf16:
    case DType::fp16:
      c.lt_dtype = DType::bf16;
      c.detail = "cublasLt bf16";
      break;
    case DType::fp32:
      c.lt_dtype = DType::bf16;
      c.detail = "cublasLt bf16 (fp32 weights)";
      c.note = "fp32-weight GEMMs replayed as bf16 GEMMs (half the weight bytes)";
      break;
    case DType::fp8:
      if (has_fp8) {
        c.lt_dtype = DType::fp8;
        c.detail = "cublasLt fp8 e4m3, per-tensor scales";
      } else {
        c.lt_dtype = DType::bf16;
        c.detail = "cublasLt bf16 (fp8 stand-in)";
        c.note = fmt::format("this GPU (sm_{}) has no fp8 tensor cores: fp8 GEMMs replayed as bf16 (twice the weight bytes)", cc);
      }
      break;
    case DType::int4:
      if (m_max <= kInt4MaxRows && k % kInt4GroupSize == 0) {
        c.int4_kernel = true;
        c.detail = "int4 dequant-GEMM kernel";
        c.note = "int4 GEMMs replayed by eaglesim's dequant-GEMM kernel over packed int4 weights plus one bf16 "
                 "scale per 32 weights (12.5% more bytes than the trace's int4 weight bytes)";
      } else if (has_fp8 && (k / 2) % 16 == 0) {
        c.lt_dtype = DType::fp8;
        c.k_eff = k / 2;
        c.detail = "cublasLt fp8, k/2 (int4 stand-in, same weight bytes)";
        c.note = fmt::format("cuBLASLt has no int4 weights: int4 GEMMs with m > {} (or k not a multiple of {}) replayed "
                             "as fp8 GEMMs of the same weight bytes (k/2, half the FLOPs)", kInt4MaxRows, kInt4GroupSize);
      } else {
        c.lt_dtype = DType::bf16;
        c.k_eff = std::max<std::int64_t>(8, k / 4);
        c.detail = "cublasLt bf16, k/4 (int4 stand-in, same weight bytes)";
        c.note = "int4 GEMMs without a usable int4 kernel or fp8 replayed as bf16 GEMMs of the same weight bytes (k/4)";
      }
      break;
  }
  if (c.int4_kernel)
    c.weight_bytes = as_size(n) * as_size(k) / 2 + as_size(n) * as_size(k / kInt4GroupSize) * 2;
  else
    c.weight_bytes = as_size(n) * as_size(c.k_eff) * (c.lt_dtype == DType::fp8 ? 1 : 2);
  return c;
}

std::string op_label(std::size_t i, const Op& op) {
  std::string s = fmt::format("op {} '{}' ({} {}", i, op.name, to_string(op.kind), op.shape_string());
  if (op.layer >= 0) s += fmt::format(", layer {}", op.layer);
  return s + ")";
}

// GQA: K and V caches [kv_len, kv_heads, head_dim]; MLA: one latent cache [kv_len, lora+rope].
AttentionShape attention_shape(const Op& op) {
  AttentionShape s;
  s.q_tokens = static_cast<int>(op.q_tokens);
  s.kv_len = static_cast<int>(op.kv_len);
  s.heads = static_cast<int>(op.heads);
  if (op.variant == AttentionVariant::mla) {
    s.kv_heads = 1;
    s.dk = static_cast<int>(op.kv_lora_rank + op.rope_dim);
    s.dv = static_cast<int>(op.kv_lora_rank);
    s.shared_kv = true;
  } else {
    s.kv_heads = static_cast<int>(op.kv_heads);
    s.dk = s.dv = static_cast<int>(op.head_dim);
  }
  return s;
}

std::size_t kv_cache_bytes(const AttentionShape& s) {
  const std::size_t rows = static_cast<std::size_t>(s.kv_len) * s.kv_heads;
  return s.shared_kv ? rows * s.dk * 2 : 2 * rows * s.dk * 2;
}

// A grouped GEMM's routed rows spread over its experts: `base` rows each, one more for the first
// `extra`; `rows_max` the most any expert gets.
struct ExpertRows {
  std::int64_t base, extra, rows_max;
};
ExpertRows expert_rows(const Op& op) {
  return {op.tokens / op.experts, op.tokens % op.experts, (op.tokens + op.experts - 1) / op.experts};
}

}  // namespace

void RankProgram::note(const std::string& text) {
  if (!text.empty() && std::find(notes_.begin(), notes_.end(), text) == notes_.end()) notes_.push_back(text);
}

void RankProgram::use_collective(const CollectiveUse& use) {
  if (std::find(collectives_.begin(), collectives_.end(), use) == collectives_.end()) collectives_.push_back(use);
}

const LtGemm& RankProgram::gemm_plan(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) {
  auto key = std::make_tuple(m, n, k, static_cast<int>(dtype));
  auto it = gemms_.find(key);
  if (it != gemms_.end()) return *it->second;
  const float* scales = fp8_scales_.as<float>();
  auto plan = std::make_unique<LtGemm>(lt_, m, n, k, dtype, kLtWorkspaceBytes, scales, scales + 1);
  return *gemms_.emplace(key, std::move(plan)).first->second;
}

// The phases, in this order because each needs what the one before made, and because the order
// of allocations decides where the weights land (the weight arena's placement, weight_arena.hpp):
//   open_device:   the GPU's properties, cuBLASLt, the GEMM workspace and fp8 scales;
//   plan_step:     pass 1, per op how it runs and what memory it needs (nothing allocated yet,
//                  so a step the replay cannot run fails before it takes any memory);
//   allocate:      the shared scratch first, then the per-op regions in what memory is left;
//   fill_contents: random data everywhere (never zeros, which can run faster and hide bugs);
//   build_ops:     pass 2, one closure per op (a fused allreduce absorbs the two ops after it).
RankProgram::RankProgram(const Step& step, int device, RankComm& comm, RankComm* fallback, const ProgramOptions& opts)
    : device_(device) {
  open_device();
  const std::size_t n_ops = step.ops.size();
  ops_.resize(n_ops);
  absorbed_.assign(n_ops, false);
  labels_.resize(n_ops);
  details_.resize(n_ops);
  const ProgramPlan plan = plan_step(step);
  allocate(plan);
  fill_contents(step, plan, opts.seed);
  build_ops(step, plan, comm, fallback, opts);
  EAGLESIM_CUDA_CHECK(cudaDeviceSynchronize());  // fills done before anything is timed
}

void RankProgram::open_device() {
  cudaDeviceProp prop{};
  EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  sm_count_ = prop.multiProcessorCount;
  compute_capability_ = prop.major * 10 + prop.minor;
  has_fp8_ = compute_capability_ >= 89;  // fp8 tensor cores: Ada (8.9) and Hopper (9.0) onwards
  EAGLESIM_CUBLAS_CHECK(cublasLtCreate(&lt_));
  workspace_ = DeviceBuffer(kLtWorkspaceBytes);
  fp8_scales_ = DeviceBuffer(2 * sizeof(float));
  const float ones[2] = {1.f, 1.f};
  EAGLESIM_CUDA_CHECK(cudaMemcpy(fp8_scales_.get(), ones, sizeof(ones), cudaMemcpyHostToDevice));
}

// ---------------------------------------------------------------- pass 1: the plan

ProgramPlan RankProgram::plan_step(const Step& step) {
  ProgramPlan plan(step.ops.size());
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    labels_[i] = op_label(i, op);
    switch (op.kind) {
      case OpKind::gemm:
      case OpKind::lm_head: plan_matmul(i, op, plan); break;
      case OpKind::grouped_gemm: plan_grouped_matmul(i, op, plan); break;
      case OpKind::attention: plan_attention_op(i, op, plan); break;
      default: plan_rowwise(i, op, plan); break;
    }
  }
  return plan;
}

// One weight region of n x k_eff; x/x8/y hold the activations of m rows.
void RankProgram::plan_matmul(std::size_t i, const Op& op, ProgramPlan& plan) {
  plan.choice[i] = choose_matmul(op.m, op.n, op.k, op.dtype, has_fp8_, compute_capability_);
  plan.region_bytes[i] = plan.choice[i].weight_bytes;
  plan.x = std::max(plan.x, as_size(op.m * op.k) * 2);
  plan.x8 = std::max(plan.x8, as_size(op.m * plan.choice[i].k_eff));
  plan.y = std::max(plan.y, as_size(op.m * op.n) * 2);
}

// One weight region per expert, 256-byte aligned, and one 256-byte-aligned slot per expert in
// x/y (cuBLASLt's fast paths want aligned operands).
void RankProgram::plan_grouped_matmul(std::size_t i, const Op& op, ProgramPlan& plan) {
  const std::int64_t rows_max = expert_rows(op).rows_max;
  plan.choice[i] = choose_matmul(rows_max, op.n, op.k, op.dtype, has_fp8_, compute_capability_);
  plan.region_bytes[i] = as_size(op.experts) * align256(plan.choice[i].weight_bytes);
  plan.x = std::max(plan.x, as_size(op.experts) * align256(as_size(rows_max * op.k) * 2));
  plan.x8 = std::max(plan.x8, as_size(op.experts) * align256(as_size(rows_max * plan.choice[i].k_eff)));
  plan.y = std::max(plan.y, as_size(op.experts) * align256(as_size(rows_max * op.n) * 2));
  if (op.tokens < op.experts)
    note(fmt::format("'{}': {} routed rows over {} experts: experts without rows are skipped", op.name, op.tokens,
                     op.experts));
}

// The KV cache is the op's region; the split-KV partials are shared scratch. An attention shape
// without a kernel fails here, before anything is allocated.
void RankProgram::plan_attention_op(std::size_t i, const Op& op, ProgramPlan& plan) {
  const AttentionShape s = attention_shape(op);
  const std::string why = attention_unsupported_reason(s);
  if (!why.empty()) throw InputError(fmt::format("{}: the CUDA backend cannot replay it: {}", labels_[i], why));
  plan.attention[i] = plan_attention(s, sm_count_);
  plan.region_bytes[i] = kv_cache_bytes(s);
  plan.x = std::max(plan.x, as_size(s.q_tokens) * s.heads * s.dk * 2);
  plan.y = std::max(plan.y, as_size(s.q_tokens) * s.heads * s.dv * 2);
  plan.acc_floats = std::max(plan.acc_floats, plan.attention[i].part_acc_floats);
  plan.ml_floats = std::max(plan.ml_floats, plan.attention[i].part_ml_floats);
}

// The element-wise ops, the allreduce and `other`: scratch only, plus a small region for the
// norm weight and the embedding table.
void RankProgram::plan_rowwise(std::size_t i, const Op& op, ProgramPlan& plan) {
  switch (op.kind) {
    case OpKind::allreduce:
      plan.x = std::max(plan.x, as_size(op.bytes));
      plan.z = std::max(plan.z, as_size(op.bytes));
      break;
    case OpKind::rmsnorm:
      plan.region_bytes[i] = as_size(op.hidden) * 2;
      plan.x = std::max(plan.x, as_size(op.tokens * op.hidden) * 2);
      plan.y = std::max(plan.y, as_size(op.tokens * op.hidden) * 2);
      break;
    case OpKind::residual_add:
      plan.x = std::max(plan.x, as_size(op.tokens * op.hidden) * 2);
      plan.residual = std::max(plan.residual, as_size(op.tokens * op.hidden) * 2);
      break;
    case OpKind::act:
      plan.x = std::max(plan.x, as_size(op.tokens * op.hidden) * 4);
      plan.y = std::max(plan.y, as_size(op.tokens * op.hidden) * 2);
      break;
    case OpKind::embedding:
      plan.region_bytes[i] = as_size(kEmbeddingRows) * as_size(op.hidden) * 2;
      plan.y = std::max(plan.y, as_size(op.tokens * op.hidden) * 2);
      plan.ids = std::max(plan.ids, as_size(op.tokens));
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------- memory and its contents

void RankProgram::allocate(const ProgramPlan& plan) {
  x_ = DeviceBuffer(plan.x);
  x8_ = DeviceBuffer(plan.x8);
  y_ = DeviceBuffer(plan.y);
  z_ = DeviceBuffer(plan.z);
  residual_ = DeviceBuffer(plan.residual);
  part_acc_ = DeviceBuffer(plan.acc_floats * sizeof(float));
  part_ml_ = DeviceBuffer(plan.ml_floats * sizeof(float));
  ids_ = DeviceBuffer(plan.ids * sizeof(int));
  std::size_t free_bytes = 0, total_bytes = 0;
  EAGLESIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  arena_ = WeightArena(plan.region_bytes, free_bytes);
  if (arena_.adopted())
    note("weights and KV caches in the same GPU memory as the previous program on this GPU (an A/B run compares "
         "strategies over one placement)");
  if (arena_.reused())
    note(fmt::format("weights and KV caches ({:.1f} GiB per rank) exceed 80% of free GPU memory: replayed from "
                     "{:.1f} GiB, later layers reading earlier layers' memory (too far back for L2 to hold it)",
                     arena_.requested_bytes() / 1073741824.0, arena_.pool_bytes() / 1073741824.0));
}

// Activations first, then every region in its own dtype; seeds differ per program (opts.seed),
// buffer and op, so ranks and layers never read the same values.
void RankProgram::fill_contents(const Step& step, const ProgramPlan& plan, std::uint64_t program_seed) {
  const std::uint64_t seed = program_seed * 0x100000001B3ull;
  fill_random(x_.get(), plan.x / 2, DType::bf16, seed + 1, 1.f, nullptr);
  fill_random(x8_.get(), plan.x8, DType::fp8, seed + 2, 1.f, nullptr);
  fill_random(y_.get(), plan.y / 2, DType::bf16, seed + 3, 1.f, nullptr);
  fill_random(z_.get(), plan.z / 2, DType::bf16, seed + 4, 1.f, nullptr);
  fill_random(residual_.get(), plan.residual / 2, DType::bf16, seed + 5, 1.f, nullptr);
  fill_random_ids(ids_.as<int>(), plan.ids, kEmbeddingRows, seed + 6, nullptr);
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    if (plan.region_bytes[i] == 0) continue;
    const std::uint64_t s = seed + 1000 + i;
    void* r = arena_.region(i);
    const Op& op = step.ops[i];
    if (op.is_matmul()) {
      const MatmulChoice& c = plan.choice[i];
      const std::size_t experts = op.kind == OpKind::grouped_gemm ? as_size(op.experts) : 1;
      const std::size_t stride = op.kind == OpKind::grouped_gemm ? align256(c.weight_bytes) : c.weight_bytes;
      for (std::size_t e = 0; e < experts; ++e) {
        char* w = static_cast<char*>(r) + e * stride;
        if (c.int4_kernel) {
          const std::size_t packed = as_size(op.n) * as_size(op.k) / 2;
          fill_random(w, packed, DType::int4, s + e, 0.f, nullptr);
          fill_random(w + packed, as_size(op.n) * as_size(op.k / kInt4GroupSize), DType::bf16, s + e + 7, 0.02f, nullptr);
        } else {
          fill_random(w, as_size(op.n) * as_size(c.k_eff), c.lt_dtype, s + e, c.lt_dtype == DType::fp8 ? 0.5f : 0.05f,
                      nullptr);
        }
      }
    } else {
      fill_random(r, plan.region_bytes[i] / 2, DType::bf16, s, 1.f, nullptr);
    }
  }
}

// ---------------------------------------------------------------- pass 2: the closures

void RankProgram::build_ops(const Step& step, const ProgramPlan& plan, RankComm& comm, RankComm* fallback,
                            const ProgramOptions& opts) {
  const bool can_fuse = comm.supports_fused() && !opts.skip_allreduces;
  std::size_t fused = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    if (absorbed_[i]) continue;
    const Op& op = step.ops[i];
    switch (op.kind) {
      case OpKind::gemm:
      case OpKind::lm_head:
      case OpKind::grouped_gemm: build_matmul(i, op, plan.choice[i]); break;
      case OpKind::attention: build_attention(i, op, plan.attention[i]); break;
      case OpKind::allreduce:
        if (build_allreduce(i, step, comm, fallback, can_fuse, opts.skip_allreduces)) ++fused;
        break;
      default: build_rowwise(i, op); break;
    }
  }
  if (fused > 0) note(fmt::format("{} allreduce + residual add + RMSNorm triples ran as one {} kernel each", fused, comm.strategy()));
}

// A GEMM, or a grouped GEMM as one GEMM per expert with rows (cuBLASLt or the int4 kernel).
void RankProgram::build_matmul(std::size_t i, const Op& op, const MatmulChoice& c) {
  note(c.note);
  std::string& detail = details_[i];
  detail = c.detail;
  char* xb = x_.as<char>();
  char* x8b = x8_.as<char>();
  char* yb = y_.as<char>();
  void* ws = workspace_.get();
  const bool grouped = op.kind == OpKind::grouped_gemm;
  const std::int64_t experts = grouped ? op.experts : 1;
  const ExpertRows rows = grouped ? expert_rows(op) : ExpertRows{op.m, 0, op.m};
  const std::int64_t base = rows.base, extra = rows.extra, rows_max = rows.rows_max;
  const std::size_t w_stride = grouped ? align256(c.weight_bytes) : 0;
  const std::size_t x_slot = grouped ? align256(as_size(rows_max * op.k) * 2) : 0;
  const std::size_t x8_slot = grouped ? align256(as_size(rows_max * c.k_eff)) : 0;
  const std::size_t y_slot = grouped ? align256(as_size(rows_max * op.n) * 2) : 0;
  std::vector<std::function<void(cudaStream_t)>> parts;
  for (std::int64_t e = 0; e < experts; ++e) {
    const std::int64_t m = base + (e < extra ? 1 : 0);
    if (m == 0) continue;
    char* w = static_cast<char*>(arena_.region(i)) + as_size(e) * w_stride;
    char* y = yb + as_size(e) * y_slot;
    const std::int64_t n = op.n, k = op.k;
    if (c.int4_kernel) {
      const char* x = xb + as_size(e) * x_slot;
      const char* scales = w + as_size(n) * as_size(k) / 2;
      parts.push_back([=](cudaStream_t s) { launch_int4_gemm(x, w, scales, y, int(m), int(n), int(k), s); });
    } else {
      const LtGemm* plan = &gemm_plan(m, n, c.k_eff, c.lt_dtype);
      const char* x = c.lt_dtype == DType::fp8 ? x8b + as_size(e) * x8_slot : xb + as_size(e) * x_slot;
      parts.push_back([=](cudaStream_t s) { plan->run(w, x, y, ws, s); });
    }
  }
  if (grouped) detail += fmt::format(", {} experts x {}-{} rows", experts, base, base + (extra ? 1 : 0));
  if (parts.size() == 1) ops_[i] = parts[0];
  else ops_[i] = [parts](cudaStream_t s) { for (const auto& p : parts) p(s); };
}

void RankProgram::build_attention(std::size_t i, const Op& op, const AttentionPlan& plan) {
  const AttentionShape shape = attention_shape(op);
  const char* cache = static_cast<const char*>(arena_.region(i));
  const std::size_t k_bytes = shape.shared_kv ? 0 : kv_cache_bytes(shape) / 2;
  const char* kc = cache;
  const char* vc = cache + k_bytes;
  const std::int64_t pitch = shape.dk;
  float* acc = part_acc_.as<float>();
  float* ml = part_ml_.as<float>();
  char* xb = x_.as<char>();
  char* yb = y_.as<char>();
  details_[i] = fmt::format("split-KV decode kernel, {} splits of {}", plan.splits, plan.split_len);
  ops_[i] = [=](cudaStream_t s) { launch_attention(shape, plan, xb, kc, vc, pitch, pitch, acc, ml, yb, s); };
}

// The rank's allreduce (or NCCL's for messages larger than its buffers). When the strategy has a
// fused kernel and the next two ops are the residual add + RMSNorm of the same rows, all three
// run as that one kernel and the two are absorbed (true returned).
bool RankProgram::build_allreduce(std::size_t i, const Step& step, RankComm& comm, RankComm* fallback, bool can_fuse,
                                  bool skip_allreduces) {
  const auto& ops = step.ops;
  const std::size_t n_ops = ops.size();
  const Op& op = ops[i];
  std::string& detail = details_[i];
  const std::size_t count = as_size(op.bytes) / static_cast<std::size_t>(bytes_per_element(op.dtype));
  const DType dtype = op.dtype;
  if (skip_allreduces) {
    detail = "skipped (fault injection)";
    return false;  // no closure: this rank never joins
  }
  RankComm* rc = &comm;
  if (as_size(op.bytes) > comm.max_bytes()) {
    if (!fallback) throw DeviceError(fmt::format("{}: larger than {} can take and no NCCL fallback", labels_[i], comm.strategy()));
    rc = fallback;
    note(fmt::format("allreduces over {} B exceed {}'s buffers: run through NCCL", comm.max_bytes(), comm.strategy()));
    detail = fallback->strategy() + " (fallback)";
  } else {
    detail = comm.strategy();
  }
  char* xb = x_.as<char>();
  const bool fuse = can_fuse && rc == &comm && dtype == DType::bf16 && i + 2 < n_ops &&
                    ops[i + 1].kind == OpKind::residual_add && ops[i + 2].kind == OpKind::rmsnorm &&
                    ops[i + 1].tokens == ops[i + 2].tokens && ops[i + 1].hidden == ops[i + 2].hidden &&
                    op.bytes == ops[i + 1].tokens * ops[i + 1].hidden * 2;
  if (!fuse) {
    use_collective({rc, dtype, count, false, 0, 0, kRmsEps});
    char* z = z_.as<char>();
    ops_[i] = [rc, xb, z, count, dtype](cudaStream_t s) { rc->allreduce(xb, z, count, dtype, s); };
    return false;
  }
  FusedNormArgs args;
  args.residual = residual_.get();
  args.weight = arena_.region(i + 2);
  args.normed = y_.as<char>();
  args.tokens = as_size(ops[i + 1].tokens);
  args.hidden = as_size(ops[i + 1].hidden);
  args.eps = kRmsEps;
  absorbed_[i + 1] = absorbed_[i + 2] = true;
  details_[i + 1] = details_[i + 2] = "fused into " + op.name;
  detail += " + residual + rmsnorm (fused)";
  ops_[i] = [rc, xb, args, dtype](cudaStream_t s) { rc->allreduce_residual_rmsnorm(xb, args, dtype, s); };
  use_collective({rc, dtype, count, true, args.tokens, args.hidden, kRmsEps});
  return true;
}

// The row-wise kernels and `other`'s timed spin.
void RankProgram::build_rowwise(std::size_t i, const Op& op) {
  std::string& detail = details_[i];
  char* xb = x_.as<char>();
  char* yb = y_.as<char>();
  switch (op.kind) {
    case OpKind::rmsnorm: {
      const void* w = arena_.region(i);
      const int t = int(op.tokens), h = int(op.hidden);
      detail = "rmsnorm kernel";
      ops_[i] = [=](cudaStream_t s) { launch_rmsnorm(xb, w, yb, t, h, kRmsEps, s); };
      break;
    }
    case OpKind::residual_add: {
      void* r = residual_.get();
      const std::size_t count = as_size(op.tokens * op.hidden);
      detail = "residual add kernel";
      ops_[i] = [=](cudaStream_t s) { launch_residual_add(r, xb, count, s); };
      break;
    }
    case OpKind::act: {
      const int t = int(op.tokens), h = int(op.hidden);
      detail = "silu*mul kernel";
      ops_[i] = [=](cudaStream_t s) { launch_silu_mul(xb, yb, t, h, s); };
      break;
    }
    case OpKind::embedding: {
      const void* table = arena_.region(i);
      const int* ids = ids_.as<int>();
      const int t = int(op.tokens), h = int(op.hidden);
      detail = "embedding gather kernel";
      ops_[i] = [=](cudaStream_t s) { launch_embedding(table, ids, yb, t, h, s); };
      break;
    }
    case OpKind::other: {
      const double us = op.us.value_or(0.0);
      detail = fmt::format("timed spin {:.1f} us", us);
      ops_[i] = [us](cudaStream_t s) { launch_spin(us, s); };
      break;
    }
    default:
      break;
  }
}

RankProgram::~RankProgram() {
  gemms_.clear();
  if (lt_) cublasLtDestroy(lt_);
}

}  // namespace eaglesim::cuda
