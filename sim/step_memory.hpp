#pragma once
// The memory per GPU of a transformer workload's training step (docs/guide/training.md "Memory per
// GPU"): the workload and the profile mapped onto cost_model/memory_model.hpp, the block the report
// prints and the check `run --fit-only` makes.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/hardware_profile.hpp"
#include "cost_model/memory_model.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

// What the model counts and leaves out, one line (the report and the docs say it once).
extern const char* const kStepMemoryScope;

struct StepMemory {
  memory::StepMemoryBytes bytes;
  Bytes hbm_bytes = 0;  // the profile's gpu.hbm_bytes; 0 = not given
  int stage = -1;       // the pipeline stage (0-based); -1 = not a pipeline job
  std::string scope = kStepMemoryScope;  // what is counted (the JSON's "scope")
  // The peak is within the profile's capacity (true when the capacity is not given: nothing to check).
  bool fits() const { return hbm_bytes == 0 || bytes.peak_bytes <= hbm_bytes; }
};

// The step's memory per GPU, or nullopt when the memory model does not cover the workload: only a dense
// transformer (no MoE layers, no latent attention) with a backward (pass backward or step). A pipeline
// job's is its fullest stage's (stage_memories).
std::optional<StepMemory> step_memory(const Workload& w, const HardwareProfile& hw);
// A pipeline or context-parallel job (Training::job): each stage's memory per GPU, with layers / pp
// layers, the activations of the micro-batch chunks its schedule holds at once (run_pipeline's
// peak_in_flight), seq / cp tokens per rank, the embedding on the first stage and the output layer and
// logits on the last (the model config's vocab_size), and a communicator each for PP and CP. A workload
// without a job: one entry, step_memory's. Empty where the memory model does not apply.
std::vector<StepMemory> stage_memories(const Workload& w, const HardwareProfile& hw);

// What a layer's weight gradient (W, split off the backward by ZB-H1 and DualPipe) still needs once the
// input gradient (B) has run, per TP rank: each linear's input (QKV, output projection, the MLP's two) in
// `linear_input_bytes`, sequence-parallel shards where the layer stores them, and the gradient of each
// linear's output in `activation_bytes` (dW = X^T dY; Qi et al., "Zero Bubble Pipeline Parallelism",
// Sec. 2: W needs the layer's inputs and the gradients B computed).
Bytes weight_gradient_bytes_per_layer(const memory::LayerShape& layer, int tp);

// The workload keys that decide the memory, with their values: "workload.tp = 8, workload.batch = 1, ...".
std::string step_memory_keys(const Workload& w);

// The report's block: a heading, one row of GiB figures, and a warning line when the peak is above the
// profile's HBM capacity.
std::string format_step_memory(const StepMemory& m);
// The same as JSON: every figure in bytes, the capacity (null when not given) and whether it fits.
nlohmann::json step_memory_json(const StepMemory& m);

}  // namespace overlap::sim
