#pragma once
// The configuration search of `overlap-sim plan` (docs/guide/plan.md): for one model, GPU count, global
// batch, sequence length and profile, every (tp, cp, pp, vpp, dp with its ZeRO stage, micro-batch size and
// count, recomputation, overlap scheme) that multiplies out to the GPUs and divides the batch, each built
// as a scenario by --set overrides on a base scenario (so the loader's rules decide what is valid, not a
// second copy of them here), pruned by the memory model (sim/step_memory.hpp) before anything is
// simulated, and the survivors simulated as `run` would run them (a job through sim/pipeline_step.hpp,
// a plain step through evaluate_all), side by side on sim/sweep_parallel.hpp's parallel_for.
//
// The order of candidates, outcomes and the ranking never depends on the thread count or timing: the
// enumeration is nested loops in a fixed order, results are written by index, and the ranking breaks a
// tie in step time by that index (and names the tie).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/context_parallel.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/scenario.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

// The values each axis takes. resolve_plan_axes fills an empty list with the search's default.
struct PlanAxes {
  std::vector<int> tp;                // default: powers of two up to a node's GPUs (and the GPU count)
  std::vector<int> cp;                // default: 1, 2, 4, 8
  std::vector<int> pp;                // default: every divisor of gpus / (tp x cp)
  std::vector<int> vpp;               // default: 1, 2 (with pp > 1 only; pp = 1 takes vpp 1)
  std::vector<int> micro_batch_size;  // sequences per micro-batch; default 1, 2, 4
  std::vector<Sharding> fsdp;         // with dp > 1 only (dp = 1 is none); default all four
  std::vector<Recompute> recompute;   // default none, selective, full
  // The schedules with vpp = 1 (pp > 1); vpp > 1 runs `interleaved` when it is listed. Default 1f1b, interleaved.
  std::vector<PipelineSchedule> schedules;
  std::vector<ContextParallel> cp_algorithm;  // with cp > 1 only; default ring
  std::vector<std::string> schemes;           // default: the base scenario's schemes
};

struct PlanQuery {
  Scenario base;                  // a transformer scenario: its hardware, model, dtype and schemes
  std::string hardware_dir;       // where the base's built-in profile names resolve ("" = the default)
  int gpus = 0;
  std::int64_t global_batch = 0;  // sequences per step
  std::int64_t seq = 0;           // tokens per sequence
  PlanAxes axes;                  // resolved (resolve_plan_axes)
  int jobs = 1;                   // threads
};

// `axes` with every empty list filled with its default for this query.
PlanAxes resolve_plan_axes(const PlanAxes& axes, const Scenario& base, int gpus);

// One configuration of the search.
struct PlanCandidate {
  int tp = 1, cp = 1, pp = 1, vpp = 1, dp = 1;
  Sharding fsdp = Sharding::none;
  int micro_batch_size = 1;   // sequences (the workload's batch)
  std::int64_t micro_batches = 1;
  Recompute recompute = Recompute::none;
  std::optional<PipelineSchedule> schedule;          // pp > 1
  std::optional<ContextParallel> cp_algorithm;       // cp > 1
  std::string scheme;
  int index = 0;              // its place in the enumeration (the tie-break)
};

// The --set assignments that make the base scenario this candidate (its scheme aside: the scheme is
// chosen from the base's list). `workload.parallel` is written whole, so keys of the base's parallel
// block that no longer apply (fsdp with dp 1, vpp without pp) cannot survive into a candidate.
std::vector<std::string> plan_candidate_sets(const PlanCandidate& c, std::int64_t seq);
// "tp 8 cp 1 pp 4 vpp 2 dp 2 zero1 mbs 1 x 8 selective interleaved te_userbuffers": one line, for tables.
std::string plan_candidate_label(const PlanCandidate& c);

// Every candidate, in the search's order: tp, cp, pp (dp = gpus / (tp cp pp)), vpp, schedule, CP
// algorithm, fsdp, micro-batch size, recompute, scheme, each in its axis's order. Only the products
// equal to `gpus` and the micro-batch sizes with dp x size dividing the global batch are candidates.
std::vector<PlanCandidate> plan_candidates(const PlanQuery& query);

enum class PlanVerdict { ranked, out_of_memory, invalid, failed };
const char* plan_verdict_name(PlanVerdict v);

struct PlanOutcome {
  PlanCandidate candidate;
  PlanVerdict verdict = PlanVerdict::invalid;
  std::string reason;       // invalid / failed: the loader's or the simulator's message
  std::string reason_key;   // invalid: the key the loader named ("workload.parallel.pp")
  // Memory (when the memory model covers the workload): the fullest stage's peak per GPU.
  std::optional<Bytes> peak_bytes;
  int fullest_stage = -1;
  // Figures (ranked): the step, per-GPU throughput, MFU, and exposed time per communicator over the step.
  Ps step_ps = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  Ps exposed_tp_ps = 0;  // a job: the stage step's exposed TP for one micro-batch x micro-batches
  Ps exposed_dp_ps = 0;
  Ps exposed_pp_ps = 0;  // bubble and send/recv (jobs with pp > 1)
  Ps exposed_cp_ps = 0;
  double bubble_fraction = 0;
  bool job = false;      // ran through the pipeline composition (pp, cp or micro-batches > 1)
};

struct PlanResult {
  PlanQuery query;
  std::vector<PlanOutcome> outcomes;  // enumeration order
  std::vector<int> ranking;           // indices of ranked outcomes, fastest first (ties by index)
  Bytes hbm_bytes = 0;                // the profile's capacity (0: not given, nothing pruned)
  int simulated = 0;                  // candidates that reached the simulator (ranked + failed)
  // Filled only when `simulate_all`: every valid candidate was simulated, memory or not (the test that
  // the pruning never drops a fitting candidate).
  bool simulate_all = false;
};

class SweepWorld;

struct PlanOptions {
  bool simulate_all = false;  // simulate the out-of-memory candidates too (their verdict stays out_of_memory)
  // Under mpirun (sim/sweep_mpi.hpp): the candidates to simulate are dealt round-robin to the ranks, as a
  // sweep's points are; each rank simulates its share on query.jobs threads, and every rank ends with
  // every outcome (rank 0 gathers them and sends them all back), so the result is the one process's.
  const SweepWorld* world = nullptr;
};

// Runs the search. Throws std::invalid_argument when the query itself is wrong (no candidate at all).
PlanResult plan_search(const PlanQuery& query, const PlanOptions& options = {});

}  // namespace overlap::sim
