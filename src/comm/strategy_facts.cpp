// The strategy table. Order matters: it is the order `--strategy all` expands to, reports list
// and bench-comm measures.
#include "comm/strategy_facts.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace {

StrategyFacts p2p_kernel(std::string_view name, StrategyKernel kernel) {
  StrategyFacts f;
  f.name = name;
  f.calibratable = true;
  f.needs_p2p = true;
  f.max_bytes = kMaxCustomBytes;
  f.byte_multiple = kCustomByteMultiple;
  f.kernel = kernel;
  return f;
}

std::vector<StrategyFacts> build_table() {
  std::vector<StrategyFacts> t;

  StrategyFacts nccl;
  nccl.name = "nccl";
  nccl.calibratable = true;
  nccl.kernel = StrategyKernel::nccl;
  t.push_back(nccl);

  t.push_back(p2p_kernel("oneshot", StrategyKernel::oneshot_pull));

  // The push form of the one-shot: measured by bench-comm beside the pull form it replaces.
  StrategyFacts push = p2p_kernel("oneshot_push", StrategyKernel::oneshot_push);
  push.runs = false;
  push.calibratable = false;
  t.push_back(push);

  t.push_back(p2p_kernel("twoshot", StrategyKernel::twoshot));

  StrategyFacts fused = p2p_kernel("fused", StrategyKernel::fused);
  fused.fuses_residual_norm = true;
  t.push_back(fused);

  StrategyFacts quant = p2p_kernel("quant", StrategyKernel::quant);
  quant.exact = false;
  t.push_back(quant);

  StrategyFacts ideal;
  ideal.name = "ideal";
  ideal.lower_bound = true;
  t.push_back(ideal);

  StrategyFacts selector;
  selector.name = "auto";
  selector.selector = true;
  t.push_back(selector);

  // bench-comm's correctness baseline: a plain kernel over the same buffers.
  StrategyFacts reference = p2p_kernel("reference", StrategyKernel::reference);
  reference.runs = false;
  reference.calibratable = false;
  t.push_back(reference);
  return t;
}

template <typename Pred>
std::vector<std::string> names_where(Pred pred) {
  std::vector<std::string> out;
  for (const StrategyFacts& f : strategy_table())
    if (pred(f)) out.emplace_back(f.name);
  return out;
}

std::string single_name_where(bool StrategyFacts::*flag) {
  for (const StrategyFacts& f : strategy_table())
    if (f.*flag) return std::string(f.name);
  throw std::logic_error("strategy table: no entry with the requested flag");
}

}  // namespace

const std::vector<StrategyFacts>& strategy_table() {
  static const std::vector<StrategyFacts> table = build_table();
  return table;
}

const StrategyFacts* find_strategy_facts(std::string_view name) {
  for (const StrategyFacts& f : strategy_table())
    if (f.name == name) return &f;
  return nullptr;
}

const StrategyFacts& strategy_facts(std::string_view name) {
  if (const StrategyFacts* f = find_strategy_facts(name)) return *f;
  std::string known;
  for (const std::string& n : runnable_strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError(fmt::format("unknown strategy \"{}\" (known: {})", name, known));
}

bool is_lower_bound(std::string_view name) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->lower_bound;
}
bool fuses_residual_norm(std::string_view name) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->fuses_residual_norm;
}
bool is_exact(std::string_view name) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->exact;
}
bool is_calibratable(std::string_view name) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->calibratable;
}
bool uses_p2p_kernels(std::string_view name) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->needs_p2p;
}
bool is_nccl(std::string_view name) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->kernel == StrategyKernel::nccl;
}

bool fits_message_range(std::string_view name, std::int64_t bytes) {
  const StrategyFacts* f = find_strategy_facts(name);
  if (!f) return true;
  return (f->max_bytes == 0 || bytes <= f->max_bytes) && bytes % f->byte_multiple == 0;
}

std::vector<std::string> runnable_strategy_names() {
  return names_where([](const StrategyFacts& f) { return f.runs; });
}
std::vector<std::string> calibratable_strategy_names() {
  return names_where([](const StrategyFacts& f) { return f.calibratable; });
}
std::vector<std::string> bench_comm_names() {
  return names_where([](const StrategyFacts& f) { return f.kernel != StrategyKernel::none; });
}
std::string lower_bound_strategy() { return single_name_where(&StrategyFacts::lower_bound); }
std::string nccl_strategy() {
  for (const StrategyFacts& f : strategy_table())
    if (f.kernel == StrategyKernel::nccl) return std::string(f.name);
  throw std::logic_error("strategy table: no NCCL entry");
}

}  // namespace eaglesim
