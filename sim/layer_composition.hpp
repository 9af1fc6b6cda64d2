#pragma once
// Transformers of any depth in seconds: identical layers simulated once in steady state, the rest
// composed exactly.
//
// A transformer's layers after its dense prefix are identical, and the engine's step over them is
// periodic: each further layer adds the same picoseconds to every figure (the forward's layer, the
// backward's layer, their collectives and, with FSDP, the layer's gathers and reduce-scatters). So a
// run of L layers is the run of k layers plus (L - k) times the difference between the runs of k + 1
// and k layers, exactly, whenever the runs of k, k + 1 and k + 2 layers show the same difference in
// every figure (checked, never assumed). Some repeat over more than one layer (FSDP's prefetch
// alternates two buffers: every second layer); the shortest period of up to kMaxCompositionPeriod
// layers is used, from a depth k with L - k a whole number of periods. If none repeats, the run is
// refused with the reason rather than approximated. DDP and ZeRO-1/2 fill gradient buckets across
// layers, a pattern whose period is set by bytes: those are not composed, except DDP whose one bucket
// holds the whole model (Megatron-LM's local DDP: one all-reduce after the backward), where each run of
// fewer layers reduces the whole model's gradients as the deep step does (DataParallel::gradient_layers).
//
// Only a workload beyond the tile budget (scenario.hpp kMaxGemmTilesPerRank) is composed: below it
// the full simulation runs, so every result that could be compared with one is one. A composed
// result has composed_from_layers set; its per-collective list and timeline are the k-layer run's.
// The engine's own statistics are composed the same way but are not held to the period: the event
// count of a whole run can differ from the composed one by about 1 % (flow re-sharing and event
// batching do not repeat layer by layer in MoE and FSDP runs) and its SM and copy-engine busy
// fractions by about a millionth; every latency, exposed time and step figure is exact.
#include <optional>
#include <string>
#include <vector>

#include "sim/metrics.hpp"

namespace overlap::sim {

// The layers of the shortest run composition starts from (its dense prefix and four layers), or
// nullopt when composition_refusal gives a reason.
std::optional<int> composition_base_layers(const Workload& workload);
// Why the workload's step is not composed from fewer layers ("" when it may be): not a transformer, too
// few layers, ZeRO-1/2, or DDP buckets smaller than the model.
std::string composition_refusal(const Workload& workload);

// evaluate_all over runs of k, k + P and k + 2P layers, composed to the workload's depth. Throws
// std::invalid_argument when no period up to kMaxCompositionPeriod repeats.
std::vector<SchemeResult> evaluate_all_composed(const std::vector<SchemeRequest>& schemes, const Workload& workload,
                                                const HardwareProfile& hardware, Fidelity fidelity,
                                                const EvaluateOptions& options = {});

inline constexpr int kMaxCompositionPeriod = 4;

// The workload with `layers` layers (a Transformer's depth); a DDP step keeps reducing the gradients of
// the original depth (DataParallel::gradient_layers).
Workload with_layers(const Workload& w, int layers);
// The depths evaluate_all simulates for `workload` when it composes it (every depth
// evaluate_all_composed may run, in the order it may run them); empty when the workload runs whole.
std::vector<int> composition_depths(const Workload& workload);

}  // namespace overlap::sim
