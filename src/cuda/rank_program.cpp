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

// How one matmul is run on this GPU.
struct MatmulChoice {
  bool int4_kernel = false;   // our dequant-GEMM kernel reading packed int4
  DType lt_dtype = DType::bf16;  // cuBLASLt operand type otherwise
  std::int64_t k_eff = 0;     // k given to the GEMM (differs when a stand-in keeps the byte count)
  std::size_t weight_bytes = 0;
  std::string detail;
  std::string note;           // substitution to report, empty if none
};

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

RankProgram::RankProgram(const Step& step, int device, RankComm& comm, RankComm* fallback, const ProgramOptions& opts)
    : device_(device) {
  cudaDeviceProp prop{};
  EAGLESIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  sm_count_ = prop.multiProcessorCount;
  const int cc = prop.major * 10 + prop.minor;
  has_fp8_ = cc >= 89;  // fp8 tensor cores: Ada (8.9) and Hopper (9.0) onwards
  EAGLESIM_CUBLAS_CHECK(cublasLtCreate(&lt_));
  workspace_ = ReplayBuffer(kLtWorkspaceBytes);
  fp8_scales_ = ReplayBuffer(2 * sizeof(float));
  const float ones[2] = {1.f, 1.f};
  EAGLESIM_CUDA_CHECK(cudaMemcpy(fp8_scales_.get(), ones, sizeof(ones), cudaMemcpyHostToDevice));

  const auto& ops = step.ops;
  const std::size_t n_ops = ops.size();
  ops_.resize(n_ops);
  absorbed_.assign(n_ops, false);
  labels_.resize(n_ops);
  details_.resize(n_ops);

  // ---- pass 1: per-op decisions, region sizes and scratch sizes (bytes)
  std::vector<std::size_t> region_bytes(n_ops, 0);
  std::vector<MatmulChoice> choice(n_ops);
  std::vector<AttentionPlan> attn_plan(n_ops);
  std::size_t x_bytes = 256, x8_bytes = 256, y_bytes = 256, z_bytes = 256, res_bytes = 256, acc_floats = 1,
              ml_floats = 1, ids_count = 1;
  for (std::size_t i = 0; i < n_ops; ++i) {
    const Op& op = ops[i];
    labels_[i] = op_label(i, op);
    switch (op.kind) {
      case OpKind::gemm:
      case OpKind::lm_head: {
        choice[i] = choose_matmul(op.m, op.n, op.k, op.dtype, has_fp8_, cc);
        region_bytes[i] = choice[i].weight_bytes;
        x_bytes = std::max(x_bytes, as_size(op.m * op.k) * 2);
        x8_bytes = std::max(x8_bytes, as_size(op.m * choice[i].k_eff));
        y_bytes = std::max(y_bytes, as_size(op.m * op.n) * 2);
        break;
      }
      case OpKind::grouped_gemm: {
        const std::int64_t rows_max = (op.tokens + op.experts - 1) / op.experts;
        choice[i] = choose_matmul(rows_max, op.n, op.k, op.dtype, has_fp8_, cc);
        region_bytes[i] = as_size(op.experts) * align256(choice[i].weight_bytes);
        // One 256-byte-aligned slot per expert in x/y (cuBLASLt's fast paths want aligned operands).
        x_bytes = std::max(x_bytes, as_size(op.experts) * align256(as_size(rows_max * op.k) * 2));
        x8_bytes = std::max(x8_bytes, as_size(op.experts) * align256(as_size(rows_max * choice[i].k_eff)));
        y_bytes = std::max(y_bytes, as_size(op.experts) * align256(as_size(rows_max * op.n) * 2));
        if (op.tokens < op.experts)
          note(fmt::format("'{}': {} routed rows over {} experts: experts without rows are skipped", op.name, op.tokens,
                           op.experts));
        break;
      }
      case OpKind::attention: {
        const AttentionShape s = attention_shape(op);
        const std::string why = attention_unsupported_reason(s);
        if (!why.empty()) throw InputError(fmt::format("{}: the CUDA backend cannot replay it: {}", labels_[i], why));
        attn_plan[i] = plan_attention(s, sm_count_);
        region_bytes[i] = kv_cache_bytes(s);
        x_bytes = std::max(x_bytes, as_size(s.q_tokens) * s.heads * s.dk * 2);
        y_bytes = std::max(y_bytes, as_size(s.q_tokens) * s.heads * s.dv * 2);
        acc_floats = std::max(acc_floats, attn_plan[i].part_acc_floats);
        ml_floats = std::max(ml_floats, attn_plan[i].part_ml_floats);
        break;
      }
      case OpKind::allreduce:
        x_bytes = std::max(x_bytes, as_size(op.bytes));
        z_bytes = std::max(z_bytes, as_size(op.bytes));
        break;
      case OpKind::rmsnorm:
        region_bytes[i] = as_size(op.hidden) * 2;
        x_bytes = std::max(x_bytes, as_size(op.tokens * op.hidden) * 2);
        y_bytes = std::max(y_bytes, as_size(op.tokens * op.hidden) * 2);
        break;
      case OpKind::residual_add:
        x_bytes = std::max(x_bytes, as_size(op.tokens * op.hidden) * 2);
        res_bytes = std::max(res_bytes, as_size(op.tokens * op.hidden) * 2);
        break;
      case OpKind::act:
        x_bytes = std::max(x_bytes, as_size(op.tokens * op.hidden) * 4);
        y_bytes = std::max(y_bytes, as_size(op.tokens * op.hidden) * 2);
        break;
      case OpKind::embedding:
        region_bytes[i] = as_size(kEmbeddingRows) * as_size(op.hidden) * 2;
        y_bytes = std::max(y_bytes, as_size(op.tokens * op.hidden) * 2);
        ids_count = std::max(ids_count, as_size(op.tokens));
        break;
      case OpKind::other:
        break;
    }
  }

  // ---- scratch, then the per-op regions in what memory is left
  x_ = ReplayBuffer(x_bytes);
  x8_ = ReplayBuffer(x8_bytes);
  y_ = ReplayBuffer(y_bytes);
  z_ = ReplayBuffer(z_bytes);
  residual_ = ReplayBuffer(res_bytes);
  part_acc_ = ReplayBuffer(acc_floats * sizeof(float));
  part_ml_ = ReplayBuffer(ml_floats * sizeof(float));
  ids_ = ReplayBuffer(ids_count * sizeof(int));
  std::size_t free_bytes = 0, total_bytes = 0;
  EAGLESIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  arena_ = WeightArena(region_bytes, free_bytes);
  if (arena_.adopted())
    note("weights and KV caches in the same GPU memory as the previous program on this GPU (an A/B run compares "
         "strategies over one placement)");
  if (arena_.reused())
    note(fmt::format("weights and KV caches ({:.1f} GiB per rank) exceed 80% of free GPU memory: replayed from "
                     "{:.1f} GiB, later layers reading earlier layers' memory (too far back for L2 to hold it)",
                     arena_.requested_bytes() / 1073741824.0, arena_.pool_bytes() / 1073741824.0));

  // ---- random contents (never zeros): activations, then every region in its own dtype
  const std::uint64_t seed = opts.seed * 0x100000001B3ull;
  fill_random(x_.get(), x_bytes / 2, DType::bf16, seed + 1, 1.f, nullptr);
  fill_random(x8_.get(), x8_bytes, DType::fp8, seed + 2, 1.f, nullptr);
  fill_random(y_.get(), y_bytes / 2, DType::bf16, seed + 3, 1.f, nullptr);
  fill_random(z_.get(), z_bytes / 2, DType::bf16, seed + 4, 1.f, nullptr);
  fill_random(residual_.get(), res_bytes / 2, DType::bf16, seed + 5, 1.f, nullptr);
  fill_random_ids(ids_.as<int>(), ids_count, kEmbeddingRows, seed + 6, nullptr);
  for (std::size_t i = 0; i < n_ops; ++i) {
    if (region_bytes[i] == 0) continue;
    const std::uint64_t s = seed + 1000 + i;
    void* r = arena_.region(i);
    const Op& op = ops[i];
    if (op.is_matmul()) {
      const MatmulChoice& c = choice[i];
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
      fill_random(r, region_bytes[i] / 2, DType::bf16, s, 1.f, nullptr);
    }
  }

  // ---- pass 2: the closures
  const bool can_fuse = comm.supports_fused() && !opts.skip_allreduces;
  std::size_t fused = 0;
  char* xb = x_.as<char>();
  char* x8b = x8_.as<char>();
  char* yb = y_.as<char>();
  void* ws = workspace_.get();
  for (std::size_t i = 0; i < n_ops; ++i) {
    if (absorbed_[i]) continue;
    const Op& op = ops[i];
    std::string& detail = details_[i];
    switch (op.kind) {
      case OpKind::gemm:
      case OpKind::lm_head:
      case OpKind::grouped_gemm: {
        const MatmulChoice& c = choice[i];
        note(c.note);
        detail = c.detail;
        const bool grouped = op.kind == OpKind::grouped_gemm;
        const std::int64_t experts = grouped ? op.experts : 1;
        const std::int64_t base = grouped ? op.tokens / op.experts : op.m, extra = grouped ? op.tokens % op.experts : 0;
        const std::int64_t rows_max = grouped ? (op.tokens + op.experts - 1) / op.experts : op.m;
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
        break;
      }
      case OpKind::attention: {
        const AttentionShape shape = attention_shape(op);
        const AttentionPlan plan = attn_plan[i];
        const char* cache = static_cast<const char*>(arena_.region(i));
        const std::size_t k_bytes = shape.shared_kv ? 0 : kv_cache_bytes(shape) / 2;
        const char* kc = cache;
        const char* vc = cache + k_bytes;
        const std::int64_t pitch = shape.dk;
        float* acc = part_acc_.as<float>();
        float* ml = part_ml_.as<float>();
        detail = fmt::format("split-KV decode kernel, {} splits of {}", plan.splits, plan.split_len);
        ops_[i] = [=](cudaStream_t s) { launch_attention(shape, plan, xb, kc, vc, pitch, pitch, acc, ml, yb, s); };
        break;
      }
      case OpKind::allreduce: {
        const std::size_t count = as_size(op.bytes) / static_cast<std::size_t>(bytes_per_element(op.dtype));
        const DType dtype = op.dtype;
        if (opts.skip_allreduces) {
          detail = "skipped (fault injection)";
          break;  // no closure: this rank never joins
        }
        RankComm* rc = &comm;
        if (as_size(op.bytes) > comm.max_bytes()) {
          if (!fallback) throw DeviceError(fmt::format("{}: larger than {} can take and no NCCL fallback", labels_[i], comm.strategy()));
          rc = fallback;
          note(fmt::format("allreduces over {} B exceed {}'s buffers: run through NCCL", comm.max_bytes(), comm.strategy()));
          detail = "nccl (fallback)";
        } else {
          detail = comm.strategy();
        }
        const bool fuse = can_fuse && rc == &comm && dtype == DType::bf16 && i + 2 < n_ops &&
                          ops[i + 1].kind == OpKind::residual_add && ops[i + 2].kind == OpKind::rmsnorm &&
                          ops[i + 1].tokens == ops[i + 2].tokens && ops[i + 1].hidden == ops[i + 2].hidden &&
                          op.bytes == ops[i + 1].tokens * ops[i + 1].hidden * 2;
        if (fuse) {
          FusedNormArgs args;
          args.residual = residual_.get();
          args.weight = arena_.region(i + 2);
          args.normed = yb;
          args.tokens = as_size(ops[i + 1].tokens);
          args.hidden = as_size(ops[i + 1].hidden);
          args.eps = kRmsEps;
          absorbed_[i + 1] = absorbed_[i + 2] = true;
          details_[i + 1] = details_[i + 2] = "fused into " + op.name;
          detail += " + residual + rmsnorm (fused)";
          ++fused;
          ops_[i] = [rc, xb, args, dtype](cudaStream_t s) { rc->allreduce_residual_rmsnorm(xb, args, dtype, s); };
          use_collective({rc, dtype, count, true, args.tokens, args.hidden, kRmsEps});
        } else {
          use_collective({rc, dtype, count, false, 0, 0, kRmsEps});
          char* z = z_.as<char>();
          ops_[i] = [rc, xb, z, count, dtype](cudaStream_t s) { rc->allreduce(xb, z, count, dtype, s); };
        }
        break;
      }
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
    }
  }
  if (fused > 0) note(fmt::format("{} allreduce + residual add + RMSNorm triples ran as one {} kernel each", fused, comm.strategy()));
  EAGLESIM_CUDA_CHECK(cudaDeviceSynchronize());  // fills done before anything is timed
}

RankProgram::~RankProgram() {
  gemms_.clear();
  if (lt_) cublasLtDestroy(lt_);
}

}  // namespace eaglesim::cuda
