#pragma once
// Collective primitives and nccl-tests' bus-bandwidth convention (facts.md "NCCL on 8xH100
// NVSwitch"; nccl-tests doc/PERFORMANCE.md): algbw = S / t with S the full array size, and
// busbw = algbw * factor, where the factor makes busbw comparable to the link bandwidth:
//   AllReduce 2(n-1)/n;  ReduceScatter, AllGather, AlltoAll (n-1)/n;  Broadcast, Reduce 1.
#include <optional>
#include <string>

namespace overlap {

enum class CollectivePrimitive { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce };

const char* collective_primitive_name(CollectivePrimitive p);  // "all_reduce", ...
std::optional<CollectivePrimitive> parse_collective_primitive(const std::string& s);

double busbw_factor(CollectivePrimitive p, int n_ranks);
double busbw_from_algbw(CollectivePrimitive p, int n_ranks, double algbw_gbps);
double algbw_from_busbw(CollectivePrimitive p, int n_ranks, double busbw_gbps);

}  // namespace overlap
