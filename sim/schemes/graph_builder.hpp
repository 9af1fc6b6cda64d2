#pragma once
// Building blocks every scheme uses to turn a workload into a TaskGraph (design.md "Scheme library",
// "The simulation model"). Schemes describe algorithms with these calls; the durations come from the
// cost model (GEMM tile plans, collective curves and steps, HBM bandwidth), so no scheme carries its
// own timing formula.
//
// Collective size convention: `bytes` is nccl-tests' S, the full array size
// (all_reduce: each rank's buffer; reduce_scatter: each rank's input; all_gather: each rank's output;
// all_to_all: each rank's send buffer). facts.md "NCCL on 8xH100 NVSwitch".
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cost_model/all_to_allv.hpp"
#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"
#include "sim/engine.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/task_graph.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

struct GemmOptions {
  std::string name = "gemm";
  std::vector<OpId> deps;
  // Tile completion signalling (FlashOverlap's counting table): empty, one counter, or one per tile.
  std::vector<CounterId> tile_counters;
  // SMs the GEMM may use (TransformerEngine set_sm_margin; FlashOverlap's "SMs - 2"); 0 = all SMs.
  // For a tiled GEMM this is the wave width the tile time is planned for; for a persistent GEMM it
  // caps the grid.
  int sm_budget = 0;
  bool persistent = false;  // a Hopper persistent GEMM (grid = min(tiles, SMs)) instead of tiled
  // Extra epilogue work per tile as a fraction of its time (FlashOverlap's pre-communication
  // reorder, flashoverlap-paper Sec. 3.3 / Table 5: < 1 %).
  double epilogue_overhead = 0;
};

// A memory-bound kernel: elementwise, reduction, RMSNorm, reorder, batch-1 GEMV (weight streaming).
struct MemoryKernel {
  std::string name = "memory";
  Bytes bytes = 0;  // bytes read + written through HBM
  std::vector<OpId> deps;
  // SMs held while it runs. 0: limited by HBM alone (the engine then needs no free SM), the
  // weight-streaming idealisation of delayed-tp-blog "Theoretical Exposed Wait-time".
  int sms = 0;
};

// One collective across `ranks` (default: every rank of the graph), one op per member rank.
struct CollectiveSpec {
  std::string name = "collective";
  Primitive primitive = Primitive::all_reduce;
  Bytes bytes = 0;               // nccl-tests S (see the header comment)
  std::vector<int> ranks;        // members; empty = 0 .. ranks()-1
  std::vector<StreamId> streams; // one per member, in `ranks` order
  std::vector<std::vector<OpId>> deps;  // per member (may be empty = none)
  int channels = -1;             // SMs held; < 0 = NCCL's channel count for this size (plan_collective)
  // NCCL_ALGO for this call; nullopt = default_algorithm() (the profile's comm.algorithm, else NCCL's
  // choice per size).
  std::optional<NcclAlgorithm> algorithm;
  // Fixed duration instead of the collective model's (delayed-tp-blog's measured tau_c); < 0 = model.
  // Curve fidelity only: at steps fidelity the algorithm's transfers run.
  Ps fixed_duration_ps = -1;
};

// One all-to-all with unequal sizes (all-to-allv) across `ranks`, as NCCL runs it (grouped
// send/recv; cost_model/all_to_allv.hpp): bytes[i][j] is what member i sends to member j (members in
// `ranks` order; bytes[i][i] is a local copy on no link).
struct AllToAllvSpec {
  std::string name = "all_to_allv";
  overlap::PairBytes bytes;       // members x members
  std::vector<int> ranks;         // members; empty = 0 .. ranks()-1
  std::vector<StreamId> streams;  // one per member, in `ranks` order
  std::vector<std::vector<OpId>> deps;  // per member (may be empty = none)
  int channels = -1;              // SMs held; < 0 = the slowest rank's even plan's channels
};

// One point-to-point exchange kernel of a rank (design.md "Scheme library"): what it sends to and
// receives from which peers, matched across ranks by `collective` (the ranks exchanging in one round
// share it), costed as `transport` by the fabric, holding `channels` SMs while it runs.
struct P2pSpec {
  std::string name = "p2p";
  // nccl_p2p (NCCL send/recv), sm_copy (an SM copy kernel of `channels` CTAs) or one_sided; a
  // copy-engine transfer is a copy op (GraphBuilder::add_copy), not a kernel.
  Transport transport = Transport::nccl_p2p;
  int channels = 0;
  std::int64_t collective = -1;
  int members = 2;
  std::vector<PeerBytes> sends, recvs;
  std::vector<OpId> deps;
};

// Per-rank streams most schemes need: a compute stream and a (higher-priority) communication stream.
struct RankStreams {
  std::vector<StreamId> compute;  // indexed by rank
  std::vector<StreamId> comm;
};

// The algorithm a collective is forced to: the profile's comm.algorithm (NCCL_ALGO), nullopt when NCCL
// chooses per call by size (cost_model/collective_model.hpp plan_collective). all_to_all always runs
// as SendRecv (NCCL_ALGO does not govern send/recv).
std::optional<NcclAlgorithm> default_algorithm(const HardwareProfile& hw, Primitive p);
CollectivePrimitive to_collective_primitive(Primitive p);
// The link class a collective over `ranks` GPUs runs on: "network" when it spans nodes of a
// multi_node fabric, "host" when it spans NUMA nodes of a pcie fabric, else the intra-node class.
std::string collective_link_class(const HardwareProfile& hw, int ranks);

// HBM traffic of one GEMM tile at full speed (graph_builder.cpp says how it is counted).
Bytes gemm_tile_hbm_bytes(const HardwareProfile& hw, const GemmShape& shape, const GemmPlan& plan);

// A grouped GEMM (one kernel over several GEMMs of the same N and K, as an MoE rank runs its local
// experts: CUTLASS grouped GEMM, Megatron-core's GroupedMLP): its tiles are the sum of every group's
// tiles, dispatched group by group, each group's tile time averaged into one (tiles of equal N and K
// differ only where a small group takes a smaller tile), and its weights streamed once per group.
struct GroupedGemmPlan {
  std::vector<GemmPlan> groups;  // per shape (tiles 0 for an empty group)
  std::int64_t tiles = 0;
  int ctas_per_sm = 1;
  int reference_sms = 0;
  Ps cta_ps = 0;                 // ceil(sum of tiles x tile time / tiles)
  Ps memory_ps = 0;              // every group's weights once
  Bytes hbm_bytes_per_cta = 0;
  std::int64_t waves(int sms) const;
  // What the GEMM takes alone on `sms` SMs: max(waves x cta_ps, memory_ps).
  Ps time_ps(int sms) const;
};
GroupedGemmPlan plan_grouped_gemm(const HardwareProfile& hw, const std::vector<GemmShape>& shapes);

class GraphBuilder {
 public:
  explicit GraphBuilder(const BuildContext& ctx);
  GraphBuilder(const BuildContext& ctx, int ranks);  // a graph over `ranks` ranks (not workload.tp)

  int ranks() const { return graph_.num_ranks(); }
  const HardwareProfile& hardware() const { return ctx_.hardware; }
  const Workload& workload() const { return ctx_.workload; }
  Fidelity fidelity() const { return ctx_.fidelity; }
  TaskGraph& graph() { return graph_; }

  // Streams. Priority: higher runs first when SMs free up (task_graph.hpp).
  StreamId add_stream(int rank, const std::string& name, int priority = 0);
  std::vector<StreamId> add_streams(const std::string& name, int priority = 0);  // one per rank
  // compute (priority 0) + comm (priority 1) on every rank.
  RankStreams add_compute_and_comm_streams();

  // A fresh collective id (rendezvous / phase matching key).
  std::int64_t new_collective_id() { return next_collective_++; }
  CounterId add_counter(const std::string& name) { return graph_.add_counter(name); }

  // GEMM as a tiled (or persistent) op from cost_model's GEMM plan (tile shape, tile count, per-tile
  // time for the SMs it may use). A GEMM with m, n or k == 0 is a zero-time delay op.
  OpId add_gemm(int rank, StreamId stream, const GemmShape& shape, const GemmOptions& options = {});
  // A grouped GEMM (GroupedGemmPlan) as one tiled op; with one shape it is add_gemm's op. Empty
  // groups (m = 0) add nothing; all empty: a zero-time delay.
  OpId add_grouped_gemm(int rank, StreamId stream, const std::vector<GemmShape>& shapes, const GemmOptions& options = {});
  // A tiled kernel from an explicit FLOP count (attention): tiles of `tile_flops` each at the GEMM
  // model's per-SM rate.
  OpId add_flop_kernel(int rank, StreamId stream, const std::string& name, double total_flops,
                       std::int64_t tiles, DType dtype, const std::vector<OpId>& deps = {});
  OpId add_memory(int rank, StreamId stream, const MemoryKernel& kernel);

  // One collective as NCCL runs it (cost_model's plan_collective: algorithm, protocol, channels by
  // size): per member either one `comm_kernel` op whose duration is the plan's time (curve fidelity,
  // rendezvous on a fresh collective id) or the algorithm's steps as phases (steps fidelity,
  // cost_model's collective_steps). The op holds the plan's channels as SMs unless the spec names a
  // count. Returns the member ops in `ranks` order. A curve op
  // carries the collective's nominal size in Op::bytes (the engine ignores it for comm_kernel ops; the
  // byte accounting check uses it to tell a data-moving collective from a barrier).
  // Adds the bytes the collective moves to required_bytes().
  std::vector<OpId> add_collective(const CollectiveSpec& spec);
  // An all-to-allv (AllToAllvSpec). Curve fidelity: one comm_kernel per member, all of the same
  // duration, all_to_allv_cost's time: the operation ends with its slowest rank (FlashOverlap Sec. 4.2,
  // the maximum over GPUs), and each member's per-peer bytes load the links as flows (curve_sends).
  // Steps fidelity: all_to_allv_steps' rounds as phases. Adds bytes[i][j] (i != j) to
  // required_bytes(). With every off-diagonal pair equal to S / n (and the diagonal S / n), it is
  // add_collective(all_to_all, S) exactly: same plan, duration, flows, phases and bytes.
  std::vector<OpId> add_all_to_allv(const AllToAllvSpec& spec);
  // Time the collective takes alone on an idle node at curve fidelity (what add_collective uses):
  // plan_collective(...).time_ps.
  Ps collective_ps(Primitive primitive, Bytes bytes, int members) const;

  // A copy-engine transfer of `bytes` from src_gpu to dst_gpu on `stream` (comm op, no SMs).
  // Adds the bytes to required_bytes() when `count_required` (a copy that is part of a collective).
  OpId add_copy(int rank, StreamId stream, int src_gpu, int dst_gpu, Bytes bytes,
                const std::string& name, const std::vector<OpId>& deps = {},
                bool count_required = true);

  // A point-to-point exchange kernel (P2pSpec). Its bytes are not added to required_bytes(): a
  // decomposed collective states what it must move as a whole.
  OpId add_p2p(int rank, StreamId stream, const P2pSpec& spec);
  // A one-block barrier kernel on every member (PyTorch SymmetricMemory's barrier): each rank puts a
  // flag to its peers and waits for theirs, one one-sided latency over the group's link class.
  // Returns the member ops in `ranks` order (empty ranks = every rank).
  std::vector<OpId> add_barrier(const std::vector<StreamId>& streams, const std::vector<std::vector<OpId>>& deps,
                                const std::string& name, const std::vector<int>& ranks = {});
  // How long `bytes` take from src to dst by `transport` alone on an idle node: the network side's
  // one answer (transfer_price.hpp), which the engine also uses, so reasons quote what was simulated.
  Ps transfer_ps(int src, int dst, Bytes bytes, Transport transport, int ctas = 0) const;

  OpId add_wait(int rank, StreamId stream, CounterId counter, std::int64_t target,
                const std::string& name, const std::vector<OpId>& deps = {});
  OpId add_signal(int rank, StreamId stream, CounterId counter, std::int64_t amount,
                  const std::string& name, const std::vector<OpId>& deps = {});
  OpId add_delay(int rank, StreamId stream, Ps delay_ps, const std::string& name,
                 const std::vector<OpId>& deps = {}, bool comm = false);

  // Byte accounting ([src][dst], ranks x ranks) of what the collectives added so far need.
  const std::vector<std::vector<Bytes>>& required_bytes() const { return required_; }
  void add_required_bytes(int src, int dst, Bytes bytes);
  // Bytes each member sends to each other member for a collective moved by the collective model's
  // algorithm (the same one add_collective's steps use), added to required_bytes().
  void add_collective_required_bytes(Primitive primitive, Bytes bytes, const std::vector<int>& ranks);

  // The steps a collective of `plan` over `members` ranks of `link` runs (per member index: sends and
  // receives with peer member indices, -1 the switch): what add_collective's steps and byte accounting
  // use, for a collective whose other members are outside the graph (the data-parallel traffic).
  CollectiveSchedule schedule_of(const CollectivePlan& plan, Bytes bytes, int members, const std::string& link) const;
  // Records a collective call made outside add_collective (the data-parallel traffic of a step).
  void record_call(CollectiveCall call) { calls_.push_back(std::move(call)); }

  // Moves the graph and byte accounting into a BuiltScheme (the builder is empty afterwards).
  BuiltScheme finish(std::string reason, Ps bound_ps = -1);

 private:
  const BuildContext& ctx_;
  TaskGraph graph_;
  // Plans and schedules of the collectives built so far, by (primitive, bytes, members, forced
  // algorithm): a model's layers repeat the same calls, and a schedule costs a list of steps per rank.
  struct PlannedCollective {
    CollectivePlan plan;
    CollectiveSchedule schedule;
  };
  std::map<std::tuple<int, Bytes, int, int>, PlannedCollective> planned_;
  std::int64_t next_collective_ = 0;
  std::vector<std::vector<Bytes>> required_;
  std::vector<CollectiveCall> calls_;
};

// How a training step runs the backward of a column-parallel linear.
enum class ColumnBackward : std::uint8_t {
  scheme,  // dgrad -> reduce-scatter through the scheme's pattern; the input's re-gather -> wgrad likewise
  // Megatron-LM's asynchronous backward and TransformerEngine userbuffers' bulk overlaps
  // (Korthikanti et al. Sec. 4.2.2; TE ub_cfgs bulk_dgrad / bulk_wgrad): the input's all-gather runs
  // beside dgrad, and dgrad's reduce-scatter (all-reduce) beside wgrad.
  bulk,
};

// A layer workload (gemm_collective, mlp_tpsp, attention_tpsp, attention_ulysses, transformer) as a
// pipeline of `chunks` slices along M (tokens; heads for Ulysses): slice i's GEMM overlaps slice
// i-1's collective on a second stream (Megatron / MindSpeed data slicing, commfuse-paper Sec. 1-2).
// chunks = 1 is no overlap. collectives_only keeps only the collectives. Defined in data_slicing.cpp.
struct SlicedLayerOptions {
  int chunks = 1;
  bool collectives_only = false;
  // mlp_tpsp: false (default) pipelines each linear layer on its own, as Megatron's and MindSpeed's
  // per-linear slicing does: every slice's up-projection, then every slice's down-projection, so the
  // reduce-scatter slices overlap only the down-projection. true runs the whole layer slice by slice
  // (up-projection, activation, down-projection of slice i, then slice i+1), so slice i's
  // reduce-scatter overlaps all of slice i+1's work (commfuse-table1-mlp.yaml: what the paper's
  // Table 1 figures imply).
  bool layer_order = false;
  // A training step's column-parallel backward (sim/schemes/training_step.hpp).
  ColumnBackward column = ColumnBackward::scheme;
};
BuiltScheme build_sliced_layers(const BuildContext& ctx, const SlicedLayerOptions& options);

// The workload's collectives alone, one after another on one stream per rank, no computation: what
// "communication time" (design.md "Metrics") is measured on. Defined in no_overlap.cpp, whose order of
// collectives it shares.
BuiltScheme build_workload_collectives(const BuildContext& ctx);

// The compute of one unit of a decomposed scheme (async TP's sub-matmuls, CommFuse's slices): `rows`
// rows of the layer's work on `stream` after `deps`; returns the last op it emitted.
using UnitCompute = std::function<OpId(int rank, StreamId stream, std::int64_t rows, const std::string& name,
                                       const std::vector<OpId>& deps)>;
// The unit compute of a GEMM: `rows` rows of `g` (n, k and dtype kept).
UnitCompute gemm_unit(GraphBuilder& b, const GemmShape& g);
// The unit compute of a GEMM split along K (a wgrad over gathered tokens): `rows` of `g`'s K, m, n
// and dtype kept; the partial results accumulate into one output.
UnitCompute gemm_unit_split_k(GraphBuilder& b, const GemmShape& g);

// A whole model as its layers (design.md "Workloads", transformer): per layer attention then MLP,
// each emitter given the per-rank ops it starts after (empty for the first layer) and the layer's
// op-name prefix ("L3."), returning the per-rank ops that end it. Layer l+1 waits on each rank for
// layer l's MLP (its input is that output), so layers do not overlap one another. Returns the last
// layer's end ops.
using LayerEmitter = std::function<std::vector<OpId>(const std::vector<OpId>& start, const std::string& prefix)>;
std::vector<OpId> compose_layers(int layers, const LayerEmitter& attention, const LayerEmitter& mlp);

// The bound of a P2P decomposition of collectives of sizes `collectives` (nccl-tests S) over T ranks:
// every byte a rank receives crosses its port. One layer keeps the largest collective's (T-1)/T share;
// in a composed model (`summed`) every collective goes through the same ports, and the ranks receive
// (T-1)/T of their sum on average, so the busiest rank at least that sum.
Ps decomposition_bound_ps(const HardwareProfile& hw, int T, const std::vector<Bytes>& collectives, bool summed);

// A lower bound on any schedule that moves `recv_bytes` into one rank: its port's raw link bandwidth
// (no latency, no protocol efficiency). The generic bound (NCCL's collective alone) is not one for
// a P2P decomposition, which skips NCCL's base and per-step latencies.
Ps port_bound_ps(const HardwareProfile& hw, int ranks, Bytes recv_bytes);

}  // namespace overlap::sim
