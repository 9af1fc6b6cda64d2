#pragma once
// The GPU side of the engine (engine.hpp): each rank's SMs and the kernels waiting for them, CTA
// dispatch, the copy engines of each physical GPU, and how fast a running CTA progresses.
//
// CTAs of one kernel that start at the same instant form a cohort: they progress together and end
// together, so a wave of 132 CTAs is one event, not 132. A cohort progresses at
// the kernel's rate: 1 on an otherwise quiet GPU, slower while communication kernels hold SMs of
// the same physical GPU (GpuConfig::comm_interference) or while the kernel's HBM traffic gets less
// than it needs (a demand flow on its GPU's HBM, which the network side's transfers load too:
// shared_bandwidth.hpp), and slower or faster than its calibrated CTA
// time as more or fewer SMs of the GPU run GEMM tiles than did at calibration
// (GpuConfig::full_rate_sms). When a rate changes, the cohorts' remaining
// work is rescaled and their end events moved, as flows are.
#include <cstdint>
#include <deque>
#include <vector>

#include "sim/network_api.hpp"
#include "sim/sim_context.hpp"
#include "sim/sm_pool.hpp"

namespace overlap::sim {

class GpuSide final : public FlowOwner {
 public:
  GpuSide(SimContext& ctx, GpuListener& listener, NetworkApi& net);

  // A kernel that needs SMs (tiled, persistent, or a gang kernel with channels > 0) was launched.
  void launch(OpId op);
  // A gang kernel's work is done: its SMs go back to the pool.
  void release_gang(OpId op);
  // A copy op is ready: it takes a copy engine of its rank's physical GPU, or queues for one.
  void queue_copy(OpId op);
  void copy_done(OpId op);

  void on_cohort_end(std::int32_t cohort, std::uint32_t version);
  // A kernel's HBM demand flow got a new share of its HBM (another flow joined or left it).
  void rate_changed(int flow) override;
  // Applies what the last event changed: HBM demand of kernels whose running CTAs changed, then the
  // rates of kernels whose interference or HBM share changed. Called after every event.
  void flush();

  // Diagnostics for a stalled run.
  bool waiting_for_sms(OpId op) const;
  bool waiting_for_copy_engine(OpId op) const;

 private:
  struct Cohort {
    OpId op = kNoOp;
    Ps start_ps = 0;
    Ps last_ps = 0;        // when `left` was last brought up to date
    double left = 0;       // work left, in ps at rate 1
    double rate = 1;
    std::uint32_t version = 0;
    bool alive = false;
    std::vector<std::pair<int, std::int64_t>> ctas;  // (SM, tile) in start order
  };
  struct KernelState {
    std::int64_t next = 0;        // tiled: next tile to dispatch; persistent: next CTA of the grid
    std::int64_t done_tiles = 0;
    std::int64_t grid = 0;        // persistent: CTAs in its grid
    std::int32_t held = 0;        // SMs held now
    std::int32_t running = 0;     // CTAs running now
    int demand = -1;              // HBM demand flow (ctx.bandwidth), -1 none
    double rate = 1;
    std::int32_t open_cohort = -1;  // the cohort CTAs starting now join
    // Alive cohorts: one or two (a wave and the refills of its freed SMs); inline, not a heap list
    // per kernel.
    boost::container::small_vector<std::int32_t, 3> cohorts;
    bool has_demand = false;      // its tiles stream HBM bytes (a demand flow while it runs)
    bool dirty_demand = false, dirty_rate = false, in_active = false;
  };
  struct PhysicalGpu {
    int sm_total = 0;             // SMs of all ranks on it
    int comm_sms = 0;             // SMs held by communication kernels now
    double interference = 0;
    double full_rate_sms = 0;     // GpuConfig::full_rate_sms (0 = not modelled)
    int tile_sms = 0;             // SMs held now by compute kernels with a reference_sms
    std::vector<char> engine_busy;
    std::vector<Ps> engine_since;
    std::deque<OpId> copy_queue;
    std::vector<OpId> active;     // tiled/persistent kernels holding SMs here
    bool dirty = false;
  };

  KernelState& ks(OpId id) { return kernels_[static_cast<std::size_t>(id)]; }
  SmPool& pool(OpId id) { return pools_[static_cast<std::size_t>(ctx_.rank(id))]; }
  PhysicalGpu& phys_of(OpId id) { return phys_[static_cast<std::size_t>(ctx_.physical(ctx_.rank(id)))]; }

  void dispatch(int rank);
  int take_sm(SmPool& p, OpId id);
  void claim_sms(OpId id, int count);
  void start_cta(OpId id, int sm, std::int64_t tile);
  void schedule(std::int32_t cohort);
  double target_rate(OpId id) const;
  void set_rate(OpId id, double rate);
  void comm_sms_changed(PhysicalGpu& g, int delta);
  void tile_sms_changed(OpId id, int delta);
  // Op::reference_sms rescaled to the SMs busy with tiles now (gemm_saturation_factor, inverted).
  double saturation_rate(OpId id) const;
  void mark_demand(OpId id);  // its HBM demand is recomputed at the next update
  void mark_rate(OpId id);    // its rate is recomputed at the next update
  bool hand_freed_sm(SmPool& p, int sm);
  void kernel_finished(OpId id);
  // A tile kernel's HBM operand traffic at full speed (bytes/ps): an endless flow on its GPU's HBM
  // whose multiplier (0..1] says how much of that it gets.
  void add_demand(OpId id, double bytes_per_ps);
  void remove_demand(OpId id);
  void start_copy(OpId id, int engine);

  SimContext& ctx_;
  GpuListener& listener_;
  NetworkApi& net_;
  std::vector<SmPool> pools_;       // per rank
  std::vector<PhysicalGpu> phys_;   // per physical GPU
  std::vector<KernelState> kernels_;
  std::vector<Cohort> cohorts_;
  std::vector<std::int32_t> free_cohorts_;
  std::vector<OpId> demand_op_;     // flow id -> the op whose demand it is (kNoOp: none, or not yet)
  std::vector<OpId> dirty_demand_, dirty_rate_;
  std::vector<int> dirty_phys_;
  // Scratch buffers kept between events (no allocation per event).
  std::vector<std::pair<int, std::int64_t>> ctas_;
  std::vector<OpId> scratch_ops_;
  std::vector<int> scratch_phys_;
  std::uint64_t launch_seq_ = 0;
  bool full_rate_ = false;  // some physical GPU has GpuConfig::full_rate_sms (else no tile counting)
};

}  // namespace overlap::sim
