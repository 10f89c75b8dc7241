#include "import/kineto_ranks.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "import/kernel_grouper.hpp"

namespace eaglesim {

std::vector<RankOps> read_ranks_in_rank_order(const std::vector<std::string>& files) {
  std::vector<RankOps> ranks;
  for (const auto& f : files) {
    RankOps r;
    r.trace = read_kineto_rank(f);
    ranks.push_back(std::move(r));
  }

  // Rank order: distributedInfo.rank when every file has it, else the order given.
  const bool all_ranked = std::all_of(ranks.begin(), ranks.end(), [](const RankOps& r) { return r.trace.rank.has_value(); });
  if (all_ranked) {
    std::stable_sort(ranks.begin(), ranks.end(), [](const RankOps& a, const RankOps& b) { return *a.trace.rank < *b.trace.rank; });
    for (std::size_t i = 1; i < ranks.size(); ++i)
      if (*ranks[i].trace.rank == *ranks[i - 1].trace.rank)
        throw InputError(fmt::format("{} and {} are both rank {} (distributedInfo.rank): give one file per rank",
                                     ranks[i - 1].trace.file, ranks[i].trace.file, *ranks[i].trace.rank));
  }
  return ranks;
}

int resolve_tp(const std::vector<RankOps>& ranks, std::optional<int> requested) {
  int tp = static_cast<int>(ranks.size());
  std::optional<int> world;
  for (const auto& r : ranks) {
    if (!r.trace.world_size) continue;
    if (world && *world != *r.trace.world_size)
      throw InputError(fmt::format("{}: distributedInfo.world_size is {}, but {} says {}", r.trace.file,
                                   *r.trace.world_size, ranks[0].trace.file, *world));
    world = r.trace.world_size;
  }
  if (world) {
    if (static_cast<int>(ranks.size()) > *world)
      throw InputError(fmt::format("{} rank files given, but distributedInfo.world_size is {}", ranks.size(), *world));
    tp = *world;
  }
  if (requested) {
    if (*requested < static_cast<int>(ranks.size()) || (world && *world != *requested))
      throw InputError(fmt::format("{} {}: expected {}", setting_name(Setting::tp), *requested,
                                   world ? fmt::format("{} (distributedInfo.world_size of {})", *world, ranks[0].trace.file)
                                         : fmt::format("at least the {} rank file(s) given", ranks.size())));
    tp = *requested;
  }
  return tp;
}

void cut_ranks_into_steps(std::vector<RankOps>& ranks, std::optional<int> layers_per_step) {
  for (auto& r : ranks) {
    r.ops = group_kernels(r.trace);
    r.split = split_steps(r.trace, r.ops, layers_per_step);
    r.collective_ordinal.assign(r.ops.size(), -1);
    for (std::size_t i = 0; i < r.ops.size(); ++i)
      if (r.ops[i].collective) r.collective_ordinal[i] = r.collectives++;
  }
}

void check_rank_steps_match(const std::vector<RankOps>& ranks) {
  const RankOps& a = ranks[0];
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    const RankOps& b = ranks[r];
    const std::string mismatch = "the files are not the ranks of one run (they must hold the same kernels)";
    if (a.collectives != b.collectives)
      throw InputError(fmt::format("{}: {} collective kernels, but {} has {}: {}", b.trace.file, b.collectives,
                                   a.trace.file, a.collectives, mismatch));
    if (a.split.steps.size() != b.split.steps.size())
      throw InputError(fmt::format("{}: {} steps found, but {} has {}: {}", b.trace.file, b.split.steps.size(),
                                   a.trace.file, a.split.steps.size(), mismatch));
  }
}

void check_rank_ops_match(const std::vector<RankOps>& ranks, const std::vector<int>& selected) {
  const RankOps& a = ranks[0];
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    const RankOps& b = ranks[r];
    const std::string mismatch = "the files are not the ranks of one run (they must hold the same kernels)";
    for (int s : selected) {
      const auto& sa = a.split.steps[static_cast<std::size_t>(s)];
      const auto& sb = b.split.steps[static_cast<std::size_t>(s)];
      if (sa.size() != sb.size())
        throw InputError(fmt::format("{}: step {} has {} ops, but in {} it has {}: {}", b.trace.file, s, sb.size(),
                                     a.trace.file, sa.size(), mismatch));
      for (std::size_t j = 0; j < sa.size(); ++j) {
        const ImportedOp& oa = a.ops[sa[j]];
        const ImportedOp& ob = b.ops[sb[j]];
        if (oa.signature() != ob.signature())
          throw InputError(fmt::format("{}: step {} op {} is {}, but in {} it is {}: {}", b.trace.file, s, j,
                                       ob.signature(), a.trace.file, oa.signature(), mismatch));
      }
    }
  }
}

std::optional<CollectiveAlignment> align_rank_collectives(const std::vector<RankOps>& ranks) {
  if (ranks.size() <= 1) return std::nullopt;
  std::vector<std::vector<CollectiveTiming>> timings(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (const auto& op : ranks[r].ops)
      if (op.collective) timings[r].push_back({op.collective_start, op.collective_end});
  return align_collectives(timings);
}

}  // namespace eaglesim
