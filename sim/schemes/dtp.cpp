// dtp (delayed-tp-blog, "Delayed Tensor Parallelism (DTP)" and "Theoretical Exposed Wait-time"
// (Delta_DTP)): each all-reduce is consumed delta modules later, hidden behind their weight streaming.
#include "sim/schemes/decode_stack.hpp"
#include "sim/schemes/param_rows.hpp"

namespace overlap::sim {

namespace {

// The upper limit delta <= 2 * layers depends on the workload: dtp_plan checks it.
const SchemeParam kDelta =
    int_param(knobs::kDtpDelta, "modules between an all-reduce and its use (the blog derives 1 and even values)")
        .tune({1, 2, 4});

}  // namespace

SchemeInfo make_dtp_scheme() {
  return decode_stack_scheme(
      "dtp", "delayed-tp-blog, 'Delayed Tensor Parallelism (DTP)' and 'Theoretical Exposed Wait-time' (Delta_DTP)",
      "Delayed TP: each all-reduce is consumed delta modules later, hidden behind their weight streaming",
      [](const BuildContext& ctx, int layers) { return dtp_plan(layers, ctx.integer(kDelta)); }, {kDelta});
}

}  // namespace overlap::sim
