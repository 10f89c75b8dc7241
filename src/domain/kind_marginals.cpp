#include "domain/kind_marginals.hpp"

#include <stdexcept>

namespace eaglesim {

bool has_marginal(OpKind kind) { return kind != OpKind::allreduce && kind != OpKind::host_sync; }

std::vector<bool> ops_left_out(const std::vector<OpKind>& reported, const std::vector<bool>& absorbed, OpKind kind) {
  if (reported.size() != absorbed.size()) throw std::logic_error("ops_left_out: reported and absorbed differ in length");
  std::vector<bool> out(reported.size(), false);
  bool owner_left_out = false;  // whether the kernel that runs the absorbed ops that follow is left out
  for (std::size_t i = 0; i < reported.size(); ++i) {
    if (!absorbed[i]) owner_left_out = reported[i] == kind;
    out[i] = owner_left_out;
  }
  return out;
}

std::vector<OpKind> marginal_kinds(const std::vector<OpKind>& reported, const std::vector<bool>& absorbed) {
  if (reported.size() != absorbed.size()) throw std::logic_error("marginal_kinds: reported and absorbed differ in length");
  std::array<bool, kOpKindCount> present{};
  for (std::size_t i = 0; i < reported.size(); ++i)
    if (!absorbed[i] && has_marginal(reported[i])) present[static_cast<std::size_t>(reported[i])] = true;
  std::vector<OpKind> kinds;
  for (int k = 0; k < kOpKindCount; ++k)
    if (present[static_cast<std::size_t>(k)]) kinds.push_back(static_cast<OpKind>(k));
  return kinds;
}

}  // namespace eaglesim
