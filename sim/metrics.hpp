#pragma once
// Metrics of one scheme on one workload (design.md "Metrics"). One definition of exposed
// communication, used everywhere: exposed = latency - compute-only latency, where compute-only is the
// same graph re-run with every communication op taking zero time.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"
#include "sim/engine.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/timeline.hpp"

namespace overlap::sim {

// A scheme broke an invariant the simulator guarantees (byte accounting); a bug, not bad input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct ResourceUtilization {
  int rank = 0;
  double sm = 0;           // sum over SMs of busy time / (sm_count * latency), in [0, 1]
  double copy_engine = 0;  // busy time / (copy_engines * latency)
};

// One collective call of a run, as nccl-tests would report it (facts.md "NCCL on 8xH100"; nccl-tests
// src/common.cu): S = the full array size; time from the moment its last member joined to its end
// (nccl-tests times a call after a barrier, so a late peer's wait is not part of it); algbw = S / time;
// busbw = algbw x the primitive's factor (2(n-1)/n all-reduce, (n-1)/n reduce-scatter, all-gather,
// all-to-all; cost_model/collective_primitive.hpp). In an overlapped run the time includes the
// slowdown from traffic and SMs it shared with the computation beside it.
struct CollectiveFigure {
  std::string name;
  std::string primitive;  // "all_reduce", ...
  Bytes bytes = 0;
  int ranks = 0;
  Ps start_ps = 0;  // last member joined
  Ps end_ps = 0;    // last member done
  Ps time_ps = 0;   // end - start
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::string algorithm;  // NCCL's choice for this size (the model's)
  std::string protocol;
  int channels = 0;
  std::string communicator = "tp";  // tp | dp (a training step's data-parallel traffic)
};

// One pass of a training step: its part of the latency in the main run and in the compute-only re-run.
// The forward ends when its last op ends; the backward is the rest of the step (data-parallel tail
// included). exposed = latency - compute-only, as for the whole run.
// comm = the pass's part of the workload's collectives alone (SchemeResult::comm_ps split where the
// forward's last collective ends), and overlap_efficiency = 1 - exposed / comm clamped to [0, 1], as
// for the whole run.
struct PassFigures {
  Ps latency_ps = 0;
  Ps compute_only_ps = 0;
  Ps exposed_comm_ps = 0;
  Ps comm_ps = 0;
  double overlap_efficiency = 0;
};

// The training-step figures of a run (present when the workload is a training step: a backward, or
// data parallelism). Exposed time per communicator: the step's latency minus its latency with that
// communicator's operations taking zero time (the one definition, applied to one communicator), so
// the two need not add up to the whole exposed time when both overlap each other.
struct StepFigures {
  bool present = false;
  std::string pass;       // forward | backward | step
  PassFigures forward, backward;
  Ps exposed_tp_ps = 0;
  Ps exposed_dp_ps = 0;
  // Model FLOPs one GPU does per step (GEMMs and core attention: 1x forward, 2x backward; never the
  // recomputation; PaLM, Chowdhery et al., Appendix B) and MFU = model FLOPs / (latency x peak).
  double model_flops = 0;
  double mfu = 0;
  // Tokens the whole data-parallel job processes per second: tokens of the TP group x dp / latency.
  double tokens_per_s = 0;
};

struct SchemeResult {
  std::string scheme;
  nlohmann::json params;      // the parameters it ran with
  Ps latency_ps = 0;          // makespan over ranks
  Ps compute_only_ps = 0;     // same graph, communication ops taking zero time
  Ps comm_ps = 0;             // the workload's collectives alone on an idle node, no overlap
  Ps scheme_comm_ps = 0;      // this scheme's own communication alone: its graph re-run with every
                              // compute op taking zero time (decomposed P2P steps can beat comm_ps)
  Ps exposed_comm_ps = 0;     // latency - compute-only (may be < 0 only through engine anomalies;
                              // reported as computed, never clamped)
  double overlap_efficiency = 0;  // 1 - exposed / comm, clamped to [0, 1] (see metrics.cpp)
  double overlap_efficiency_raw = 0;  // unclamped value (0 when comm == 0)
  double speedup_vs_no_overlap = 0;   // baseline latency / latency; 0 = no baseline evaluated
  Ps bound_ps = 0;            // latency perfect overlap would give (FlashOverlap Sec. 6.4): the scheme's
                              // own bound if it states one, else max(compute-only, scheme_comm)
  double pct_of_bound = 0;    // 100 * bound / latency
  int sms_lost_to_comm = 0;   // peak SMs held by communication ops on any rank
  std::string reason;         // the scheme's one-line why
  std::vector<ResourceUtilization> utilization;  // per rank
  std::uint64_t events = 0;   // engine events of the main run
  std::vector<CollectiveFigure> collectives;  // every collective call of the main run, in issue order
  StepFigures step;           // a training step's figures (step.present)
  Timeline timeline;          // the main run (for traces); empty unless keep_timeline
  // A scheme that could not be evaluated (EvaluateOptions::keep_going): its row reports the failure
  // and every figure above is 0. error_key is the failing key below the scheme ("params.groups").
  std::string error;
  std::string error_key;
  int request = -1;  // index into evaluate_all's request list
  // > 0: a deep transformer's figures composed from runs of this many layers and one and two more
  // (sim/layer_composition.hpp); collectives and utilization per rank are then the shorter runs'.
  int composed_from_layers = 0;
  bool failed() const { return !error.empty(); }
};

struct EvaluateOptions {
  // evaluate_all: a scheme that throws an input error (bad parameters, hardware it cannot use,
  // times out of range) becomes a failed row instead of ending the whole evaluation.
  bool keep_going = false;
  bool record_ctas = false;    // keep CTA intervals in the timeline (traces)
  bool keep_timeline = false;  // store the main run's timeline in the result
  // Check byte accounting (timeline bytes == BuiltScheme::required_bytes) on the main run: collectives
  // move their algorithm's bytes at both fidelities.
  bool verify_bytes = true;
  // What every scheme of a scenario shares, computed once by evaluate_all: the workload's
  // collectives alone (< 0: evaluate computes it).
  Ps comm_ps = -1;
  // A training step: the part of comm_ps until the forward's last collective ends (< 0: evaluate
  // computes it), computed with comm_ps from the same run.
  Ps forward_comm_ps = -1;
  // Only the main run (latency, events): what a baseline needs for the speedup column.
  bool latency_only = false;
};

// Latency of the workload's collectives alone, one after another on an idle node (the
// "communication time" every scheme of a workload is measured against).
// `node`: the engine's node for `hardware` when the caller has one (nullptr: built here).
Ps workload_comm_ps(const Workload& workload, const HardwareProfile& hardware, Fidelity fidelity,
                    const NodeConfig* node = nullptr);
// The same run, with where its forward ends (a training step's collectives split per pass).
struct WorkloadComm {
  Ps total_ps = 0;
  Ps forward_ps = 0;  // until the forward's last collective ends (0: no forward)
};
WorkloadComm workload_comm(const Workload& workload, const HardwareProfile& hardware, Fidelity fidelity,
                           const NodeConfig* node = nullptr);

// Builds the scheme's graph, runs it, re-runs it compute-only, checks byte accounting (InternalError
// on a mismatch) and computes the metrics. speedup_vs_no_overlap is left 0 (evaluate_all fills it).
SchemeResult evaluate(const SchemeInfo& scheme, const BuildContext& ctx,
                      const EvaluateOptions& options = {});

struct SchemeRequest {
  std::string name;
  nlohmann::json params = nlohmann::json::object();
};

// Evaluates each requested scheme that applies to the workload (those that do not are skipped), and
// fills speedup_vs_no_overlap against the baseline: `no_overlap`, or `tp_baseline` for decode_stack
// workloads. The baseline is evaluated (with default params) even when not requested, but only
// requested schemes are returned. Throws std::invalid_argument for an unknown scheme name.
std::vector<SchemeResult> evaluate_all(const std::vector<SchemeRequest>& schemes,
                                       const Workload& workload, const HardwareProfile& hardware,
                                       Fidelity fidelity, const EvaluateOptions& options = {});

// The parameters a scheme runs with on `workload`: `given` plus every declared default not given
// (SchemeParam) that applies to it (param_applies: a training-only knob is not shown for a forward pass).
nlohmann::json params_with_defaults(const SchemeInfo& scheme, const nlohmann::json& given, const Workload& workload);

// The baseline scheme name for a workload ("no_overlap", or "tp_baseline" for decode_stack).
std::string baseline_scheme_for(const Workload& workload);

// The per-collective figures of a run: the calls a scheme recorded (BuiltScheme::collectives) with
// the start and end of their member ops in the timeline.
std::vector<CollectiveFigure> collective_figures(const BuiltScheme& built, const Timeline& tl);

nlohmann::json to_json(const CollectiveFigure& c);
nlohmann::json to_json(const StepFigures& s);
nlohmann::json to_json(const SchemeResult& r);

}  // namespace overlap::sim
