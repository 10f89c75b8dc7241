#include "cuda/comm/ideal_comm_group.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"

namespace eaglesim::cuda {

namespace {

class IdealRankComm final : public RankComm {
 public:
  IdealRankComm(std::string strategy, int rank, int ranks) : strategy_(std::move(strategy)), rank_(rank), ranks_(ranks) {}
  std::string strategy() const override { return strategy_; }
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  void allreduce(const void*, void*, std::size_t, DType, cudaStream_t) override {}
  std::size_t max_bytes() const override { return SIZE_MAX; }

 private:
  std::string strategy_;
  int rank_, ranks_;
};

class IdealCommGroup final : public CommGroup {
 public:
  IdealCommGroup(const std::string& strategy, int ranks) {
    for (int r = 0; r < ranks; ++r) ranks_.push_back(std::make_unique<IdealRankComm>(strategy, r, ranks));
  }
  RankComm& rank(int r) override { return *ranks_.at(r); }
  int ranks() const override { return static_cast<int>(ranks_.size()); }
  void abort() override {}

 private:
  std::vector<std::unique_ptr<IdealRankComm>> ranks_;
};

}  // namespace

std::unique_ptr<CommGroup> create_ideal_comm_group(const CommGroupConfig& config) {
  if (config.ranks < 1) throw InputError(config.strategy + ": needs at least one rank");
  return std::make_unique<IdealCommGroup>(config.strategy, config.ranks);
}

}  // namespace eaglesim::cuda
