#include "cuda/replay/rank_program.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cost/attention_geometry.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/cuda_graph.hpp"
#include "cost/low_bit_gemm_kernel.hpp"
#include "cuda/ops/draft_candidates.hpp"
#include "cuda/ops/elementwise_plan.hpp"
#include "cuda/ops/fp8_act_quant.hpp"
#include "cuda/ops/int4_wgmma_gemm.hpp"
#include "cuda/ops/spec_cycle_kernels.hpp"
#include "cuda/runtime/graph_timer.hpp"
#include "cuda/ops/moe_gemm_plan.hpp"
#include "cuda/ops/replay_kernels.hpp"
#include "cuda/runtime/stream.hpp"
#include "cuda/ops/verify_attention_launch.hpp"
#include "backend/op_pricing.hpp"

namespace eaglesim::cuda {

namespace {

// The elements per tensor of the residual-add kernel that streams an elementwise op's bytes: its
// operands x tokens x hidden over the kernel's three tensors (two read, one written).
std::size_t elementwise_stream_elements(const Op& op) {
  const std::size_t total = static_cast<std::size_t>(op.operands) * static_cast<std::size_t>(op.tokens * op.hidden);
  return std::max<std::size_t>(1, (total + 2) / 3);
}

// cuBLASLt recommends 32 MiB of workspace on Hopper (cuBLAS docs, "cublasSetWorkspace").
constexpr std::size_t kLtWorkspaceBytes = 32u << 20;
// Rows of the embedding table we gather from (the real vocabulary is not needed: only the
// gathered rows are read, and a few thousand rows keep them out of L2 between steps).
constexpr int kEmbeddingRows = 4096;
constexpr float kRmsEps = 1e-5f;

// The host's wait for `done` as an engine's host waits for its accepted tokens (a spinning
// poll, the lowest-latency wait), bounded: a peer that never arrives fails the replay instead
// of hanging it.
void wait_on_host(cudaEvent_t done, double timeout_s, const std::string& label) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const cudaError_t rc = cudaEventQuery(done);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) EAGLESIM_CUDA_CHECK(rc);
    if (std::chrono::steady_clock::now() > deadline)
      throw DeviceError(fmt::format("{}: the device did not reach the host synchronisation within {} s", label,
                                    timeout_s));
  }
}
std::size_t as_size(std::int64_t v) { return static_cast<std::size_t>(v); }

// A sampling op's rows per request: the trace's batch shares them out evenly (batch x verify
// tokens); rows the batch does not divide are one request's.
std::size_t rows_per_request(std::int64_t rows, int batch) {
  const std::size_t r = static_cast<std::size_t>(std::max<std::int64_t>(1, rows));
  const std::size_t b = static_cast<std::size_t>(std::max(1, batch));
  return r % b == 0 ? r / b : r;
}

}  // namespace

// How one matmul is run on this GPU (named by rank_program.hpp's private phases, as is ProgramPlan).
struct MatmulChoice {
  bool own_kernel = false;       // eaglesim's weight-only / grouped GEMM kernel over packed weights
  GroupedGemmPlan gemm;          // its plan
  std::size_t scale_offset = 0;  // its packed scales' offset in the op's region (after all experts' weights)
  std::size_t offsets_at = 0;    // grouped: where the op's expert offsets start in ProgramPlan::expert_offsets
  DType lt_dtype = DType::bf16;  // cuBLASLt operand type otherwise
  std::int64_t k_eff = 0;     // k given to the GEMM (differs when a stand-in keeps the byte count)
  std::size_t weight_bytes = 0;  // cuBLASLt: per expert; own kernel: the whole region
  // cuBLASLt's fp8 GEMM as engines run it (W8A8): e4m3 activations in x8 with their scales, the
  // rows quantised by the op's `act_quant_fp8` where the trace has one; the weights' scales after
  // the weights in the op's region (per-tensor: the program's unit scales).
  bool w8a8 = false;
  Fp8Scaling fp8_scaling = Fp8Scaling::tensor;
  std::size_t weight_scale_offset = 0;
  std::int64_t rows = 0;      // rows the GEMM computes (fp8_gemm_rows: the block mode's multiple of 4)
  std::string detail;
  std::string note;           // substitution to report, empty if none
};

// An `act_quant_fp8` op run as the fp8 activation quantisation kernel (cuda/ops/fp8_act_quant.hpp):
// bf16 x of rows x k into e4m3 x8 and the scales the GEMM after it reads, in that GEMM's mode (or,
// before a GEMM that reads bf16 — a grouped one, one on the weight-only kernels — in the
// program's mode, for its cost).
struct ActQuantRun {
  Fp8Scaling scaling = Fp8Scaling::block;
  int rows = 0, k = 0;
  bool feeds_gemm = false;
};

// A verify-attention plan with what it needs on the device: its workspace (work list, partials)
// and the per-request KV offsets and lengths.
struct VerifyAttentionRun {
  VerifyAttentionPlan plan;
  std::vector<std::int32_t> lengths;  // kv_indptr [batch + 1] then kv_len [batch]
  std::vector<std::uint32_t> mask;    // tree mask words [q_tokens]; empty: the causal chain
  DeviceBuffer workspace, device_lengths, device_mask;
};

// What the program needs to know before it allocates anything (pass 1), per op: how it runs and
// the bytes of its own region (weights, KV cache, norm weight, embedding table); over all ops,
// the shared scratch buffers' sizes (bytes; attention's partials in floats, ids in ints).
struct ProgramPlan {
  explicit ProgramPlan(std::size_t ops) : region_bytes(ops, 0), choice(ops), attention(ops), verify(ops, nullptr) {}
  std::vector<std::size_t> region_bytes;
  std::vector<MatmulChoice> choice;      // matmuls
  std::vector<AttentionPlan> attention;  // attention ops the verify-attention kernel does not take
  std::vector<VerifyAttentionRun*> verify;  // attention ops it takes (owned by RankProgram::verify_runs_)
  std::vector<int> expert_offsets;       // grouped ops on the grouped kernel, each [experts + 1]
  // Per-cycle ops: each op's own inputs (host data uploaded into RankProgram::cycle_inputs_),
  // and the shared scratch's sizes in elements.
  std::map<std::size_t, std::vector<std::int32_t>> cycle_inputs;
  std::size_t logits = 1, topk = 1, predict = 1, accept = 1, accepted = 1;
  std::size_t topk_workspace_bytes = 0;  // the most any topk_select or sampling op's top-k kernel needs
  std::size_t x = 256, x8 = 256, y = 256, z = 256, residual = 256, acc_floats = 1, ml_floats = 1, ids = 1;
  std::size_t x8_scales = 256;  // bytes of the fp8 activations' scales
  std::size_t moe_counters = 0, moe_partials = 0;  // the most any grouped-kernel plan needs of each
  std::map<std::size_t, ActQuantRun> act_quant;   // per `act_quant_fp8` op run as the quantisation kernel
};

namespace {

// A grouped GEMM's routed rows spread over its experts: `base` rows each, one more for the first
// `extra`; `rows_max` the most any expert gets.
struct ExpertRows {
  std::int64_t base, extra, rows_max;
};
ExpertRows expert_rows(const Op& op) {
  return {op.tokens / op.experts, op.tokens % op.experts, (op.tokens + op.experts - 1) / op.experts};
}

// The packed format eaglesim's GEMM kernels replay a weight dtype in; false when cuBLASLt runs it
// (dense bf16). int4 as group-32 (Kimi-K2's checkpoint), fp8 with 128x128 block scales
// (DeepSeek-V3 / Kimi-K2 fp8 checkpoints); expert weights of 16 bits as bf16.
bool own_weight_format(DType dtype, bool grouped, GemmWeightFormat& f) {
  switch (dtype) {
    case DType::int4: f = GemmWeightFormat::int4_g32; return true;
    case DType::fp8: f = GemmWeightFormat::fp8_block; return true;
    default: f = GemmWeightFormat::bf16; return grouped;
  }
}

// The plan of eaglesim's kernel for the op, or why it cannot run it (c.own_kernel says which).
std::string try_own_kernel(const Op& op, bool grouped, int cc, int sm_count, MatmulChoice& c) {
  GemmWeightFormat format;
  if (!own_weight_format(op.dtype, grouped, format)) return "bf16 weights";
  if (cc < 90) return fmt::format("the kernels need sm_90 (bulk copies), this GPU is sm_{}", cc);
  const std::int64_t rows = grouped ? op.tokens : op.m;
  if (!grouped && rows > kWeightOnlyMaxRows) return fmt::format("m > {}", kWeightOnlyMaxRows);
  if (rows > (1 << 30) || op.n > (1 << 30) || op.k > (1 << 30)) return "shape beyond int range";
  GroupedGemmShape shape;
  shape.format = format;
  shape.experts = grouped ? static_cast<int>(op.experts) : 1;
  shape.n = static_cast<int>(op.n);
  shape.k = static_cast<int>(op.k);
  shape.max_rows = static_cast<int>(rows);
  shape.rows_per_expert = static_cast<int>(grouped ? expert_rows(op).rows_max : rows);
  // Dense int4 on wgmma when asked for (sm_90a code: compute capability 9.0 only).
  shape.wgmma = !grouped && op.dtype == DType::int4 && cc == 90 && int4_wgmma_requested() ? 1 : 0;
  if (std::string why = grouped_gemm_unsupported_reason(shape); !why.empty()) return why;
  try {
    c.gemm = plan_grouped_gemm(shape, sm_count);
  } catch (const InputError& e) {
    return e.what();
  }
  c.own_kernel = true;
  const std::size_t weights = as_size(c.gemm.weight_bytes_per_expert) * as_size(shape.experts);
  c.scale_offset = align256(weights);
  c.weight_bytes = c.scale_offset + as_size(c.gemm.scale_bytes_per_expert) * as_size(shape.experts);
  c.detail = fmt::format("{} kernel {}", grouped ? "grouped MoE GEMM" : "weight-only GEMM", c.gemm.variant);
  switch (op.dtype) {
    case DType::int4:
      c.note = "int4 GEMMs replayed by eaglesim's weight-only / grouped MoE GEMM kernels over packed int4 weights "
               "plus one bf16 scale per 32 weights (12.5% more bytes than the trace's int4 weight bytes)";
      break;
    case DType::fp8:
      c.note = "fp8 GEMMs replayed by eaglesim's weight-only / grouped MoE GEMM kernels over packed e4m3 weights "
               "plus one fp32 scale per 128x128 block";
      break;
    case DType::fp32: c.note = "fp32-weight expert GEMMs replayed as bf16 (half the weight bytes)"; break;
    default: break;
  }
  return {};
}

// cuBLASLt: bf16 GEMMs, and the GEMMs eaglesim's kernels do not take (`why`), as stand-ins of the
// same weight bytes where cuBLASLt has no such weights.
MatmulChoice choose_lt_matmul(std::int64_t n, std::int64_t k, DType dtype, bool has_fp8, int cc, const std::string& why) {
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
      if (has_fp8 && (k / 2) % 16 == 0) {
        c.lt_dtype = DType::fp8;
        c.k_eff = k / 2;
        c.detail = "cublasLt fp8, k/2 (int4 stand-in, same weight bytes)";
        c.note = fmt::format("cuBLASLt has no int4 weights: int4 GEMMs eaglesim's weight-only kernel does not take "
                             "({}) replayed as fp8 GEMMs of the same weight bytes (k/2, half the FLOPs)", why);
      } else {
        c.lt_dtype = DType::bf16;
        c.k_eff = std::max<std::int64_t>(8, k / 4);
        c.detail = "cublasLt bf16, k/4 (int4 stand-in, same weight bytes)";
        c.note = fmt::format("int4 GEMMs without a usable int4 kernel ({}) or fp8 replayed as bf16 GEMMs of the same "
                             "weight bytes (k/4)", why);
      }
      break;
  }
  c.weight_bytes = as_size(n) * as_size(c.k_eff) * (c.lt_dtype == DType::fp8 ? 1 : 2);
  return c;
}

// cuBLASLt's fp8 GEMM over e4m3 activations (W8A8): the weights, then their scales on a
// 256-byte boundary (none per tensor: the program's unit scales serve).
MatmulChoice choose_lt_fp8(const Op& op, Fp8Scaling scaling) {
  MatmulChoice c;
  c.w8a8 = true;
  c.fp8_scaling = scaling;
  c.lt_dtype = DType::fp8;
  c.k_eff = op.k;
  c.rows = fp8_gemm_rows(scaling, op.m);
  const std::size_t weights = as_size(op.n) * as_size(op.k);
  c.weight_scale_offset = align256(weights);
  c.weight_bytes = scaling == Fp8Scaling::tensor
                       ? weights
                       : c.weight_scale_offset + fp8_weight_scale_floats(scaling, op.n, op.k) * sizeof(float);
  c.detail = fmt::format("cublasLt fp8 W8A8 ({})", describe_scaling(scaling));
  return c;
}

// The next matmul op after op i, or the step's size.
std::size_t next_matmul(const Step& step, std::size_t i) {
  for (std::size_t j = i + 1; j < step.ops.size(); ++j)
    if (step.ops[j].is_matmul()) return j;
  return step.ops.size();
}

constexpr const char* kActQuantName = "act_quant_fp8";

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

// The op's caches as the replay lays them out: every request's positions packed one after the
// other (kv_len is their total), K first, then V (MLA: the one latent cache).
AttentionShape packed_cache_shape(const Op& op) {
  AttentionShape s = attention_shape(op);
  s.kv_len = static_cast<int>(std::min<double>(op.kv_len_total(), std::numeric_limits<int>::max()));
  return s;
}
std::size_t v_cache_offset(const Op& op) {
  const AttentionShape s = packed_cache_shape(op);
  return s.shared_kv ? 0 : kv_cache_bytes(s) / 2;
}

// Random packed weights and scales: every byte pattern is a valid packed weight set (the fp8 fill
// writes finite e4m3 values, never the NaN codes).
void fill_packed_weights(void* region, const MatmulChoice& c, std::uint64_t seed) {
  const GroupedGemmPlan& g = c.gemm;
  const std::size_t weights = as_size(g.weight_bytes_per_expert) * as_size(g.shape.experts);
  const std::size_t scales = as_size(g.scale_bytes_per_expert) * as_size(g.shape.experts);
  char* scale_base = static_cast<char*>(region) + c.scale_offset;
  switch (g.shape.format) {
    case GemmWeightFormat::bf16: fill_random(region, weights / 2, DType::bf16, seed, 0.05f, nullptr); break;
    case GemmWeightFormat::fp8_channel:
    case GemmWeightFormat::fp8_block:
      fill_random(region, weights, DType::fp8, seed, 0.5f, nullptr);
      fill_random(scale_base, scales / 4, DType::fp32, seed + 7, 0.02f, nullptr);
      break;
    case GemmWeightFormat::int4_g32:
    case GemmWeightFormat::int4_g128:
      fill_random(region, weights, DType::int4, seed, 0.f, nullptr);
      fill_random(scale_base, scales / 2, DType::bf16, seed + 7, 0.02f, nullptr);
      break;
  }
}

}  // namespace

void RankProgram::note(const std::string& text) {
  if (!text.empty() && std::find(notes_.begin(), notes_.end(), text) == notes_.end()) notes_.push_back(text);
}

void RankProgram::use_collective(const CollectiveUse& use) {
  if (std::find(collectives_.begin(), collectives_.end(), use) == collectives_.end()) collectives_.push_back(use);
}

const LtGemm& RankProgram::gemm_plan(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, const void* w,
                                     const void* x, void* y, Fp8Scaling scaling, const LtScales& scales) {
  auto key = std::make_tuple(m, n, k, static_cast<int>(dtype), static_cast<int>(scaling));
  auto it = gemms_.find(key);
  if (it != gemms_.end()) return *it->second;
  const float* a_scale = scales.weight ? scales.weight : fp8_scales_->a();
  const float* b_scale = scales.act ? scales.act : fp8_scales_->b();
  auto plan = std::make_unique<LtGemm>(lt_, blas_, m, n, k, dtype, kLtWorkspaceBytes, a_scale, b_scale, scaling);
  // The shape's fastest algorithm, timed on its first op's real buffers (setup, before capture).
  plan->tune(w, x, y, workspace_.get());
  return *gemms_.emplace(key, std::move(plan)).first->second;
}

// The phases, in this order because each needs what the one before made, and because the order
// of allocations decides where the weights land (the weight arena's placement, weight_arena.hpp):
//   open_device:   the GPU's properties, cuBLASLt and cuBLAS, the GEMM workspace and fp8 scales;
//   plan_step:     pass 1, per op how it runs and what memory it needs (nothing allocated yet,
//                  so a step the replay cannot run fails before it takes any memory);
//   allocate:      the shared scratch first, then the per-op regions in what memory is left;
//   fill_contents: random data everywhere (never zeros, which can run faster and hide bugs);
//   build_ops:     pass 2, one closure per op (a fused allreduce absorbs the two ops after it, a
//                  fused add + RMSNorm the RMSNorm after its residual add).
AllreduceComms one_comm_for_all(const Step& step, RankComm& comm, RankComm* fallback) {
  AllreduceComms c;
  c.fallback = fallback;
  c.per_op.assign(step.ops.size(), nullptr);
  for (std::size_t i = 0; i < step.ops.size(); ++i)
    if (step.ops[i].is_comm()) c.per_op[i] = &comm;
  return c;
}

RankProgram::RankProgram(const Step& step, int device, const AllreduceComms& comms, const ProgramOptions& opts)
    : device_(device), opts_(opts) {
  open_device();
  const std::size_t n_ops = step.ops.size();
  ops_.resize(n_ops);
  absorbed_.assign(n_ops, false);
  for (const Op& op : step.ops) reported_kinds_.push_back(op.kind);
  labels_.resize(n_ops);
  details_.resize(n_ops);
  recorded_.assign(n_ops, false);
  host_side_.assign(n_ops, false);
  if (opts.recorded_compute)
    for (std::size_t i = 0; i < n_ops; ++i) recorded_[i] = !step.ops[i].is_comm() && step.ops[i].us.has_value();
  const ProgramPlan plan = plan_step(step);
  allocate(plan);
  fill_contents(step, plan, opts.seed);
  build_ops(step, plan, comms, opts);
  EAGLESIM_CUDA_CHECK(cudaDeviceSynchronize());  // fills done before anything is timed
}

void RankProgram::open_device() {
  // The settings first: an unknown value fails before anything is made.
  fp8_path_ = fp8_gemm_path_from_env();
  fp8_scaling_ = fp8_scaling_from_env();
  cudaDeviceProp prop{};
  EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  sm_count_ = prop.multiProcessorCount;
  compute_capability_ = prop.major * 10 + prop.minor;
  has_fp8_ = compute_capability_ >= 89;  // fp8 tensor cores: Ada (8.9) and Hopper (9.0) onwards
  EAGLESIM_CUBLAS_CHECK(cublasLtCreate(&lt_));
  EAGLESIM_CUBLAS_CHECK(cublasCreate(&blas_));
  workspace_ = DeviceBuffer(kLtWorkspaceBytes);
  fp8_scales_.emplace();
  // cuBLASLt's per-channel and 128-block fp8 scale modes are Hopper's (compute capability 9.0);
  // elsewhere its fp8 GEMMs take per-tensor scales only.
  if (compute_capability_ != 90 && fp8_scaling_ != Fp8Scaling::tensor) {
    fp8_scaling_note_ = fmt::format("fp8 GEMMs on cuBLASLt with per-tensor scales: its {} mode ({}) needs "
                                    "compute capability 9.0, this GPU is sm_{}",
                                    to_string(fp8_scaling_), describe_scaling(fp8_scaling_), compute_capability_);
    fp8_scaling_ = Fp8Scaling::tensor;
  }
}

// ---------------------------------------------------------------- pass 1: the plan

ProgramPlan RankProgram::plan_step(const Step& step) {
  ProgramPlan plan(step.ops.size());
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    labels_[i] = op_label(i, op);
    // A recorded GEMM, attention or per-cycle op needs none of its weights, KV or logits: only
    // the spin kernel runs. Row-wise ops keep their small buffers, which a fused allreduce may
    // still use.
    if (recorded_[i] && (op.is_matmul() || op.kind == OpKind::attention || op.kind == OpKind::topk_select ||
                         op.kind == OpKind::tree_build || op.kind == OpKind::sampling || op.kind == OpKind::host_sync))
      continue;
    switch (op.kind) {
      case OpKind::gemm:
      case OpKind::lm_head: plan_matmul(i, op, plan); break;
      case OpKind::grouped_gemm: plan_grouped_matmul(i, op, plan); break;
      case OpKind::attention: plan_attention_op(i, op, plan); break;
      case OpKind::topk_select:
      case OpKind::tree_build:
      case OpKind::sampling:
      case OpKind::host_sync: plan_cycle_op(i, op, plan); break;
      default: plan_rowwise(i, op, plan); break;
    }
  }
  plan_act_quants(step, plan);
  return plan;
}

// Whether the dense fp8 op runs on cuBLASLt's fp8 GEMM (W8A8): by the rule the simulator's fits
// share (cost/low_bit_gemm_kernel.hpp) or as EAGLESIM_FP8_GEMM forces, where cuBLASLt takes the
// shape (else, noted, the weight-only kernels or the per-tensor GEMM run it as before).
bool RankProgram::fp8_on_cublas(const Op& op) {
  if (op.dtype != DType::fp8 || !has_fp8_) return false;
  bool want = false;
  switch (fp8_path_) {
    case Fp8GemmPath::weight_only: return false;
    case Fp8GemmPath::cublas: want = true; break;
    case Fp8GemmPath::rule: want = low_bit_gemm_kernel(op) == LowBitGemmKernel::cublas; break;
  }
  if (!want) return false;
  std::string why = fp8_lt_unsupported_reason(fp8_scaling_, op.m, op.n, op.k);
  if (why.empty()) {
    // Whether cuBLASLt proposes an algorithm for the shape in the mode, asked once per shape before
    // anything is allocated (the scale pointers are stand-ins: the heuristic does not read them).
    const auto key = std::make_tuple(op.m, op.n, op.k, static_cast<int>(fp8_scaling_));
    auto it = fp8_refusals_.find(key);
    if (it == fp8_refusals_.end()) {
      std::string refused;
      try {
        const LtGemm probe(lt_, nullptr, op.m, op.n, op.k, DType::fp8, kLtWorkspaceBytes, fp8_scales_->a(),
                           fp8_scales_->b(), fp8_scaling_);
      } catch (const std::runtime_error& e) {
        refused = e.what();
      }
      it = fp8_refusals_.emplace(key, refused).first;
    }
    why = it->second;
  }
  if (!why.empty()) {
    note(fmt::format("'{}' ({}): cuBLASLt's fp8 GEMM does not take it ({}); replayed as before", op.name,
                     op.shape_string(), why));
    return false;
  }
  note(fp8_scaling_note_);
  return true;
}

// The `act_quant_fp8` ops of an engine's trace as the quantisation kernel: into the fp8 GEMM
// after it where that runs on cuBLASLt (W8A8), else for its cost only (the GEMM after it reads
// bf16). Recorded ops and the pre-cuBLASLt replay (EAGLESIM_FP8_GEMM=weight_only) keep the
// byte-streaming stand-in of every elementwise op.
void RankProgram::plan_act_quants(const Step& step, ProgramPlan& plan) {
  if (fp8_path_ == Fp8GemmPath::weight_only || !has_fp8_) return;
  std::size_t fed = 0, alone = 0;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    const Op& op = step.ops[i];
    if (op.kind != OpKind::elementwise || op.name != kActQuantName || recorded_[i]) continue;
    if (op.tokens < 1 || op.hidden < 1 || op.hidden % 8 != 0 || op.tokens > (1 << 24) || op.hidden > (1 << 24))
      continue;
    ActQuantRun q;
    q.rows = static_cast<int>(op.tokens);
    q.k = static_cast<int>(op.hidden);
    q.scaling = fp8_scaling_;
    const std::size_t j = next_matmul(step, i);
    if (j < step.ops.size() && plan.choice[j].w8a8 && !recorded_[j] && step.ops[j].m == op.tokens &&
        step.ops[j].k == op.hidden) {
      q.scaling = plan.choice[j].fp8_scaling;
      q.feeds_gemm = true;
    }
    (q.feeds_gemm ? fed : alone)++;
    plan.x = std::max(plan.x, as_size(op.tokens) * as_size(op.hidden) * 2);
    plan.x8 = std::max(plan.x8, as_size(fp8_gemm_rows(q.scaling, op.tokens)) * as_size(op.hidden));
    plan.x8_scales = std::max(plan.x8_scales, fp8_act_scale_floats(q.scaling, op.tokens, op.hidden) * sizeof(float));
    plan.act_quant[i] = q;
  }
  if (fed + alone > 0)
    note(fmt::format("{} '{}' ops ran as the fp8 activation quantisation kernel ({}): {} into the cuBLASLt fp8 "
                     "GEMM after them, {} before a GEMM that reads bf16 (their cost only)",
                     fed + alone, kActQuantName, describe_scaling(fp8_scaling_), fed, alone));
}

// One weight region: packed weights and scales for eaglesim's kernel, n x k_eff for cuBLASLt;
// x/x8/y hold the activations of m rows.
void RankProgram::plan_matmul(std::size_t i, const Op& op, ProgramPlan& plan) {
  MatmulChoice& c = plan.choice[i];
  if (fp8_on_cublas(op)) {
    c = choose_lt_fp8(op, fp8_scaling_);
    note(fmt::format("dense fp8 GEMMs {} on cuBLASLt's fp8 GEMM as engines run them (W8A8, {}; {}={}, {}={})",
                     fp8_path_ == Fp8GemmPath::cublas ? "of every shape" : "the GEMV kernel does not take",
                     describe_scaling(c.fp8_scaling), kFp8GemmEnv, to_string(fp8_path_), kFp8ScalingEnv,
                     to_string(c.fp8_scaling)));
    plan.x8_scales = std::max(plan.x8_scales, fp8_act_scale_floats(c.fp8_scaling, op.m, op.k) * sizeof(float));
  } else {
    const std::string why = try_own_kernel(op, false, compute_capability_, sm_count_, c);
    if (!c.own_kernel) c = choose_lt_matmul(op.n, op.k, op.dtype, has_fp8_, compute_capability_, why);
  }
  const std::int64_t rows = c.w8a8 ? c.rows : op.m;
  plan.region_bytes[i] = c.weight_bytes;
  plan.x = std::max(plan.x, as_size(op.m * op.k) * 2);
  plan.x8 = std::max(plan.x8, as_size(rows * c.k_eff));
  plan.y = std::max(plan.y, as_size(rows * op.n) * 2);
  if (c.own_kernel) {
    plan.moe_counters = std::max(plan.moe_counters, c.gemm.counter_bytes);
    plan.moe_partials = std::max(plan.moe_partials, c.gemm.partial_bytes);
  }
}

// eaglesim's grouped kernel: one region with every expert's packed weights, x/y the routed rows
// sorted by expert, the rows per expert as offsets. Otherwise (cuBLASLt, one GEMM per expert):
// one 256-byte-aligned weight region per expert and one 256-byte-aligned slot per expert in x/y
// (cuBLASLt's fast paths want aligned operands).
void RankProgram::plan_grouped_matmul(std::size_t i, const Op& op, ProgramPlan& plan) {
  const ExpertRows rows = expert_rows(op);
  MatmulChoice& c = plan.choice[i];
  const std::string why = try_own_kernel(op, true, compute_capability_, sm_count_, c);
  if (c.own_kernel) {
    plan.region_bytes[i] = c.weight_bytes;
    plan.x = std::max(plan.x, as_size(op.tokens * op.k) * 2);
    plan.y = std::max(plan.y, as_size(op.tokens * op.n) * 2);
    plan.moe_counters = std::max(plan.moe_counters, c.gemm.counter_bytes);
    plan.moe_partials = std::max(plan.moe_partials, c.gemm.partial_bytes);
    c.offsets_at = plan.expert_offsets.size();
    for (std::int64_t e = 0; e <= op.experts; ++e)
      plan.expert_offsets.push_back(static_cast<int>(e * rows.base + std::min(e, rows.extra)));
  } else {
    c = choose_lt_matmul(op.n, op.k, op.dtype, has_fp8_, compute_capability_, why);
    note(fmt::format("'{}': eaglesim's grouped MoE GEMM kernel does not take it ({}): one cuBLASLt GEMM per expert",
                     op.name, why));
    plan.region_bytes[i] = as_size(op.experts) * align256(c.weight_bytes);
    plan.x = std::max(plan.x, as_size(op.experts) * align256(as_size(rows.rows_max * op.k) * 2));
    plan.x8 = std::max(plan.x8, as_size(op.experts) * align256(as_size(rows.rows_max * c.k_eff)));
    plan.y = std::max(plan.y, as_size(op.experts) * align256(as_size(rows.rows_max * op.n) * 2));
  }
  if (op.tokens < op.experts)
    note(fmt::format("'{}': {} routed rows over {} experts: experts without rows are skipped", op.name, op.tokens,
                     op.experts));
}

// The draft tokens' mask words of an attention op: the chain (empty), the verify tree of the
// trace's speculative configuration (each token sees its ancestors and itself), or the draft's
// branches (each of the topk branches sees only itself besides the request's KV, which holds
// the branch's earlier drafts).
std::vector<std::uint32_t> RankProgram::mask_words(const Op& op, std::size_t i) const {
  switch (op.mask) {
    case AttentionMask::causal: return {};
    case AttentionMask::branches: {
      std::vector<std::uint32_t> w(as_size(op.q_tokens));
      for (std::size_t t = 0; t < w.size() && t < 32; ++t) w[t] = 1u << t;
      return w;
    }
    case AttentionMask::tree: {
      std::vector<int> parents = opts_.speculative ? opts_.speculative->parents : std::vector<int>{};
      if (static_cast<std::int64_t>(parents.size()) != op.q_tokens)
        for (const std::vector<int>& tree : opts_.verify_trees)
          if (static_cast<std::int64_t>(tree.size()) == op.q_tokens) {
            parents = tree;
            break;
          }
      if (static_cast<std::int64_t>(parents.size()) != op.q_tokens)
        throw InputError(fmt::format("{}: a tree mask needs meta.speculative.parents with one parent per query token "
                                     "({}), got {}", labels_[i], op.q_tokens, parents.size()));
      try {
        return tree_mask_from_parents(parents);
      } catch (const std::invalid_argument& e) {
        throw InputError(fmt::format("{}: meta.speculative.parents: {}", labels_[i], e.what()));
      }
    }
  }
  return {};
}

// The verify-attention kernel over the op's batch: request r's KV (kv_lens[r], or kv_len for
// every request) packed one after the other in one ragged cache, its q_tokens query tokens the
// last q_tokens of those positions, under the op's mask.
VerifyAttentionRun& RankProgram::verify_run(const Op& op, std::size_t i) {
  const VerifyAttentionShape shape = verify_attention_shape(op);
  // The kernel's cache offsets are 32-bit; a batch past them is far beyond any GPU's memory too.
  if (op.kv_len_total() > static_cast<double>(std::numeric_limits<std::int32_t>::max()))
    throw InputError(fmt::format("{}: {:.0f} KV positions over the batch: expected at most 2^31 - 1 (and a cache "
                                 "that fits the GPU)", labels_[i], op.kv_len_total()));
  const std::vector<std::int32_t> kv_len = verify_attention_kv_lens(op);
  const std::vector<std::uint32_t> mask = mask_words(op, i);
  std::vector<std::int64_t> key{static_cast<int>(shape.kind), shape.batch, shape.q_tokens, shape.heads,
                                shape.kv_heads, shape.head_dim_qk, shape.head_dim_v};
  key.insert(key.end(), kv_len.begin(), kv_len.end());
  key.push_back(-1);  // the mask words follow the lengths
  key.insert(key.end(), mask.begin(), mask.end());
  auto it = verify_runs_.find(key);
  if (it != verify_runs_.end()) return *it->second;
  VerifyAttentionDevice dev;
  dev.sms = sm_count_;
  auto run = std::make_unique<VerifyAttentionRun>();
  run->plan = plan_verify_attention(shape, kv_len, dev);
  run->lengths.push_back(0);
  for (std::int32_t len : kv_len) run->lengths.push_back(run->lengths.back() + len);
  run->lengths.insert(run->lengths.end(), kv_len.begin(), kv_len.end());
  run->mask = mask;
  return *verify_runs_.emplace(key, std::move(run)).first->second;
}

// The KV cache is the op's region: every request's K and V, packed. The verify-attention
// kernel's workspace is per plan; a single-request causal shape it does not take runs on the
// split-KV decode kernel, whose partials are shared scratch. An attention shape neither kernel
// takes fails here, before anything is allocated.
void RankProgram::plan_attention_op(std::size_t i, const Op& op, ProgramPlan& plan) {
  if (op.dtype == DType::fp8)
    throw InputError(fmt::format("{}: the CUDA backend cannot replay it: its KV cache is {} (the replay's attention "
                                 "kernels read a bf16 cache; the simulator prices an fp8 one)",
                                 labels_[i], to_string(op.dtype)));
  AttentionShape s = packed_cache_shape(op);
  const std::size_t requests = as_size(op.batch);
  plan.region_bytes[i] = kv_cache_bytes(s);
  plan.x = std::max(plan.x, requests * as_size(s.q_tokens) * s.heads * s.dk * 2);
  plan.y = std::max(plan.y, requests * as_size(s.q_tokens) * s.heads * s.dv * 2);
  std::string refused;
  try {
    plan.verify[i] = &verify_run(op, i);
    return;
  } catch (const std::invalid_argument& e) {
    refused = e.what();
  }
  if (requests != 1 || !op.kv_lens.empty() || op.mask != AttentionMask::causal)
    throw InputError(fmt::format("{}: the CUDA backend cannot replay it: {}", labels_[i], refused));
  s = attention_shape(op);
  const std::string why = attention_unsupported_reason(s);
  if (!why.empty())
    throw InputError(fmt::format("{}: the CUDA backend cannot replay it: verify-attention kernel: {}; split-KV "
                                 "decode kernel: {}", labels_[i], refused, why));
  note(fmt::format("'{}': the verify-attention kernel does not take it ({}): replayed by the split-KV decode kernel",
                   op.name, refused));
  plan.attention[i] = plan_attention(s, sm_count_);
  plan.acc_floats = std::max(plan.acc_floats, plan.attention[i].part_acc_floats);
  plan.ml_floats = std::max(plan.ml_floats, plan.attention[i].part_ml_floats);
}

// The per-cycle ops (trace version 2). Their data sizes come from the op and the trace's batch
// and speculative configuration (ProgramOptions):
//   topk_select: fp32 logits [rows, vocab] (shared scratch) -> ids and probabilities [rows, topk];
//   tree_build:  per request the candidates' scores and parents -> the verify tree's arrays;
//   sampling:    the target's argmax over logits [rows, vocab], then the greedy acceptance walk
//                over the verify tree (rows = batch x tokens per request) -> accepted lengths;
//   host_sync:   the accepted lengths copied to pinned host memory and waited for, from the host.
void RankProgram::plan_cycle_op(std::size_t i, const Op& op, ProgramPlan& plan) {
  const std::size_t requests = as_size(std::max(1, opts_.batch));
  switch (op.kind) {
    case OpKind::topk_select:
      if (op.topk < 1 || op.topk > kTopkSelectMax || op.topk > op.vocab)
        throw InputError(fmt::format("{}: the CUDA backend's top-k kernel keeps 1 to min({}, vocab) tokens per row, got "
                                     "topk = {}", labels_[i], kTopkSelectMax, op.topk));
      plan.logits = std::max(plan.logits, as_size(op.rows) * as_size(op.vocab));
      plan.topk = std::max(plan.topk, as_size(op.rows) * as_size(op.topk));
      plan.topk_workspace_bytes = std::max(plan.topk_workspace_bytes,
                                           topk_select_workspace_bytes(op.rows, op.vocab, op.topk));
      break;
    case OpKind::tree_build: {
      const std::size_t b = as_size(op.batch), c = as_size(op.candidates), d = as_size(op.tokens);
      const std::size_t words = (d + 31) / 32;
      if (d < 1 || d - 1 > c)
        throw InputError(fmt::format("{}: tree building picks tokens - 1 of the candidates: expected 1 <= tokens <= "
                                     "candidates + 1 = {}, got {}", labels_[i], c + 1, d));
      const int steps = opts_.speculative ? opts_.speculative->num_steps : 0;
      const int topk = opts_.speculative ? opts_.speculative->eagle_topk : 0;
      const DraftCandidates cand = random_draft_candidates(static_cast<int>(b), static_cast<int>(c), steps, topk,
                                                           opts_.seed * 7919 + i);
      std::vector<std::int32_t>& data = plan.cycle_inputs[i];
      data.resize(3 * b * c + 4 * b * d + b * d * words, 0);
      std::memcpy(data.data(), cand.scores.data(), b * c * sizeof(float));
      std::copy(cand.parent.begin(), cand.parent.end(), data.begin() + static_cast<std::ptrdiff_t>(b * c));
      break;
    }
    case OpKind::sampling: {
      const std::size_t rows = as_size(op.rows);
      const std::size_t per_request = rows_per_request(op.rows, opts_.batch);
      const std::size_t reqs = std::max<std::size_t>(1, rows / per_request);
      std::vector<int> parents(per_request);
      for (std::size_t t = 0; t < per_request; ++t) parents[t] = static_cast<int>(t) - 1;  // the chain
      if (opts_.speculative && opts_.speculative->parents.size() == per_request) parents = opts_.speculative->parents;
      std::vector<std::int32_t> first, next;
      child_lists(parents, first, next);
      std::vector<std::int32_t>& data = plan.cycle_inputs[i];
      // The drafts' tokens: a fixed spread over the vocabulary (the argmax of random logits seldom
      // matches it, so most walks stop near the root; the walk costs little either way).
      data.resize(rows + 2 * per_request);
      for (std::size_t r = 0; r < rows; ++r) data[r] = static_cast<std::int32_t>((r * 2654435761u) % as_size(op.vocab));
      std::copy(first.begin(), first.end(), data.begin() + static_cast<std::ptrdiff_t>(rows));
      std::copy(next.begin(), next.end(), data.begin() + static_cast<std::ptrdiff_t>(rows + per_request));
      plan.logits = std::max(plan.logits, rows * as_size(op.vocab));
      plan.predict = std::max(plan.predict, rows);
      plan.topk_workspace_bytes = std::max(plan.topk_workspace_bytes,
                                           topk_select_workspace_bytes(op.rows, op.vocab, 1));
      plan.accepted = std::max(plan.accepted, rows);
      plan.accept = std::max(plan.accept, reqs);
      break;
    }
    case OpKind::host_sync:
      host_side_[i] = !recorded_[i];
      plan.accept = std::max(plan.accept, requests);
      break;
    default:
      break;
  }
}

void RankProgram::build_cycle_op(std::size_t i, const Op& op) {
  std::string& detail = details_[i];
  switch (op.kind) {
    case OpKind::topk_select: {
      const float* logits = logits_.as<float>();
      std::int32_t* ids = topk_ids_.as<std::int32_t>();
      float* probs = topk_probs_.as<float>();
      void* workspace = topk_workspace_.get();
      const int rows = op.rows, vocab = op.vocab, k = op.topk;
      const TopkSplit split = topk_select_split(rows, vocab);
      detail = split.chunks > 1 ? fmt::format("top-k kernel (softmax probabilities, {} chunks per row, last block merges)",
                                              split.chunks)
                                : std::string("top-k kernel (softmax probabilities, block per row)");
      ops_[i] = [=](cudaStream_t s) { launch_topk_select(logits, rows, vocab, k, ids, probs, workspace, s); };
      break;
    }
    case OpKind::tree_build: {
      const int b = op.batch, c = static_cast<int>(op.candidates), d = static_cast<int>(op.tokens);
      const std::size_t bc = as_size(b) * as_size(c), bd = as_size(b) * as_size(d);
      std::int32_t* base = cycle_inputs_.at(i).as<std::int32_t>();
      const float* scores = reinterpret_cast<const float*>(base);
      const std::int32_t* cand_parent = base + bc;
      std::int32_t* node_of = base + 2 * bc;
      TreeBuildOutputs out;
      out.parent = base + 3 * bc;
      out.depth = out.parent + bd;
      out.first_child = out.depth + bd;
      out.next_sibling = out.first_child + bd;
      out.mask = reinterpret_cast<std::uint32_t*>(out.next_sibling + bd);
      detail = "tree-build kernel (block per request)";
      ops_[i] = [=](cudaStream_t s) { launch_tree_build(scores, cand_parent, b, c, d, node_of, out, s); };
      break;
    }
    case OpKind::sampling: {
      const int rows = op.rows, vocab = op.vocab;
      const int per_request = static_cast<int>(rows_per_request(op.rows, opts_.batch));
      const int reqs = rows / per_request;
      const float* logits = logits_.as<float>();
      std::int32_t* predict = predict_.as<std::int32_t>();
      const std::int32_t* draft = cycle_inputs_.at(i).as<std::int32_t>();
      const std::int32_t* first = draft + rows;
      const std::int32_t* next = first + per_request;
      std::int32_t* accept_len = accept_len_.as<std::int32_t>();
      std::int32_t* accepted = accepted_.as<std::int32_t>();
      void* workspace = topk_workspace_.get();
      detail = fmt::format("argmax kernel + greedy tree acceptance ({} requests x {} tokens)", reqs, per_request);
      ops_[i] = [=](cudaStream_t s) {
        launch_topk_select(logits, rows, vocab, 1, predict, nullptr, workspace, s);
        launch_greedy_verify(draft, predict, first, next, reqs, per_request, accept_len, accepted, s);
      };
      break;
    }
    case OpKind::host_sync: {
      const std::size_t bytes = as_size(std::max(1, opts_.batch)) * sizeof(std::int32_t);
      const void* src = accept_len_.get();
      void* dst = host_accept_len_.get();
      cudaEvent_t done = host_sync_done_.get();
      const double timeout_s = opts_.host_sync_timeout_s;
      const std::string label = labels_[i];
      detail = "accepted lengths copied to pinned host memory, the host waits (outside the graphs)";
      ops_[i] = [=](cudaStream_t s) {
        EAGLESIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
        EAGLESIM_CUDA_CHECK(cudaEventRecord(done, s));
        wait_on_host(done, timeout_s, label);
      };
      break;
    }
    default:
      break;
  }
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
      try {
        // A width the kernels do not take fails here (a recorded one runs as a timed kernel).
        if (!recorded_[i]) (void)row_norm_geometry(op.tokens, op.hidden, true);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: the CUDA backend cannot replay it: {}", labels_[i], e.what()));
      }
      plan.region_bytes[i] = as_size(op.hidden) * 2;
      plan.x = std::max(plan.x, as_size(op.tokens * op.hidden) * 2);
      plan.y = std::max(plan.y, as_size(op.tokens * op.hidden) * 2);
      break;
    case OpKind::residual_add:
      plan.x = std::max(plan.x, as_size(op.tokens * op.hidden) * 2);
      plan.residual = std::max(plan.residual, as_size(op.tokens * op.hidden) * 2);
      break;
    case OpKind::elementwise:
      plan.x = std::max(plan.x, elementwise_stream_elements(op) * 2);
      plan.residual = std::max(plan.residual, elementwise_stream_elements(op) * 2);
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
  {
    std::size_t free_bytes = 0, total_bytes = 0;
    EAGLESIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    check_regions_fit(plan, free_bytes);
  }
  x_ = DeviceBuffer(plan.x);
  x8_ = DeviceBuffer(plan.x8);
  x8_scales_ = DeviceBuffer(plan.x8_scales);
  y_ = DeviceBuffer(plan.y);
  z_ = DeviceBuffer(plan.z);
  residual_ = DeviceBuffer(plan.residual);
  part_acc_ = DeviceBuffer(plan.acc_floats * sizeof(float));
  part_ml_ = DeviceBuffer(plan.ml_floats * sizeof(float));
  ids_ = DeviceBuffer(plan.ids * sizeof(int));
  moe_counter_bytes_ = plan.moe_counters;
  moe_workspace_ = DeviceBuffer(std::max<std::size_t>(256, plan.moe_counters + plan.moe_partials));
  expert_offsets_ = DeviceBuffer(std::max<std::size_t>(1, plan.expert_offsets.size()) * sizeof(int));
  for (auto& entry : verify_runs_) {
    VerifyAttentionRun* run = entry.second.get();
    run->workspace = DeviceBuffer(std::max<std::size_t>(256, run->plan.workspace_bytes));
    run->device_lengths = DeviceBuffer(run->lengths.size() * sizeof(std::int32_t));
    run->device_mask = DeviceBuffer(std::max<std::size_t>(1, run->mask.size()) * sizeof(std::uint32_t));
  }
  logits_ = DeviceBuffer(plan.logits * sizeof(float));
  topk_ids_ = DeviceBuffer(plan.topk * sizeof(std::int32_t));
  topk_probs_ = DeviceBuffer(plan.topk * sizeof(float));
  // Zeroed: the top-k kernel's per-row counters start at zero (each launch leaves them so).
  topk_workspace_ = DeviceBuffer::zeroed(device_, std::max<std::size_t>(256, plan.topk_workspace_bytes));
  predict_ = DeviceBuffer(plan.predict * sizeof(std::int32_t));
  accept_len_ = DeviceBuffer(plan.accept * sizeof(std::int32_t));
  accepted_ = DeviceBuffer(plan.accepted * sizeof(std::int32_t));
  EAGLESIM_CUDA_CHECK(cudaMallocHost(host_accept_len_.out(), plan.accept * sizeof(std::int32_t)));
  for (const auto& [i, data] : plan.cycle_inputs) cycle_inputs_[i] = DeviceBuffer(data.size() * sizeof(std::int32_t));
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
  // Scales of a size a GEMM without a quantisation op before it reads as they are.
  fill_random(x8_scales_.get(), plan.x8_scales / sizeof(float), DType::fp32, seed + 9, 0.02f, nullptr);
  fill_random(y_.get(), plan.y / 2, DType::bf16, seed + 3, 1.f, nullptr);
  fill_random(z_.get(), plan.z / 2, DType::bf16, seed + 4, 1.f, nullptr);
  fill_random(residual_.get(), plan.residual / 2, DType::bf16, seed + 5, 1.f, nullptr);
  fill_random_ids(ids_.as<int>(), plan.ids, kEmbeddingRows, seed + 6, nullptr);
  // The grouped kernels' counters start at zero and every launch leaves them so.
  EAGLESIM_CUDA_CHECK(cudaMemset(moe_workspace_.get(), 0, moe_workspace_.bytes()));
  if (!plan.expert_offsets.empty())
    EAGLESIM_CUDA_CHECK(cudaMemcpy(expert_offsets_.get(), plan.expert_offsets.data(),
                                   plan.expert_offsets.size() * sizeof(int), cudaMemcpyHostToDevice));
  for (auto& entry : verify_runs_) {
    const VerifyAttentionRun* run = entry.second.get();
    EAGLESIM_CUDA_CHECK(cudaMemcpy(run->device_lengths.get(), run->lengths.data(),
                                   run->lengths.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice));
    if (!run->mask.empty())
      EAGLESIM_CUDA_CHECK(cudaMemcpy(run->device_mask.get(), run->mask.data(), run->mask.size() * sizeof(std::uint32_t),
                                     cudaMemcpyHostToDevice));
    EAGLESIM_CUDA_CHECK(static_cast<cudaError_t>(verify_attention_upload(run->plan, run->workspace.get(), nullptr)));
  }
  // host_sync may copy the accepted lengths before any sampling wrote them (a step without one).
  EAGLESIM_CUDA_CHECK(cudaMemset(accept_len_.get(), 0, accept_len_.bytes()));
  // Logits of a few units: softmax probabilities spread over many tokens, as a draft's are.
  fill_random(logits_.get(), plan.logits, DType::fp32, seed + 8, 4.f, nullptr);
  for (const auto& [i, data] : plan.cycle_inputs)
    EAGLESIM_CUDA_CHECK(cudaMemcpy(cycle_inputs_.at(i).get(), data.data(), data.size() * sizeof(std::int32_t),
                                   cudaMemcpyHostToDevice));
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    if (plan.region_bytes[i] == 0) continue;
    const std::uint64_t s = seed + 1000 + i;
    void* r = arena_.region(i);
    const Op& op = step.ops[i];
    if (op.is_matmul() && plan.choice[i].own_kernel) {
      fill_packed_weights(r, plan.choice[i], s);
    } else if (op.is_matmul()) {
      const MatmulChoice& c = plan.choice[i];
      const std::size_t experts = op.kind == OpKind::grouped_gemm ? as_size(op.experts) : 1;
      const std::size_t stride = op.kind == OpKind::grouped_gemm ? align256(c.weight_bytes) : c.weight_bytes;
      for (std::size_t e = 0; e < experts; ++e) {
        char* w = static_cast<char*>(r) + e * stride;
        fill_random(w, as_size(op.n) * as_size(c.k_eff), c.lt_dtype, s + e, c.lt_dtype == DType::fp8 ? 0.5f : 0.05f,
                    nullptr);
      }
      if (c.w8a8 && c.weight_bytes > c.weight_scale_offset)
        fill_random(static_cast<char*>(r) + c.weight_scale_offset, (c.weight_bytes - c.weight_scale_offset) / sizeof(float),
                    DType::fp32, s + 7, 0.02f, nullptr);
    } else {
      fill_random(r, plan.region_bytes[i] / 2, DType::bf16, s, 1.f, nullptr);
    }
  }
}

// ---------------------------------------------------------------- pass 2: the closures

void RankProgram::build_ops(const Step& step, const ProgramPlan& plan, const AllreduceComms& comms,
                            const ProgramOptions& opts) {
  std::size_t fused_norms = 0, recorded = 0, ours = 0;
  std::map<std::string, std::size_t> fused;  // per strategy: triples run as one kernel
  const bool any_recorded = std::find(recorded_.begin(), recorded_.end(), true) != recorded_.end();
  if (any_recorded) spin_boundary_us_ = spin_boundary_us(device_);
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    if (absorbed_[i]) continue;
    const Op& op = step.ops[i];
    if (recorded_[i]) {
      build_recorded(i, *op.us);
      ++recorded;
      continue;
    }
    if (!op.is_comm() && op.kind != OpKind::other) ++ours;
    if (auto q = plan.act_quant.find(i); q != plan.act_quant.end()) {
      build_act_quant(i, q->second);
      continue;
    }
    switch (op.kind) {
      case OpKind::gemm:
      case OpKind::lm_head:
      case OpKind::grouped_gemm: build_matmul(i, op, plan.choice[i]); break;
      case OpKind::attention: build_attention(i, op, plan); break;
      case OpKind::topk_select:
      case OpKind::tree_build:
      case OpKind::sampling:
      case OpKind::host_sync: build_cycle_op(i, op); break;
      case OpKind::allreduce: {
        RankComm* comm = i < comms.per_op.size() ? comms.per_op[i] : nullptr;
        if (!comm) throw DeviceError(fmt::format("{}: no communicator for this allreduce", labels_[i]));
        if (build_allreduce(i, step, *comm, comms.fallback, opts.skip_allreduces)) ++fused[comm->strategy()];
        break;
      }
      case OpKind::residual_add:
        if (opts.fuse_add_norm && build_add_rmsnorm(i, step)) ++fused_norms;
        else build_rowwise(i, op);
        break;
      default: build_rowwise(i, op); break;
    }
  }
  for (const auto& [strategy, count] : fused)
    note(fmt::format("{} allreduce + residual add + RMSNorm triples ran as one {} kernel each", count, strategy));
  if (fused_norms > 0)
    note(fmt::format("{} residual add + RMSNorm pairs ran as one fused add + RMSNorm kernel each (SGLang's and "
                     "vLLM's fused_add_rmsnorm)", fused_norms));
  if (recorded > 0)
    note(fmt::format("compute: {} ops ran as timed kernels of their recorded durations{} ({}), each "
                     "shortened by the {:.2f} us a kernel boundary costs on this GPU so that they add up to the "
                     "recording's; only the allreduces ran for real",
                     recorded, ours > 0 ? fmt::format(", {} as eaglesim's kernels", ours) : "",
                     setting_name(Setting::op_times), spin_boundary_us_));
  else if (ours > 0)
    note(fmt::format("compute: eaglesim's kernels ({} measured runs an imported trace's recorded durations instead)",
                     setting_name(Setting::op_times)));
}

// A compute op replayed as its recorded duration: the engine's kernel as the profile saw it.
void RankProgram::build_recorded(std::size_t i, double us) {
  details_[i] = fmt::format("recorded {:.1f} us (timed kernel)", us);
  const double spin_us = std::max(0.0, us - spin_boundary_us_);
  ops_[i] = [spin_us](cudaStream_t s) { launch_spin(spin_us, s); };
}

// What one timed kernel costs beyond the time it spins, back to back in a CUDA graph (launch,
// block start, the globaltimer's granularity): a graph of kSpins zero-length spins, best of a
// few replays, per kernel. A recorded duration already holds its kernel's boundary. A property
// of the device, so measured once per device in the process.
double spin_boundary_us(int device) {
  static std::mutex mutex;
  static std::map<int, double> measured;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = measured.find(device); it != measured.end()) return it->second;
  constexpr int kSpins = 64, kReplays = 5;
  const Stream stream;
  const CudaGraph graph = CudaGraph::capture(stream.get(), [](cudaStream_t s) {
    for (int r = 0; r < kSpins; ++r) launch_spin(0.0, s);
  });
  GraphTimer timer("the timed-kernel boundary", 0.0, kNoDeadline);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < kReplays; ++r) {
    timer.launch(graph, stream.get());
    best = std::min(best, timer.finish("zero-length timed kernels"));
  }
  return measured[device] = best / kSpins;
}

RankProgram::AttentionIo RankProgram::attention_io(std::size_t i) const {
  const auto it = attention_io_.find(i);
  if (it == attention_io_.end()) throw std::logic_error("attention_io: op is not a verify-attention op");
  return it->second;
}

// One op's region larger than the arena's budget cannot be replayed at all (the arena reuses
// memory between ops, not within one): an attention op's KV cache holds every request's
// positions, so a large batch at a long context is what reaches it.
void RankProgram::check_regions_fit(const ProgramPlan& plan, std::size_t free_bytes) const {
  const double budget = 0.8 * static_cast<double>(free_bytes);
  for (std::size_t i = 0; i < plan.region_bytes.size(); ++i)
    if (static_cast<double>(plan.region_bytes[i]) > budget)
      throw InputError(fmt::format("{}: needs {:.2f} GiB of {} on one GPU, more than 80% of its free memory "
                                   "({:.2f} GiB): expected a smaller batch or KV length (meta.batch, kv_lens)",
                                   labels_[i], plan.region_bytes[i] / 1073741824.0,
                                   plan.verify[i] ? "KV cache" : "weights or KV cache",
                                   free_bytes / 1073741824.0));
}

// A GEMM or grouped GEMM as one launch of eaglesim's kernel, or on cuBLASLt (a grouped one as one
// GEMM per expert with rows).
void RankProgram::build_matmul(std::size_t i, const Op& op, const MatmulChoice& c) {
  note(c.note);
  std::string& detail = details_[i];
  detail = c.detail;
  const bool grouped = op.kind == OpKind::grouped_gemm;
  const ExpertRows rows = grouped ? expert_rows(op) : ExpertRows{op.m, 0, op.m};
  if (grouped) detail += fmt::format(", {} experts x {}-{} rows", op.experts, rows.base, rows.base + (rows.extra ? 1 : 0));
  if (c.own_kernel) {
    GroupedGemmArgs args;
    args.x = x_.get();
    args.expert_offsets = grouped ? expert_offsets_.as<int>() + c.offsets_at : nullptr;
    args.rows = static_cast<int>(grouped ? op.tokens : op.m);
    args.weights = arena_.region(i);
    if (c.gemm.shape.format != GemmWeightFormat::bf16)
      args.scales = static_cast<const char*>(arena_.region(i)) + c.scale_offset;
    args.y = y_.get();
    // Every plan's counters end where the shared partials begin, so the counters of one plan
    // never overlap another plan's partials (which are not zero between launches).
    void* ws = moe_workspace_.as<char>() + (moe_counter_bytes_ - c.gemm.counter_bytes);
    prepare_grouped_gemm(c.gemm);
    const GroupedGemmPlan gplan = c.gemm;
    if (gplan.pdl || gplan.gemv_pdl) {
      const GroupedGemmPlan waiting = without_early_launch(gplan, sm_count_);
      prepare_grouped_gemm(waiting);
      ops_[i] = [this, gplan, waiting, args, ws](cudaStream_t s) {
        launch_grouped_gemm(early_launch_ ? gplan : waiting, args, ws, s);
      };
      return;
    }
    ops_[i] = [gplan, args, ws](cudaStream_t s) { launch_grouped_gemm(gplan, args, ws, s); };
    return;
  }
  char* xb = x_.as<char>();
  char* x8b = x8_.as<char>();
  char* yb = y_.as<char>();
  void* ws = workspace_.get();
  if (c.w8a8) {
    char* w = static_cast<char*>(arena_.region(i));
    const bool per_tensor = c.fp8_scaling == Fp8Scaling::tensor;
    const LtScales scales{per_tensor ? fp8_scales_->a() : reinterpret_cast<const float*>(w + c.weight_scale_offset),
                          x8_scales_.as<const float>()};
    const LtGemm* plan = &gemm_plan(op.m, op.n, op.k, DType::fp8, w, x8b, yb, c.fp8_scaling, scales);
    detail += ": " + plan->candidate(plan->chosen()).name;
    if (plan->rows() != op.m) detail += fmt::format(" ({} rows: the mode's multiple of 4)", plan->rows());
    ops_[i] = [plan, w, x8b, yb, ws, scales](cudaStream_t s) { plan->run(w, x8b, yb, ws, s, scales); };
    return;
  }
  const std::int64_t experts = grouped ? op.experts : 1;
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
    const char* x = c.lt_dtype == DType::fp8 ? x8b + as_size(e) * x8_slot : xb + as_size(e) * x_slot;
    const LtGemm* plan = &gemm_plan(m, op.n, c.k_eff, c.lt_dtype, w, x, y);
    if (experts == 1) detail += ": " + plan->candidate(plan->chosen()).name;
    parts.push_back([=](cudaStream_t s) { plan->run(w, x, y, ws, s); });
  }
  if (parts.size() == 1) ops_[i] = parts[0];
  else ops_[i] = [parts](cudaStream_t s) { for (const auto& p : parts) p(s); };
}

void RankProgram::build_attention(std::size_t i, const Op& op, const ProgramPlan& program_plan) {
  const AttentionShape shape = attention_shape(op);
  const char* cache = static_cast<const char*>(arena_.region(i));
  const char* kc = cache;
  const char* vc = cache + v_cache_offset(op);
  char* xb = x_.as<char>();
  char* yb = y_.as<char>();
  if (const VerifyAttentionRun* run = program_plan.verify[i]) {
    const VerifyAttentionPlan* vplan = &run->plan;
    VerifyAttentionParams p;
    p.q = xb;
    p.k = kc;
    p.v = vc;  // MLA: the K rows (v_cache_offset is 0)
    p.out = yb;
    p.kv_indptr = run->device_lengths.as<std::int32_t>();
    p.kv_len = p.kv_indptr + (run->lengths.size() - as_size(vplan->shape.batch));
    if (!run->mask.empty()) {
      p.mask_kind = AttentionMaskKind::tree;
      p.mask = run->device_mask.as<std::uint32_t>();
    }
    if (resolve_verify_attention_params(vplan->shape, p) != VerifyAttentionCheck::ok)
      throw InputError(fmt::format("{}: the verify-attention kernel refuses the replay's buffers (alignment)", labels_[i]));
    AttentionIo& io = attention_io_[i];
    io.q = xb;
    io.k = kc;
    io.v = vc;
    io.out = yb;
    io.kv_len.assign(run->lengths.begin() + 1 + vplan->shape.batch, run->lengths.end());
    io.mask = run->mask;
    void* ws = run->workspace.get();
    details_[i] = fmt::format("verify-attention kernel {}, {} request{}, {} mask, {} splits of {} (first request)",
                              variant_name(vplan->kernel.variant), vplan->shape.batch, vplan->shape.batch == 1 ? "" : "s",
                              to_string(op.mask), vplan->splits_per_request[0], vplan->chunk_tokens);
    ops_[i] = [this, p, vplan, ws](cudaStream_t s) {
      VerifyAttentionLaunchOptions launch;
      launch.early_start = early_launch_;
      EAGLESIM_CUDA_CHECK(static_cast<cudaError_t>(verify_attention_launch(p, *vplan, ws, s, launch)));
    };
    return;
  }
  const AttentionPlan& plan = program_plan.attention[i];
  const std::int64_t pitch = shape.dk;
  float* acc = part_acc_.as<float>();
  float* ml = part_ml_.as<float>();
  details_[i] = fmt::format("split-KV decode kernel, {} splits of {}", plan.splits, plan.split_len);
  ops_[i] = [=](cudaStream_t s) { launch_attention(shape, plan, xb, kc, vc, pitch, pitch, acc, ml, yb, s); };
}

// The rank's allreduce (or NCCL's for messages larger than its buffers). When the strategy has a
// fused kernel and the next two ops are the residual add + RMSNorm of the same rows, all three
// run as that one kernel and the two are absorbed (true returned).
bool RankProgram::build_allreduce(std::size_t i, const Step& step, RankComm& comm, RankComm* fallback,
                                  bool skip_allreduces) {
  const bool can_fuse = comm.supports_fused();
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

// A residual add whose next op is the RMSNorm of the same rows (fusable_add_norm, the simulator's
// rule; not absorbed into a fused allreduce before it, nor replayed as its recorded duration):
// both as one fused add + RMSNorm kernel, the RMSNorm absorbed (true
// returned). The residual add's input and the norm's output are the buffers the two kernels would
// use, the weight the norm's own.
bool RankProgram::build_add_rmsnorm(std::size_t i, const Step& step) {
  const auto& ops = step.ops;
  if (!fusable_add_norm(ops, i) || absorbed_[i + 1] || recorded_[i + 1]) return false;
  const Op& add = ops[i];
  const char* xb = x_.as<char>();
  void* r = residual_.get();
  const void* w = arena_.region(i + 1);
  char* yb = y_.as<char>();
  const int t = int(add.tokens), h = int(add.hidden);
  absorbed_[i + 1] = true;
  reported_kinds_[i] = OpKind::rmsnorm;
  details_[i + 1] = "fused into " + add.name;
  details_[i] = "fused add + rmsnorm kernel";
  ops_[i] = [=](cudaStream_t s) { launch_add_rmsnorm(xb, r, w, yb, t, h, kRmsEps, s, early_launch_); };
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
      ops_[i] = [=](cudaStream_t s) { launch_rmsnorm(xb, w, yb, t, h, kRmsEps, s, early_launch_); };
      break;
    }
    case OpKind::residual_add: {
      void* r = residual_.get();
      const std::size_t count = as_size(op.tokens * op.hidden);
      detail = "residual add kernel";
      ops_[i] = [=](cudaStream_t s) { launch_residual_add(r, xb, count, s, early_launch_); };
      break;
    }
    case OpKind::elementwise: {
      // An engine's small kernel (RoPE, KV store, a copy, ...) runs as a kernel streaming the
      // same bytes: the residual-add kernel reads two tensors and writes one, so it is given a
      // third of the op's operands' elements.
      void* r = residual_.get();
      const std::size_t count = elementwise_stream_elements(op);
      detail = fmt::format("{}: streamed by the residual add kernel ({} bf16 elements x 3)", op.name, count);
      ops_[i] = [=](cudaStream_t s) { launch_residual_add(r, xb, count, s, early_launch_); };
      break;
    }
    case OpKind::act: {
      const int t = int(op.tokens), h = int(op.hidden);
      detail = "silu*mul kernel";
      ops_[i] = [=](cudaStream_t s) { launch_silu_mul(xb, yb, t, h, s, early_launch_); };
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

// An `act_quant_fp8` op as the fp8 activation quantisation kernel: x (bf16) into x8 and its
// scales (per tensor: the scale the GEMM after it multiplies back in, read).
void RankProgram::build_act_quant(std::size_t i, const ActQuantRun& q) {
  Fp8QuantArgs a;
  a.x = x_.get();
  a.rows = q.rows;
  a.k = q.k;
  a.q = x8_.get();
  a.scales = x8_scales_.as<float>();
  if (std::string why = fp8_act_quant_unsupported_reason(a); !why.empty())
    throw InputError(fmt::format("{}: the fp8 activation quantisation kernel cannot run it: {}", labels_[i], why));
  details_[i] = fmt::format("fp8 activation quantisation kernel ({}){}", describe_scaling(q.scaling),
                            q.feeds_gemm ? ", into the fp8 GEMM after it" : " (the GEMM after it reads bf16)");
  const Fp8Scaling scaling = q.scaling;
  ops_[i] = [this, scaling, a](cudaStream_t s) { launch_fp8_act_quant(scaling, a, s, early_launch_); };
}

RankProgram::~RankProgram() {
  gemms_.clear();
  if (blas_) cublasDestroy(blas_);
  if (lt_) cublasLtDestroy(lt_);
}

}  // namespace eaglesim::cuda
