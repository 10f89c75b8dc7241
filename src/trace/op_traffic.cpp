#include "trace/op_traffic.hpp"

namespace eaglesim {

// Op's own weight_bytes, io_bytes and flops already count exactly this traffic (each weight and
// activation once, the KV cache once); only the collectives' bytes are no HBM floor.
OpTraffic op_traffic(const Op& op) {
  if (op.kind == OpKind::allreduce || op.kind == OpKind::other) return {};
  return {op.weight_bytes() + op.io_bytes(), op.flops()};
}

OpTraffic add_rmsnorm_traffic(const Op& norm) {
  const double a = 2.0;  // bf16
  const double rows = static_cast<double>(norm.tokens) * static_cast<double>(norm.hidden);
  return {a * (4.0 * rows + static_cast<double>(norm.hidden)), 0.0};
}

KindTraffic sum_kind_traffic(const std::vector<UnitTraffic>& units) {
  KindTraffic t{};
  for (const UnitTraffic& u : units) {
    if (!u.counted) continue;
    OpTraffic& k = t[static_cast<std::size_t>(u.kind)];
    k.bytes += u.traffic.bytes;
    k.flops += u.traffic.flops;
  }
  return t;
}

}  // namespace eaglesim
