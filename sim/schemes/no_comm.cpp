// no_comm (delayed-tp-blog, "Preliminary Experiments" (no-comm)): TP with every all-reduce removed (the
// lower bound on time; the blog shows the quality loss).
#include "sim/schemes/decode_stack.hpp"

namespace overlap::sim {

SchemeInfo make_no_comm_scheme() {
  return decode_stack_scheme("no_comm", "delayed-tp-blog, 'Preliminary Experiments' (no-comm)",
                             "TP with every all-reduce removed (lower bound on time; the blog shows the quality loss)",
                             [](const BuildContext&, int layers) { return no_comm_plan(layers); });
}

}  // namespace overlap::sim
