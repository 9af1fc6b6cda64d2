#pragma once
// TaskGraph: what a scheme builder produces and the engine runs (design.md "Data flow").
// Ops live on in-order streams of a rank (GPU); explicit dependencies express cross-stream events and
// cross-rank synchronisation; counters express FlashOverlap's counting table and PyTorch's barrier.
// Cycles (including ones closed by stream order) are rejected with the ops on the cycle named (a
// depth-first search; Boost.Graph builds the graph for the Graphviz export).
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cost_model/hardware_profile.hpp"
#include "cost_model/units.hpp"
#include "sim/collective_steps.hpp"

namespace overlap::sim {

using OpId = std::int32_t;
using StreamId = std::int32_t;
using CounterId = std::int32_t;
inline constexpr OpId kNoOp = -1;

enum class OpKind : std::uint8_t {
  tiled,        // a grid of CTAs dispatched in launch order onto free SMs (GEMM, attention)
  persistent,   // min(max_ctas, free SMs) CTAs, each looping over its share of the tiles
  comm_kernel,  // holds `channels` SMs for its whole life: a fixed-duration collective (curve
                // fidelity) or phases of transfers (steps fidelity, SM-driven copies)
  memory,       // memory-bound kernel: `bytes` through the GPU's HBM share
  copy,         // copy-engine transfer: takes one engine of `rank`'s GPU, no SMs
  wait,         // completes when a counter reaches `target` (no SMs; FlashOverlap wait kernel)
  signal,       // adds `amount` to a counter when it runs (zero time)
  delay,        // a fixed time on its stream holding nothing (host gaps, modelled work)
};
const char* op_kind_name(OpKind k);

// Which pass of a training step an op belongs to, and which communicator a communication op runs on:
// what the per-pass and per-communicator figures of a step are computed from (sim/metrics.hpp).
enum class StepPass : std::uint8_t { forward, backward };
enum class Communicator : std::uint8_t { tp, dp };

struct Op {
  std::string name;
  StepPass pass = StepPass::forward;
  Communicator communicator = Communicator::tp;
  OpKind kind = OpKind::delay;
  StreamId stream = -1;  // the rank is the stream's rank
  bool comm = false;     // communication op: takes zero time in the compute-only re-run
  Ps host_ps = 0;        // host time to issue it beyond one launch (a library collective's enqueue)
  std::vector<OpId> deps;  // must complete before this op may start (besides stream order)

  // tiled / persistent: `ctas` tiles of `cta_ps` each, `ctas_per_sm` resident per SM. A tile's time
  // stretches while communication kernels hold SMs of its GPU (GpuConfig::comm_interference) and
  // while its HBM traffic (`hbm_bytes_per_cta` per tile, at full speed) gets less than it needs.
  std::int64_t ctas = 0;
  int ctas_per_sm = 1;
  Ps cta_ps = 0;
  Bytes hbm_bytes_per_cta = 0;
  int max_ctas = 0;  // persistent: grid size (0 = one CTA per slot of the GPU: sm_count * ctas_per_sm)
  // SMs that ran tiles when cta_ps was measured (GemmPlan::reference_sms): with
  // GpuConfig::full_rate_sms, the tile time is rescaled to the SMs running tiles now. 0 = never.
  int reference_sms = 0;
  // Tile completion signalling: empty, one counter (every tile adds 1), or one per tile in dispatch
  // order (tile i adds 1 to tile_counters[i]).
  std::vector<CounterId> tile_counters;

  // comm_kernel
  int channels = 0;      // SMs held
  Ps duration_ps = 0;    // curve fidelity: time once every member is resident
  std::int64_t collective = -1;  // members with the same id start together (curve) / match (steps)
  int members = 1;       // ranks taking part (curve rendezvous)
  std::vector<Phase> phases;  // steps fidelity: when non-empty, duration_ps is added after them
  // Curve fidelity: the bytes this member sends to each peer over the whole collective. They load
  // the links as flows (so concurrent traffic contends), running at the rate that makes the
  // collective take duration_ps on an idle fabric; curve_latency_ps of duration_ps is latency that
  // moves no bytes. curve_reduces: receivers reduce what arrives (HBM traffic, as Phase::reduce).
  std::vector<PeerBytes> curve_sends;
  Bytes curve_from_switch = 0;  // bytes the switch multicasts down to this member (NVLS)
  Ps curve_latency_ps = 0;
  bool curve_reduces = false;
  // Curve fidelity, a member whose fellow members are GPUs outside the graph (the data-parallel
  // counterparts of a TP rank: only one TP group is simulated, docs/guide/training.md): the bytes it
  // sends to each of them, and receives from each, as flows on the links between them and on its own
  // HBM. The receives stand for the symmetric members' sends, which are not simulated.
  std::vector<PeerBytes> outside_sends, outside_recvs;
  // Phase transfers: costed as this transport (nccl_p2p: CommFuse's send/recv; sm_copy: an SM copy
  // kernel of `channels` CTAs; one_sided: put/get) by the fabric (fabric.hpp); unset: NCCL
  // collective steps, at link_efficiency with the phase latency covering the wire's.
  std::optional<Transport> transport;
  // Phase transfers run at this fraction of the rate the fabric gives them in isolation: a collective
  // library's busbw falls short of the links' (NCCL: comm.bandwidth_efficiency x protocol efficiency).
  double link_efficiency = 1.0;
  // The phases' latency_ps already includes the wire latency of their transfers (NCCL's per-step
  // latency does), so the transfers start moving at once instead of paying their route's latency too.
  bool phase_latency_covers_wire = false;

  // memory
  Bytes bytes = 0;  // also the copy size

  // copy
  int src_gpu = -1, dst_gpu = -1;

  // wait / signal
  CounterId counter = -1;
  std::int64_t target = 0;  // wait: counter >= target
  std::int64_t amount = 1;  // signal

  // delay
  Ps delay_ps = 0;

  // Every field, so a field added later is compared too (TaskGraph::operator==).
  bool operator==(const Op&) const = default;
};

struct Stream {
  std::string name;
  int rank = 0;
  int priority = 0;  // higher runs first when SMs free up (CUDA: lower number = higher priority)
  bool operator==(const Stream&) const = default;
};

struct Counter {
  std::string name;
  bool operator==(const Counter&) const = default;
};

class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TaskGraph {
 public:
  explicit TaskGraph(int num_ranks = 1);
  // A graph's op storage outlives it on its thread: the next graph built there fills memory already
  // mapped and touched instead of growing a fresh vector (a 70B training step's graphs hold about
  // 10^5-10^6 ops of ~370 bytes each per scheme, and each doubling of a new vector faulted its pages
  // in afresh: a tenth of the step's time). One spare per thread, the largest seen.
  ~TaskGraph();
  TaskGraph(const TaskGraph&) = default;
  TaskGraph(TaskGraph&&) noexcept = default;
  TaskGraph& operator=(const TaskGraph&) = default;
  TaskGraph& operator=(TaskGraph&&) noexcept = default;

  int num_ranks() const { return num_ranks_; }
  StreamId add_stream(int rank, std::string name, int priority = 0);
  CounterId add_counter(std::string name);
  OpId add(Op op);                   // throws GraphError on an invalid op (names it)
  // Ops added from now on carry this pass (the training step's builder marks the backward).
  void set_pass(StepPass pass) { pass_ = pass; }
  StepPass pass() const { return pass_; }
  // The last op added to `stream` (kNoOp: none yet).
  OpId last_on_stream(StreamId stream) const;
  void depend(OpId after, OpId before);  // `after` waits for `before`

  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Stream>& streams() const { return streams_; }
  const std::vector<Counter>& counters() const { return counters_; }
  const Op& op(OpId id) const { return ops_.at(static_cast<std::size_t>(id)); }
  int rank_of(OpId id) const { return streams_[static_cast<std::size_t>(op(id).stream)].rank; }

  // Throws GraphError if the dependencies and stream order form a cycle; the message names the ops
  // on one cycle in order.
  void check_acyclic() const;
  // Graphviz (dot) of ops, dependency edges (solid) and stream order (dashed), clustered by rank.
  std::string to_graphviz() const;

  // Two graphs are equal when every op, stream and counter is (names included): the engine, a
  // deterministic function of the graph, the node and its options, then gives both the same timeline
  // (evaluate_all simulates such a graph once). digest() is XXH3's 128-bit hash of every field of
  // every op, stream and counter: two different graphs share a digest with a chance of about 2^-128,
  // so a digest stands in for a graph no longer kept.
  bool operator==(const TaskGraph&) const = default;
  struct Digest {
    std::uint64_t low = 0, high = 0;
    bool operator==(const Digest&) const = default;
  };
  Digest digest() const;

 private:
  int num_ranks_;
  std::vector<Op> ops_;
  std::vector<Stream> streams_;
  std::vector<Counter> counters_;
  std::vector<OpId> last_on_stream_;
  StepPass pass_ = StepPass::forward;
};

}  // namespace overlap::sim
