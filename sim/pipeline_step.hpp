#pragma once
// A transformer training step under pipeline parallelism: each stage's forward and backward of one
// micro-batch simulated by the engine with the scheme's tensor-parallel overlap (one TP group; every
// middle stage alike), the stage-to-stage activation transfers priced by the cost model, and the
// schedule (sim/pipeline_schedule.hpp) composing them into the step.
//
// What is composed, not simulated as one graph: a stage's passes do not overlap each other in the
// engine (1F1B runs one at a time on a stage, so only the stage-to-stage transfers could overlap
// compute, and those are sent asynchronously as Megatron-LM does: a delay, not a held resource).
// Data-parallel gradient reduction runs once per step after a stage's last backward, exposed as the
// engine measures it for one micro-batch's step of the stage's layers (DDP and ZeRO-1/2; ZeRO-3 with
// pipeline parallelism, which gathers parameters for every micro-batch, is refused).
// Context parallelism (sim/context_parallel.hpp) runs each chunk at seq / cp tokens per rank; the engine
// prices the rank's own attention (step 0 of the ring: its two causal chunks), and the ring's other
// cp - 1 steps are added to every layer of the chunk: each step's blocks timed by the engine as one
// attention kernel, the key/value block to the next CP rank hidden behind them where it is shorter
// (context_parallel_times). The added attention runs after the chunk's own, not beside its TP
// collectives.
// Around a chunk's layers (pipeline_stage_kernels): the step's memory-bound kernels between its blocks
// (norms, rotary, residual adds; cost_model/step_kernels.hpp), the token embedding on the first virtual
// stage and the final norm, output layer and vocabulary-parallel cross-entropy on the last, each chain
// run by the engine on the TP group and added to the chunk's passes (in the step's graph they sit on the
// compute stream between the blocks, after one and before the next); once per step on each stage the
// FP8 weight casts and the optimizer over its shard, after the gradient reduction. First and last stages
// are heavier than the middle ones, and the schedule runs each stage's own times.
#include <string>
#include <vector>

#include "sim/context_parallel.hpp"
#include "sim/metrics.hpp"
#include "sim/pipeline_schedule.hpp"

namespace overlap::sim {

struct PipelineParallel {
  int pp = 1;             // stages
  int vpp = 1;            // model chunks per stage (interleaved)
  int micro_batches = 1;  // per step; the workload's batch is one micro-batch
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int cp = 1;             // context-parallel ranks: the sequence split cp ways
  ContextParallel cp_algorithm = ContextParallel::ring;
  int first_stage_layers = 0;  // 0: layers / pp (sim/pipeline_layers.hpp)
  int last_stage_layers = 0;
};

// Layers per stage, and per virtual stage (chunk x pp + stage: the stage's layers / vpp).
std::vector<int> pipeline_stage_layers(const Workload& w, const PipelineParallel& pp);
std::vector<int> pipeline_chunk_layers(const Workload& w, const PipelineParallel& pp);

// The workload's own settings (Training::job).
PipelineParallel pipeline_parallel_of(const Workload& w);

// The workload one stage runs for one micro-batch: layers / pp, seq / cp tokens per rank, pass step,
// the data parallelism as given and no pipeline or context parallelism of its own.
Workload stage_workload(const Workload& w, const PipelineParallel& pp);

// One layer's context parallelism beyond the rank's own attention (what the engine's chunk at seq / cp
// prices), forward and backward.
struct ContextParallelLayer {
  Bytes kv_bytes = 0;           // the key/value block a rank passes (ring) or contributes (all-gather)
  Ps kv_ps = 0;                 // one such block to the next CP rank
  Ps block_forward_ps = 0;      // one block of attention (S / 2cp queries x S / 2cp keys, unmasked)
  Ps block_backward_ps = 0;
  Ps forward_extra_ps = 0;      // added to the layer's forward: the other steps' attention and exposed transfers
  Ps backward_extra_ps = 0;
  Ps forward_exposed_ps = 0;    // of which communication not hidden behind attention
  Ps backward_exposed_ps = 0;
};
ContextParallelLayer context_parallel_layer(const Workload& w, const HardwareProfile& hardware, const PipelineParallel& pp);

// What a virtual stage runs besides its layers' blocks, from the engine (zero where the workload runs
// no step kernels: not a dense transformer with a vocabulary, see training_step.hpp step_kernel_shape).
struct StageKernelTimes {
  Ps forward_ps = 0;        // one micro-batch's forward: layer kernels, the embedding (first), the loss (last)
  Ps backward_ps = 0;       // its backward, recomputation's kernels included
  Ps once_per_step_ps = 0;  // the physical stage's FP8 weight casts and optimizer (on its chunk 0's entry)
};
// Per virtual stage (chunk x pp + stage). distinct_once: the first, the last and one middle virtual stage
// simulated and the rest copied (they run the same kernels and collectives); false simulates each one.
std::vector<StageKernelTimes> pipeline_stage_kernels(const Workload& workload, const HardwareProfile& hardware,
                                                     Fidelity fidelity, const PipelineParallel& pp,
                                                     bool distinct_once = true);

struct PipelineStepResult {
  std::string scheme;
  Ps chunk_forward_ps = 0;   // one micro-batch through one model chunk (layers / (pp x vpp))
  Ps chunk_backward_ps = 0;
  Bytes p2p_bytes = 0;       // one TP rank's activation shard to the next stage
  Ps p2p_ps = 0;
  Ps pipeline_ps = 0;        // the schedule's makespan
  Ps exposed_dp_ps = 0;      // the gradient reduction after the last backward
  // dualpipe: the all-reduce of each stage's gradients with the GPU holding the other copy of its two
  // model stages (pipeline_mirror_grad_ps), after the last backward; 0 otherwise.
  Ps mirror_grad_ps = 0;
  Ps optimizer_ps = 0;       // the slowest stage's FP8 weight casts and optimizer, once per step
  Ps step_ps = 0;            // pipeline + exposed DP + mirror gradients + optimizer
  Ps bubble_ps = 0;          // the busiest stage's idle time within the pipeline
  double bubble_fraction = 0;
  // bubble_ps split: the schedule's warm-up and cool-down with free transfers, and what the stage-to-
  // stage transfers add to it (the schedule run again with p2p_ps = 0 tells them apart).
  Ps exposed_bubble_ps = 0;
  Ps exposed_p2p_ps = 0;
  ContextParallelLayer cp;   // per layer (zero without context parallelism)
  Ps exposed_cp_ps = 0;      // CP communication not hidden, over the busiest stage's passes of the step
  std::vector<StageKernelTimes> stage_kernels;  // per virtual stage, added to the chunk's passes
  std::vector<int> peak_micro_batches;  // per stage: chunk activations held at the peak
  double tokens_per_s = 0;   // the whole job: micro-batch tokens x micro-batches x dp / step
  PipelineTimeline timeline;
};

// Throws std::invalid_argument naming the rule a configuration breaks (layers divisible by
// pp x vpp; the schedule's own rules; a transformer workload; ZeRO-3).
void check_pipeline_parallel(const Workload& workload, const PipelineParallel& pp);

// The activation shard one TP rank sends to the next stage: micro-batch tokens / tp (sequence
// parallel) x d_model in the workload's dtype.
Bytes pipeline_p2p_bytes(const Workload& workload);

// One transfer of `bytes` between adjacent stages: NCCL send/recv over the NIC when a stage boundary
// leaves the node (tp x dp >= gpus_per_node, Megatron-LM's rank order with PP outermost), over NVLink
// inside it.
Ps pipeline_p2p_ps(const HardwareProfile& hardware, const Workload& workload, Bytes bytes);

// DualPipe (DeepSeek-V3 Sec. 3.2.1) keeps two copies of the parameters: GPU s and GPU pp - 1 - s both hold
// model stages s and pp - 1 - s and each computes gradients for its half of the micro-batches, so the two
// sum them (deepseek-ai/DualPipe, examples/example_dualpipe.py, "Check grads"): a two-rank all-reduce of
// both model stages' gradients per TP rank, in parallel.grad_dtype, over the link between the two stages,
// every pair at once. The slowest pair's time (the outer one holds the embedding and the output layer).
Ps pipeline_mirror_grad_ps(const HardwareProfile& hardware, const Workload& workload, const PipelineParallel& pp);

// DualPipe's F&B chunk: the speed of one pass's compute while the other pass's communication kernels hold
// the profile's NCCL channels' SMs (comm.channels, one SM each) and slow the rest by the profile's
// gemm_comm_interference: (S - k) / S / (1 + interference x k / S) for S SMs and k channels.
double paired_compute_rate(const HardwareProfile& hardware);

// `stage_steps`, when given, are the schemes' results on stage_workload (what `run` shows as the step's
// table): their exposed DP is the job's; without them the stage step is run here where dp > 1.
std::vector<PipelineStepResult> evaluate_pipeline(const std::vector<SchemeRequest>& schemes,
                                                  const Workload& workload, const HardwareProfile& hardware,
                                                  Fidelity fidelity, const PipelineParallel& pp,
                                                  const std::vector<SchemeResult>* stage_steps = nullptr);

}  // namespace overlap::sim
