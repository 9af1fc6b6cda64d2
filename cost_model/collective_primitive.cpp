#include "cost_model/collective_primitive.hpp"

#include <array>
#include <stdexcept>
#include <utility>

#include "cost_model/enum_names.hpp"

namespace overlap {

namespace {

using Prim = CollectivePrimitive;
constexpr std::array kPrimitiveNames{
    std::pair{Prim::all_reduce, "all_reduce"}, std::pair{Prim::reduce_scatter, "reduce_scatter"},
    std::pair{Prim::all_gather, "all_gather"}, std::pair{Prim::all_to_all, "all_to_all"},
    std::pair{Prim::broadcast, "broadcast"},   std::pair{Prim::reduce, "reduce"}};
static_assert(rows_in_enum_order(kPrimitiveNames));

}  // namespace

const char* collective_primitive_name(CollectivePrimitive p) { return name_of(kPrimitiveNames, p); }
std::optional<CollectivePrimitive> parse_collective_primitive(const std::string& s) {
  return parse_name(kPrimitiveNames, s);
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
