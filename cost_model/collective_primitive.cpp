#include "cost_model/collective_primitive.hpp"

#include <stdexcept>

namespace overlap {

const char* collective_primitive_name(CollectivePrimitive p) {
  switch (p) {
    case CollectivePrimitive::all_reduce: return "all_reduce";
    case CollectivePrimitive::reduce_scatter: return "reduce_scatter";
    case CollectivePrimitive::all_gather: return "all_gather";
    case CollectivePrimitive::all_to_all: return "all_to_all";
    case CollectivePrimitive::broadcast: return "broadcast";
    case CollectivePrimitive::reduce: return "reduce";
  }
  return "?";
}

std::optional<CollectivePrimitive> parse_collective_primitive(const std::string& s) {
  for (auto p : {CollectivePrimitive::all_reduce, CollectivePrimitive::reduce_scatter,
                 CollectivePrimitive::all_gather, CollectivePrimitive::all_to_all,
                 CollectivePrimitive::broadcast, CollectivePrimitive::reduce}) {
    if (s == collective_primitive_name(p)) return p;
  }
  return std::nullopt;
}

double busbw_factor(CollectivePrimitive p, int n_ranks) {
  if (n_ranks < 1) throw std::invalid_argument("busbw_factor: n_ranks must be >= 1");
  const double n = n_ranks;
  switch (p) {
    case CollectivePrimitive::all_reduce: return 2.0 * (n - 1) / n;
    case CollectivePrimitive::reduce_scatter:
    case CollectivePrimitive::all_gather:
    case CollectivePrimitive::all_to_all: return (n - 1) / n;
    case CollectivePrimitive::broadcast:
    case CollectivePrimitive::reduce: return 1.0;
  }
  return 1.0;
}

double busbw_from_algbw(CollectivePrimitive p, int n_ranks, double algbw_gbps) {
  return algbw_gbps * busbw_factor(p, n_ranks);
}

double algbw_from_busbw(CollectivePrimitive p, int n_ranks, double busbw_gbps) {
  const double f = busbw_factor(p, n_ranks);
  return f > 0 ? busbw_gbps / f : 0.0;
}

}  // namespace overlap
