#include "import/kernel_grouper.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "import/kernel_classifier.hpp"
#include "import/shape_linker.hpp"

namespace eaglesim {

std::string ImportedOp::signature() const {
  std::string s = std::string(to_string(op.kind)) + " " + op.shape_string();
  if (op.kind == OpKind::other) s += " " + op.name;
  return s;
}

namespace {

struct Member {
  const GpuActivity* activity;
  KernelClass cls;
  std::string family;
};

struct Group {
  std::vector<Member> members;
  KernelClass cls = KernelClass::other;
  std::size_t principal_index = 0;  // the kernel that decides the kind (and carries the shape)
  const Member& principal() const { return members[principal_index]; }
};

// Which member decides what a group is: a collective beats attention beats a GEMM, and so on
// down to copies and memsets, which only ever tag along.
int rank_of(KernelClass c) {
  switch (c) {
    case KernelClass::allreduce: return 13;
    case KernelClass::collective_other: return 12;
    case KernelClass::attention: return 11;
    case KernelClass::gemm: return 10;
    case KernelClass::fused_add_norm: return 9;
    case KernelClass::norm: return 8;
    case KernelClass::act: return 7;
    case KernelClass::act_partial: return 6;
    case KernelClass::residual_add: return 5;
    case KernelClass::mul: return 4;
    case KernelClass::moe_gemm: return 10;
    case KernelClass::embedding: return 3;
    case KernelClass::gemm_reduce: return 3;
    case KernelClass::other: return 2;
    case KernelClass::copy: return 1;
    case KernelClass::memset: return 0;
  }
  return 0;
}

KernelMatch classify(const RankTrace& rank, const GpuActivity& g) {
  KernelMatch m = classify_kernel(g.name, g.type);
  if (m.cls != KernelClass::other || g.cpu_op < 0) return m;  // graph kernels have no cpu_op
  // A kernel whose name says nothing: what the launching ATen op (or an enclosing one) does.
  for (int i : rank.ancestry(g.cpu_op)) {
    KernelClass c = classify_cpu_op(rank.cpu_ops[static_cast<std::size_t>(i)].name);
    if (c != KernelClass::other) return {c, rank.cpu_ops[static_cast<std::size_t>(i)].name};
  }
  return m;
}

double group_start(const Group& g) { return g.members.front().activity->ts; }
double group_end(const Group& g) {
  double e = 0;
  for (const auto& m : g.members) e = std::max(e, m.activity->ts + m.activity->dur);
  return e;
}

void settle(Group& g) {
  g.principal_index = 0;
  for (std::size_t i = 0; i < g.members.size(); ++i)
    if (rank_of(g.members[i].cls) > rank_of(g.principal().cls)) g.principal_index = i;
  g.cls = g.principal().cls == KernelClass::gemm_reduce ? KernelClass::gemm : g.principal().cls;
}

std::string describe_other(const RankTrace& rank, const Group& g) {
  const GpuActivity& a = *g.principal().activity;
  std::string kernel = short_kernel_name(a.name);
  if (a.cpu_op < 0) return kernel;
  const std::string& top = rank.cpu_ops[static_cast<std::size_t>(rank.top_level(a.cpu_op))].name;
  return top + ": " + kernel;
}

OpKind typed_kind(KernelClass c) {
  switch (c) {
    case KernelClass::gemm: return OpKind::gemm;
    case KernelClass::allreduce: return OpKind::allreduce;
    case KernelClass::attention: return OpKind::attention;
    case KernelClass::norm:
    case KernelClass::fused_add_norm: return OpKind::rmsnorm;
    case KernelClass::residual_add: return OpKind::residual_add;
    case KernelClass::embedding: return OpKind::embedding;
    case KernelClass::act:
    case KernelClass::act_partial: return OpKind::act;
    default: return OpKind::other;
  }
}

ImportedOp build_op(const RankTrace& rank, const Group& g) {
  ImportedOp op;
  op.start = group_start(g);
  op.end = group_end(g);
  op.launch_ts = g.members.front().activity->launch_ts;
  op.graph_launch = g.members.front().activity->graph_launch;
  op.collective = g.cls == KernelClass::allreduce || g.cls == KernelClass::collective_other;
  for (const auto& m : g.members) {
    op.kernels.push_back({short_kernel_name(m.activity->name), m.family, m.activity->dur});
    // A collective's cost is its own kernel; anything else launched with it is accounted apart.
    if (!op.collective || &m == &g.principal()) op.kernel_us += m.activity->dur;
    if (op.collective && &m == &g.principal()) {
      op.collective_start = m.activity->ts;
      op.collective_end = m.activity->ts + m.activity->dur;
    }
    else op.folded_copy_us += m.activity->dur;
  }
  op.recognised_as = to_string(g.cls);
  OpKind kind = typed_kind(g.cls);
  if (kind != OpKind::other) {
    if (auto s = link_shape(rank, *g.principal().activity, g.cls)) {
      op.op = s->op;
      op.op.name = s->source_op.empty() ? short_kernel_name(g.principal().activity->name) : s->source_op;
      return op;
    }
    op.shape_missing = true;
  }
  op.op.kind = OpKind::other;
  op.op.name = op.shape_missing ? fmt::format("{} (no shape): {}", to_string(g.cls), describe_other(rank, g))
                                : describe_other(rank, g);
  return op;
}

}  // namespace

std::vector<ImportedOp> group_kernels(const RankTrace& rank) {
  // Per stream, in time order.
  std::map<std::int64_t, std::vector<Member>> streams;
  for (const GpuActivity& g : rank.gpu) {
    KernelMatch m = classify(rank, g);
    streams[g.stream].push_back({&g, m.cls, m.family});
  }

  std::vector<ImportedOp> out;
  for (auto& [stream, members] : streams) {
    std::vector<Group> groups;
    for (const Member& m : members) {
      const GpuActivity& a = *m.activity;
      bool join = false;
      if (!groups.empty()) {
        const GpuActivity& prev = *groups.back().members.back().activity;
        const KernelClass prev_cls = groups.back().members.back().cls;
        if (a.in_graph()) {
          // Every kernel of one graph replay shares the launch's correlation and External id,
          // so the launching op says nothing; the kernels themselves do: a split-K reduction
          // follows its GEMM, a split-KV combine / merge-states kernel its attention kernel,
          // and cuDNN's workspace memset comes right before its attention kernel, cuBLAS's
          // before a GEMM whose algorithm accumulates into a zeroed output.
          const bool lone_memset = prev_cls == KernelClass::memset && groups.back().members.size() == 1;
          join = prev.graph_launch == a.graph_launch &&
                 ((m.cls == KernelClass::gemm_reduce && prev_cls == KernelClass::gemm) ||
                  (m.cls == KernelClass::attention && prev_cls == KernelClass::attention) ||
                  (m.cls == KernelClass::attention && lone_memset) || (m.cls == KernelClass::gemm && lone_memset));
        } else {
          // Same launching op; or a split-K reduction right after its GEMM even when the
          // profiler did not stamp an External id on it.
          join = (a.external_id >= 0 && a.external_id == prev.external_id) ||
                 (m.cls == KernelClass::gemm_reduce && prev_cls == KernelClass::gemm);
        }
      }
      if (join) groups.back().members.push_back(m);
      else groups.push_back(Group{{m}});
    }
    for (auto& g : groups) settle(g);

    // SiLU then multiply (same rows and width): one act. A copy into the communication buffer
    // right before an allreduce of the same number of bytes: part of that allreduce.
    std::vector<Group> merged;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      Group g = groups[i];
      const bool graph = g.principal().activity->in_graph();
      if (g.cls == KernelClass::act_partial && i + 1 < groups.size() && groups[i + 1].cls == KernelClass::mul) {
        auto a = link_shape(rank, *g.principal().activity, KernelClass::act_partial);
        auto b = link_shape(rank, *groups[i + 1].principal().activity, KernelClass::mul);
        if (a && b && (a->op.tokens != b->op.tokens || a->op.hidden != b->op.hidden)) a.reset();
        // Graph kernels carry no shapes to compare: the multiply right after the activation
        // in the same replay is taken as its second half (the MLP's SiLU(gate) * up).
        const bool same_replay = graph && groups[i + 1].principal().activity->graph_launch == g.principal().activity->graph_launch;
        if ((a && b) || same_replay) {
          for (const auto& m : groups[i + 1].members) g.members.push_back(m);
          g.cls = KernelClass::act;
          ++i;
        }
      }
      if (g.cls == KernelClass::copy && i + 1 < groups.size() && groups[i + 1].cls == KernelClass::allreduce) {
        auto bytes = copy_bytes(rank, *g.principal().activity);
        auto ar = link_shape(rank, *groups[i + 1].principal().activity, KernelClass::allreduce);
        // In a graph the allreduce's size is not known yet (it comes from the model config);
        // a copy right before it in the same replay is its input copy.
        const bool same_replay = graph && groups[i + 1].principal().activity->graph_launch == g.principal().activity->graph_launch;
        if ((bytes && ar && *bytes == ar->op.bytes) || same_replay) {
          Group f = groups[i + 1];
          f.members.insert(f.members.begin(), g.members.begin(), g.members.end());
          merged.push_back(std::move(f));
          ++i;
          continue;
        }
      }
      merged.push_back(std::move(g));
    }
    for (auto& g : merged) {
      // settle() again: members moved; keep the class decided by the merge.
      KernelClass cls = g.cls;
      settle(g);
      if (cls == KernelClass::act) g.cls = KernelClass::act;
      out.push_back(build_op(rank, g));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ImportedOp& a, const ImportedOp& b) { return a.start < b.start; });
  return out;
}

}  // namespace eaglesim
