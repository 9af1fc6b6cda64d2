#pragma once
// A trace's kernels as a task graph that can be replayed (calibrate/traces/trace_replay.hpp).
//
// Each GPU activity (kernel or copy) of each rank is a node with its measured duration. A node cannot
// start before:
//   - the previous node on its stream has ended (a CUDA stream runs its work in launch order;
//     CUDA C++ Programming Guide, "Streams");
//   - its launch: the CPU call that launched it (cudaLaunchKernel & co., joined by correlation id)
//     plus the rank's launch latency, inferred as the least start-minus-launch over its kernels;
//   - the end of the node its stream waits for: a stream wait the trace records (Kineto's cuda_sync
//     "Stream Wait Event" with wait_on_stream and wait_on_cuda_event_record_corr_id: the waiting
//     stream's next launch waits for the waited stream's last launch before that cudaEventRecord);
// and a collective's transfer starts when the last member of its group has arrived
// (calibrate/traces/collective_wait.hpp matches members across ranks and aligns their clocks).
//
// The CPU side is replayed too. Each launching thread's launches and blocking synchronisations
// (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize: CUDA Runtime API,
// "Stream Management" / "Device Management" / "Event Management") are CPU nodes in call order:
//   - a call follows the thread's previous one after the measured CPU gap between them (from a
//     launch's call, or from a synchronisation's return): what the CPU did in between is kept as
//     measured, so a what-if that speeds kernels up cannot shorten it (a CPU-bound step stays so);
//   - a synchronisation returns when its call has been made and the kernels it waits for have ended
//     (the last kernel launched before it on the stream it names, on the event's stream before the
//     event's record, or on every stream of the rank for a device synchronisation or one whose target
//     the trace does not record), plus its measured return latency past the later of the two.
//     Only kernels that ended (measured) by its return count: a synchronisation that returned
//     earlier did not wait for them.
// A launch from a thread the trace does not record keeps its measured time (not replayed).
//
// Inferred, not read: a node that started later than all of the above (beyond kGapToleranceNs) is
// taken to wait for the node of another stream of its rank whose end is the closest before its
// start, within kGapToleranceNs (a cross-stream wait the trace did not record). When no such node
// exists the gap is unexplained: the node keeps its measured distance from its launch (or, without
// a launch, its measured start) as its release (the CPU or something the trace does not show held
// it), counted in ReplayGraph::unexplained.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/traces/trace_model.hpp"

namespace overlap::traces {

// The gap below which a start counts as following an end: CUPTI timestamps of dependent kernels
// on one GPU are a few microseconds apart (launch and scheduling), so 2 us.
inline constexpr std::int64_t kGapToleranceNs = 2000;

// A node whose launch the trace did not record has no release.
inline constexpr std::int64_t kNoRelease = INT64_MIN;

// stream_order, event_wait, inferred: kernel to kernel; cpu_order: a thread's call to its next;
// launch: a launch to its kernel; sync: an awaited kernel to a synchronisation.
enum class EdgeSource : std::uint8_t { stream_order, event_wait, inferred, cpu_order, launch, sync };

struct ReplayNode {
  // Measured, in the lowest rank's clock (collective_wait.hpp's offsets subtracted).
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t release_ns = kNoRelease;  // earliest start fixed in time (a launch not replayed, or none)
  std::int64_t duration_ns = 0;  // what the replay runs it for: measured, or the transfer of a collective
  std::int32_t rank = 0;         // index into ReplayGraph::ranks
  std::int32_t stream = 0;       // index into ReplayGraph::streams
  std::int32_t collective = -1;  // index into ReplayGraph::collectives
  std::int32_t activity = 0;     // index into the rank's RankTrace::activities
};

// Node ids: [0, nodes.size()) the kernels, nodes.size() + j the CPU call cpu[j]
// (ReplayGraph::cpu_id). `to` starts no earlier than `from`'s end plus lag_ns.
struct ReplayEdge {
  std::int32_t from = 0, to = 0;
  EdgeSource source = EdgeSource::stream_order;
  std::int64_t lag_ns = 0;
};

enum class CpuCall : std::uint8_t { launch, sync };

// A launching thread's call, in the lowest rank's clock.
struct CpuNode {
  std::int64_t start_ns = 0, end_ns = 0;  // measured: a launch's call time (end = start), a synchronisation's call and return
  std::int64_t release_ns = kNoRelease;   // the thread's first call: its measured time
  std::int64_t duration_ns = 0;           // a synchronisation's return latency past its call and awaited kernels
  std::int32_t rank = 0;
  std::int32_t awaited = 0;               // kernels it waits for (sync edges)
  std::int64_t thread = -1;               // RankTrace::launch_threads' key
  CpuCall call = CpuCall::launch;
  SyncKind sync = SyncKind::device_sync;
};

struct ReplayStream {
  std::int32_t rank = 0, device = 0, stream = -1;  // stream -1: the trace did not record it
};

struct ReplayGraph {
  std::vector<ReplayNode> nodes;
  std::vector<CpuNode> cpu;
  std::vector<ReplayEdge> edges;
  std::vector<ReplayStream> streams;
  std::vector<std::vector<std::int32_t>> collectives;  // each matched collective's nodes
  std::vector<std::int64_t> launch_latency_ns;         // per rank (-1: no launch recorded)
  std::int64_t event_waits = 0, inferred = 0, unexplained = 0, without_launch = 0;
  std::int64_t cpu_threads = 0, cpu_syncs = 0, launches_not_replayed = 0;

  std::int32_t cpu_id(std::size_t j) const { return static_cast<std::int32_t>(nodes.size() + j); }
  bool is_cpu(std::int32_t id) const { return static_cast<std::size_t>(id) >= nodes.size(); }
};

// One rank's trace and its clock offset from the lowest rank (RankReport::clock_offset_ns, 0 if none).
struct ReplayRank {
  const RankTrace* trace = nullptr;
  std::int64_t clock_offset_ns = 0;
};

// The graph of `ranks`; `collectives` as CollectiveSplit::members ((index into ranks, activity)).
ReplayGraph build_replay_graph(const std::vector<ReplayRank>& ranks,
                               const std::vector<std::vector<std::pair<std::size_t, std::int32_t>>>& collectives);

}  // namespace overlap::traces
