#pragma once
// A pipeline or context-parallel job's figures in `run`'s report (docs/guide/pipeline.md): per scheme
// the step, the bubble, exposed PP (send/recv and bubble), exposed CP and DP and throughput; per stage
// its busy and idle time, the micro-batch chunks it holds at its peak and its memory per GPU.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/pipeline_step.hpp"
#include "sim/step_memory.hpp"

namespace overlap::sim {

struct PipelineReport {
  Workload workload;                       // the job as the scenario gives it
  std::vector<PipelineStepResult> results;  // evaluate_pipeline's, in scheme order
  std::vector<StepMemory> stage_memory;     // stage_memories (empty where the memory model does not apply)
};

// The table's block: a heading naming the job and what the table above it is (one stage's step of one
// micro-batch), one row per scheme, then one row per stage for the first scheme. Empty without results.
std::string format_pipeline_report(const PipelineReport& report);

// The same as JSON: {"pp", "vpp", "micro_batches", "schedule", "cp", "cp_algorithm", "definitions",
// "results": [{scheme, step_us, pipeline_us, bubble_fraction, exposed_pp_us, exposed_p2p_us,
// exposed_bubble_us, exposed_cp_us, exposed_dp_us, tokens_per_s, chunk_forward_us, chunk_backward_us,
// p2p_bytes, p2p_us, cp: {...}, stages: [{stage, busy_us, idle_us, peak_chunks_in_flight}]}],
// "stage_memory": [step_memory_json...]}.
nlohmann::json pipeline_report_json(const PipelineReport& report);

// The Chrome-trace events of one scheme's schedule: one process ("pipeline") with a thread per stage and
// a complete event per pass ("F3" = micro-batch 3's forward, "B", "W"; ".c1" = model chunk 1), after
// `pid`'s processes so they sit beside the engine's ranks of the stage's step.
nlohmann::json pipeline_trace_events(const PipelineStepResult& result, int pid);

}  // namespace overlap::sim
