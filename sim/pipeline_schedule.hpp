#pragma once
// Pipeline-parallel schedules: the order in which each pipeline stage runs the forward and backward
// passes of its micro-batches, and the timeline that order gives when each pass takes a known time
// and activations and gradients take a known time to cross from one stage to the next.
//
//   gpipe             every forward, then every backward (Huang et al., GPipe, Sec. 2.2).
//   one_f_one_b       PipeDream-Flush / 1F1B: stage s runs pp - s - 1 forwards, then alternates one
//                     forward and one backward, then drains its backwards (Narayanan et al. SC'21,
//                     Sec. 2.2.1). At most pp - s micro-batches' activations are held at once.
//   interleaved       Megatron-LM's interleaved 1F1B: each stage holds vpp model chunks (virtual stage
//                     c * pp + s) and runs micro-batches in groups of pp per chunk (Narayanan et al.
//                     SC'21, Sec. 2.2.2); the bubble shrinks by vpp at the price of vpp times the
//                     stage-to-stage transfers.
//   zero_bubble_h1    ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR'24, Sec. 2.1, Fig. 3
//                     top): the backward split into the input gradient (B, on the critical path) and the
//                     weight gradient (W, needed only by the optimizer); 1F1B's order of F and B, with the
//                     W of micro-batch k after the B of micro-batch k + s on stage s and the last s + 1
//                     Ws at the end. Stage s holds 1F1B's pp - s micro-batches awaiting B and at most pp
//                     awaiting W (1F1B's first stage's count), so no stage holds more activations than
//                     1F1B's first (W keeps only the linears' inputs and output gradients); bubble
//                     (pp - 1)(F + B - W), a third of 1F1B's (pp - 1)(F + B + W) at F = B = W.
//   dualpipe          DualPipe (DeepSeek-V3 technical report, Sec. 3.2.1; deepseek-ai/DualPipe): micro-batches
//                     fed from both ends. Stage s holds model stage s for the micro-batches entering at
//                     stage 0 (direction 0, PipelineWork::chunk 0) and model stage pp - 1 - s for those
//                     entering at stage pp - 1 (direction 1): two copies of the parameters. In the steady
//                     state a forward of one direction and a whole backward of the other run as one
//                     F&B chunk whose communication hides behind the other's compute; warm-up and
//                     cool-down split backwards into B and W as ZB-H1 does. Bubble
//                     (pp / 2 - 1)(F&B + B - 3W), B the whole backward (the report's Table 2).
//
// The timeline here is the schedule's own arithmetic: each pass a fixed duration, each transfer a
// fixed delay that overlaps compute (sent asynchronously, as Megatron-LM and torchtitan do). It is
// exact for that model and is what the closed forms (the 1F1B bubble (pp - 1) / (m + pp - 1)) are
// stated for; the engine prices the passes themselves.
#include <cstdint>
#include <string_view>
#include <vector>

#include "cost_model/units.hpp"

namespace overlap::sim {

enum class PipelineSchedule : std::uint8_t { gpipe, one_f_one_b, interleaved, zero_bubble_h1, dualpipe };

// "gpipe", "1f1b", "interleaved", "zb_h1", "dualpipe"; from_name throws std::invalid_argument listing them.
std::string_view pipeline_schedule_name(PipelineSchedule s);
PipelineSchedule pipeline_schedule_from_name(std::string_view name);

// forward; backward (the whole backward, or only the input gradient where the schedule splits it);
// weight (the weight gradient, split schedules only).
enum class PipelinePass : std::uint8_t { forward, backward, weight };

struct PipelineWork {
  PipelinePass pass = PipelinePass::forward;
  int micro_batch = 0;
  int chunk = 0;  // the stage's model chunk (0..vpp-1): virtual stage chunk * pp + stage; dualpipe: the direction
  // dualpipe: this forward and the backward and weight gradient after it in the order run as one
  // F&B chunk (their start and end are the pair's).
  bool paired = false;
  bool operator==(const PipelineWork&) const = default;
};

struct PipelineShape {
  int stages = 1;          // pp
  int chunks = 1;          // vpp: model chunks per stage (interleaved only; 1 otherwise)
  int micro_batches = 1;   // per step
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
};

// Throws std::invalid_argument naming the rule a shape breaks: stages, chunks, micro_batches >= 1;
// chunks > 1 only for interleaved, which also needs micro_batches a multiple of stages (Megatron-LM
// runs micro-batches in groups of pp per chunk); dualpipe needs pp even and micro_batches even and at
// least 2 pp (half enter at each end; deepseek-ai/DualPipe's step() asserts the same).
void check_pipeline_shape(const PipelineShape& shape);

// Each stage's fixed order of work, every schedule's (run_pipeline runs it: a pass starts once its inputs
// are in and the stage's pass before it has ended).
std::vector<std::vector<PipelineWork>> pipeline_order(const PipelineShape& shape);

struct PipelineCosts {
  // One micro-batch's pass on each virtual stage (chunk * pp + stage), stages * chunks entries each:
  // uneven first and last stages (the embedding, the output layer and loss) are uneven entries.
  // dualpipe: one entry per model stage (pp), the same for both directions.
  std::vector<Ps> forward_ps, backward_ps, weight_ps;  // weight_ps: zero_bubble_h1 and dualpipe only (else empty)
  // dualpipe: per model stage, the communication a forward, and a whole backward (B + W), leave exposed
  // when run alone (the engine's latency less its compute-only latency); an F&B chunk hides each behind
  // the other's compute: F&B = F + (B + W) - min(fc, B + W - bc) - min(bc, F - fc). Empty: none.
  std::vector<Ps> forward_comm_ps, backward_comm_ps;
  // dualpipe: how fast one pass's compute runs while the other pass's communication kernels share the GPU
  // (1 = full speed). DeepSeek-V3 Sec. 3.2.1: the chunk's communication is hidden behind compute, but its
  // kernels hold SMs the compute then lacks, so the hidden time is only `rate` of it saved. In (0, 1].
  double paired_compute_rate = 1.0;
  // Activations (forward) or their gradients (backward) from one stage to the next: the delay
  // between the end of a pass and when the next stage may start on it. Not paid between two chunks
  // of the same stage (pp = 1 with vpp > 1).
  Ps p2p_ps = 0;
};

struct PipelineSlot {
  PipelineWork work;
  Ps start_ps = 0;
  Ps end_ps = 0;
};

struct PipelineTimeline {
  std::vector<std::vector<PipelineSlot>> stages;  // per stage, in the order run
  Ps step_ps = 0;                                  // the last pass's end
  std::vector<Ps> busy_ps;                         // per stage: the sum of its passes
  // Per stage: the most micro-batch chunks whose forward ran and whose backward did not yet (the
  // activations the stage holds at its peak, in units of one chunk's activations).
  std::vector<int> peak_in_flight;
};

// One F&B chunk's time (dualpipe): forward `f` and whole backward `b` (B + W) with their exposed
// communication `f_comm` and `b_comm` each hidden behind the other's compute where it fits. The compute a
// communication hides behind runs at `compute_rate` of its speed meanwhile (the SMs the communication
// kernels hold): of each hidden span h, h x compute_rate is saved.
Ps paired_pass_ps(Ps f, Ps b, Ps f_comm, Ps b_comm, double compute_rate = 1.0);

// A stage's activations over its timeline, walking its passes in order: `full` per micro-batch chunk
// whose forward ran and whose backward did not, `weight` per chunk whose input gradient ran and whose
// weight gradient did not (`split`: a schedule with W passes, which still need the linears' inputs and
// output gradients). Returns the peak and the two counts at it (the first peak in the order).
struct StageActivationPeak {
  double peak = 0;
  int full_chunks = 0;
  int weight_chunks = 0;
};
StageActivationPeak stage_activation_peak(const std::vector<PipelineSlot>& slots, bool split, double full, double weight);

// Runs the schedule on the costs. Throws std::invalid_argument for a bad shape or cost vectors of the
// wrong length or with negative entries, std::logic_error if the order cannot finish (a bug).
PipelineTimeline run_pipeline(const PipelineShape& shape, const PipelineCosts& costs);

}  // namespace overlap::sim
