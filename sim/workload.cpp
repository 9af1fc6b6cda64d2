#include "sim/workload.hpp"

namespace overlap::sim {

const char* primitive_name(Primitive p) {
  switch (p) {
    case Primitive::all_reduce: return "all_reduce";
    case Primitive::reduce_scatter: return "reduce_scatter";
    case Primitive::all_gather: return "all_gather";
    case Primitive::all_to_all: return "all_to_all";
  }
  return "?";
}

}  // namespace overlap::sim
