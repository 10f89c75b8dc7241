#include "import/shape_linker.hpp"

#include <vector>

namespace eaglesim {

namespace {

using Dims = std::vector<std::int64_t>;

const nlohmann::json* arg(const CpuOp& op, const char* key) {
  if (!op.args || !op.args->is_object()) return nullptr;
  auto it = op.args->find(key);
  return it == op.args->end() ? nullptr : &*it;
}

// Input Dims[idx] as a list of positive sizes. A TensorList argument ([[4, 4096]]) gives its
// first tensor; a scalar or None argument ([]) gives nothing.
std::optional<Dims> input_dims(const CpuOp& op, std::size_t idx) {
  const nlohmann::json* all = arg(op, "Input Dims");
  if (!all || !all->is_array() || idx >= all->size()) return std::nullopt;
  const nlohmann::json* d = &(*all)[idx];
  if (d->is_array() && !d->empty() && (*d)[0].is_array()) d = &(*d)[0];
  if (!d->is_array() || d->empty()) return std::nullopt;
  Dims out;
  for (const auto& v : *d) {
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) return std::nullopt;
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

std::optional<DType> input_dtype(const CpuOp& op, std::size_t idx) {
  const nlohmann::json* all = arg(op, "Input type");
  if (!all || !all->is_array() || idx >= all->size() || !(*all)[idx].is_string()) return std::nullopt;
  return dtype_from_profiler((*all)[idx].get<std::string>());
}

std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto v : d) n *= v;
  return n;
}

// Rows x last dimension, the [tokens, hidden] view of a row-wise op's input.
bool rows_and_width(const Dims& d, std::int64_t& rows, std::int64_t& width) {
  if (d.size() < 2) return false;
  width = d.back();
  rows = numel(d) / width;
  return rows > 0 && width > 0;
}

std::optional<LinkedShape> gemm_from(const CpuOp& op) {
  Dims a, b;
  const std::string& n = op.name;
  std::size_t ia = 0, ib = 1;
  if (n == "aten::addmm" || n == "aten::baddbmm") { ia = 1; ib = 2; }
  else if (n != "aten::mm" && n != "aten::matmul" && n != "aten::linear" && n != "aten::bmm") return std::nullopt;
  auto da = input_dims(op, ia), db = input_dims(op, ib);
  if (!da || !db) return std::nullopt;
  a = *da; b = *db;
  LinkedShape s;
  s.source_op = n;
  s.op.dtype = input_dtype(op, ib).value_or(input_dtype(op, ia).value_or(DType::bf16));
  if (n == "aten::bmm" || n == "aten::baddbmm" || (n == "aten::matmul" && b.size() == 3)) {
    // Batched: one weight matrix per batch entry, i.e. a grouped GEMM with `batch` groups.
    if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[2] != b[1]) return std::nullopt;
    s.op.kind = OpKind::grouped_gemm;
    s.op.tokens = a[0] * a[1];
    s.op.experts = a[0];
    s.op.k = a[2];
    s.op.n = b[2];
    return s;
  }
  if (b.size() != 2 || a.empty()) return std::nullopt;
  s.op.kind = OpKind::gemm;
  s.op.k = a.back();
  s.op.m = numel(a) / s.op.k;
  if (n == "aten::linear") {  // weight is [out, in]
    if (b[1] != s.op.k) return std::nullopt;
    s.op.n = b[0];
  } else {
    if (b[0] != s.op.k) return std::nullopt;
    s.op.n = b[1];
  }
  return s;
}

std::optional<LinkedShape> attention_from(const CpuOp& op) {
  const std::string& n = op.name;
  // Two layouts: SDPA and its backends take [batch, heads, tokens, head_dim]; the FlashAttention
  // and memory-efficient entry points take [batch, tokens, heads, head_dim] or, varlen,
  // [total_tokens, heads, head_dim].
  const bool bhtd = n.find("scaled_dot_product") != std::string::npos || n.find("_cudnn_attention") != std::string::npos;
  const bool bthd = n.find("_flash_attention_forward") != std::string::npos ||
                    n.find("_efficient_attention_forward") != std::string::npos || n.find("flash_attn") != std::string::npos;
  if (!bhtd && !bthd) return std::nullopt;
  auto q = input_dims(op, 0), k = input_dims(op, 1);
  if (!q || !k) return std::nullopt;
  LinkedShape s;
  s.source_op = n;
  s.op.kind = OpKind::attention;
  if (bhtd) {
    if (q->size() != 4 || k->size() != 4) return std::nullopt;
    s.op.q_tokens = (*q)[0] * (*q)[2];
    s.op.heads = (*q)[1];
    s.op.kv_heads = (*k)[1];
    s.op.kv_len = (*k)[2];
    s.op.head_dim = (*q)[3];
  } else if (q->size() == 4 && k->size() == 4) {
    s.op.q_tokens = (*q)[0] * (*q)[1];
    s.op.heads = (*q)[2];
    s.op.kv_len = (*k)[1];
    s.op.kv_heads = (*k)[2];
    s.op.head_dim = (*q)[3];
  } else if (q->size() == 3 && k->size() == 3) {
    s.op.q_tokens = (*q)[0];
    s.op.heads = (*q)[1];
    s.op.kv_len = (*k)[0];
    s.op.kv_heads = (*k)[1];
    s.op.head_dim = (*q)[2];
  } else {
    return std::nullopt;
  }
  if (s.op.kv_heads <= 0 || s.op.heads % s.op.kv_heads != 0) return std::nullopt;
  // The op's dtype is its KV cache's format: fp8 when the keys are, else the bf16 of the model
  // (fp16 and fp32 inputs stream as the 2-byte cache they stand for).
  s.op.dtype = input_dtype(op, 1).value_or(DType::bf16) == DType::fp8 ? DType::fp8 : DType::bf16;
  return s;
}

std::optional<LinkedShape> rowwise_from(const CpuOp& op, KernelClass cls) {
  KernelClass op_cls = classify_cpu_op(op.name);
  const bool match = op_cls == cls || (cls == KernelClass::act && op_cls == KernelClass::act_partial) ||
                     (cls == KernelClass::act_partial && op_cls == KernelClass::act) ||
                     (cls == KernelClass::norm && op_cls == KernelClass::fused_add_norm) ||
                     (cls == KernelClass::fused_add_norm && op_cls == KernelClass::norm);
  if (!match) return std::nullopt;
  auto d = input_dims(op, 0);
  if (!d) return std::nullopt;
  if (cls == KernelClass::residual_add) {
    auto other = input_dims(op, 1);  // a residual add adds two tensors of the same shape
    if (!other || *other != *d) return std::nullopt;
  }
  LinkedShape s;
  s.source_op = op.name;
  if (!rows_and_width(*d, s.op.tokens, s.op.hidden)) return std::nullopt;
  s.op.kind = cls == KernelClass::residual_add ? OpKind::residual_add
              : (cls == KernelClass::act || cls == KernelClass::act_partial) ? OpKind::act
                                                                              : OpKind::rmsnorm;
  return s;
}

// aten::embedding(weight [vocab, hidden], indices [...]): one row of `hidden` per index.
std::optional<LinkedShape> embedding_from(const CpuOp& op) {
  if (op.name != "aten::embedding") return std::nullopt;
  auto w = input_dims(op, 0), idx = input_dims(op, 1);
  if (!w || !idx || w->size() != 2) return std::nullopt;
  LinkedShape s;
  s.source_op = op.name;
  s.op.kind = OpKind::embedding;
  s.op.tokens = numel(*idx);
  s.op.hidden = (*w)[1];
  return s;
}

std::optional<DType> dtype_from_kernel_name(const std::string& name) {
  for (const char* t : {"_bf16", "BFloat16", "bfloat16"})
    if (name.find(t) != std::string::npos) return DType::bf16;
  for (const char* t : {"_f16", "Half", "half"})
    if (name.find(t) != std::string::npos) return DType::fp16;
  for (const char* t : {"_f32", "float"})
    if (name.find(t) != std::string::npos) return DType::fp32;
  return std::nullopt;
}

std::optional<LinkedShape> allreduce_from(const RankTrace& rank, const GpuActivity& kernel) {
  std::optional<std::int64_t> nelems;
  std::optional<DType> dtype;
  std::string source;
  auto from_args = [&](const nlohmann::json* args, const std::string& who) {
    if (!args || !args->is_object()) return;
    auto ne = args->find("In msg nelems");
    if (nelems || ne == args->end() || !ne->is_number_integer() || ne->get<std::int64_t>() <= 0) return;
    nelems = ne->get<std::int64_t>();
    source = who;
    auto dt = args->find("dtype");
    if (dt != args->end() && dt->is_string()) dtype = dtype_from_profiler(dt->get<std::string>());
  };
  from_args(kernel.args, "kernel args");
  if (kernel.cpu_op >= 0) {
    for (int i : rank.ancestry(kernel.cpu_op)) {
      const CpuOp& op = rank.cpu_ops[static_cast<std::size_t>(i)];
      from_args(op.args, op.name);
      if (nelems) break;
      const bool collective_op = op.name.find("allreduce") != std::string::npos ||
                                 op.name.find("all_reduce") != std::string::npos;
      if (!collective_op) continue;
      // The first tensor argument is the buffer reduced (custom-allreduce ops take a handle first).
      const nlohmann::json* all = arg(op, "Input Dims");
      for (std::size_t a = 0; all && all->is_array() && a < all->size(); ++a) {
        if (auto d = input_dims(op, a)) {
          nelems = numel(*d);
          dtype = input_dtype(op, a);
          source = op.name;
          break;
        }
      }
      if (nelems) break;
    }
  }
  if (!dtype) dtype = dtype_from_kernel_name(kernel.name);
  if (!nelems || !dtype || *dtype == DType::int4) return std::nullopt;
  LinkedShape s;
  s.source_op = source;
  s.op.kind = OpKind::allreduce;
  s.op.dtype = *dtype;
  s.op.bytes = static_cast<std::int64_t>(static_cast<double>(*nelems) * bytes_per_element(*dtype));
  return s;
}

}  // namespace

std::optional<DType> dtype_from_profiler(const std::string& raw) {
  std::string n = raw;
  if (n.rfind("c10::", 0) == 0) n = n.substr(5);
  if (n == "BFloat16") return DType::bf16;
  if (n == "Half") return DType::fp16;
  if (n == "float" || n == "Float") return DType::fp32;
  if (n.rfind("Float8", 0) == 0) return DType::fp8;
  return std::nullopt;
}

std::optional<LinkedShape> link_shape(const RankTrace& rank, const GpuActivity& kernel, KernelClass cls) {
  if (cls == KernelClass::allreduce) return allreduce_from(rank, kernel);
  if (kernel.cpu_op < 0) return std::nullopt;
  for (int i : rank.ancestry(kernel.cpu_op)) {
    const CpuOp& op = rank.cpu_ops[static_cast<std::size_t>(i)];
    std::optional<LinkedShape> s;
    switch (cls) {
      case KernelClass::gemm: s = gemm_from(op); break;
      case KernelClass::attention: s = attention_from(op); break;
      case KernelClass::embedding: s = embedding_from(op); break;
      case KernelClass::norm:
      case KernelClass::fused_add_norm:
      case KernelClass::residual_add:
      case KernelClass::act:
      case KernelClass::act_partial:
      case KernelClass::mul: s = rowwise_from(op, cls); break;
      default: return std::nullopt;
    }
    if (s) return s;
  }
  return std::nullopt;
}

std::optional<std::int64_t> copy_bytes(const RankTrace& rank, const GpuActivity& g) {
  if (g.bytes > 0) return g.bytes;
  if (g.cpu_op < 0) return std::nullopt;
  const CpuOp& op = rank.cpu_ops[static_cast<std::size_t>(g.cpu_op)];
  if (op.name != "aten::copy_") return std::nullopt;
  auto d = input_dims(op, 0);
  auto t = input_dtype(op, 0);
  if (!d || !t) return std::nullopt;
  return static_cast<std::int64_t>(static_cast<double>(numel(*d)) * bytes_per_element(*t));
}

}  // namespace eaglesim
