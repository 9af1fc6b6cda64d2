#include "sim/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

#include "sim/event_queue.hpp"
#include "sim/flow_network.hpp"
#include "sim/sm_pool.hpp"

namespace overlap::sim {
namespace {

enum TimerKind : std::int64_t { kTimerComplete = 0, kTimerPhaseEnd = 1 };
constexpr std::int64_t kSmBits = 4096;  // cta_end payload: tile * kSmBits + sm

bool is_gang(OpKind k) { return k == OpKind::comm_kernel || k == OpKind::memory; }

struct OpState {
  std::int32_t pending = 0;     // unfinished dependencies + stream predecessor
  std::int64_t next_tile = 0;   // tiled: next tile to dispatch
  std::int64_t done_tiles = 0;
  std::int32_t grid = 0;        // persistent: CTAs in its grid
  std::int32_t held = 0;        // SMs held now
  std::int32_t phase = 0;       // comm_kernel steps: current phase
  std::int32_t outstanding = 0; // transfers of the current phase not yet done
  bool done = false;
};

enum class TransferKind : std::uint8_t { copy, phase, memory };

struct TransferState {
  TransferKind kind;
  OpId op;        // copy / memory: the op; phase: the sender
  OpId receiver;  // phase: the receiving op
  int src, dst;
  Bytes bytes;
  std::vector<int> links;
  double cap_bytes_per_ps;
  double service_ps;
  Ps start_ps;
};

struct GpuState {
  SmPool sms;
  std::vector<char> engine_busy;
  std::vector<Ps> engine_since;
  std::deque<OpId> copy_queue;
};

using MatchKey = std::tuple<std::int64_t, std::int32_t, std::int32_t, std::int32_t>;  // collective, phase, src, dst

class Engine {
 public:
  Engine(const TaskGraph& g, const NodeConfig& node, const EngineOptions& opt)
      : g_(g), node_(node), opt_(opt), ops_(g.ops().data()), net_(node.fabric), st_(g.ops().size()) {
    rank_of_.reserve(g.ops().size());
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) rank_of_.push_back(g.rank_of(id));
    tl_.num_ranks = g.num_ranks();
    tl_.ops.resize(g.ops().size());
    tl_.rank_end_ps.assign(static_cast<std::size_t>(g.num_ranks()), 0);
    tl_.sm_busy_ps.assign(static_cast<std::size_t>(g.num_ranks()), 0);
    tl_.copy_engine_busy_ps.assign(static_cast<std::size_t>(g.num_ranks()), 0);
    tl_.link_bytes.assign(node.fabric.links().size(), 0.0);
    for (int r = 0; r < g.num_ranks(); ++r) {
      const GpuConfig& c = node.gpus[static_cast<std::size_t>(r)];
      gpus_.push_back(GpuState{SmPool(c.sm_count), std::vector<char>(static_cast<std::size_t>(c.copy_engines), 0),
                               std::vector<Ps>(static_cast<std::size_t>(c.copy_engines), 0), {}});
    }
    counter_value_.assign(g.counters().size(), 0);
    counter_waiters_.resize(g.counters().size());
    // Dependents in CSR form: dependencies and stream order.
    std::vector<std::vector<OpId>> deps_of(g.ops().size());
    std::vector<OpId> last(g.streams().size(), kNoOp);
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) {
      const Op& op = g.op(id);
      OpState& s = st_[static_cast<std::size_t>(id)];
      for (OpId d : op.deps) {
        deps_of[static_cast<std::size_t>(d)].push_back(id);
        ++s.pending;
      }
      OpId& prev = last[static_cast<std::size_t>(op.stream)];
      if (prev != kNoOp) {
        deps_of[static_cast<std::size_t>(prev)].push_back(id);
        ++s.pending;
      }
      prev = id;
    }
    dep_start_.push_back(0);
    for (auto& v : deps_of) {
      dependents_.insert(dependents_.end(), v.begin(), v.end());
      dep_start_.push_back(static_cast<std::int32_t>(dependents_.size()));
    }
  }

  void check_resources() const {
    for (OpId id = 0; id < static_cast<OpId>(g_.ops().size()); ++id) {
      const Op& op = g_.op(id);
      if (opt_.zero_comm && op.comm) continue;
      const GpuConfig& gpu = node_.gpus[static_cast<std::size_t>(g_.rank_of(id))];
      if (is_gang(op.kind) && op.channels > gpu.sm_count)
        throw ResourceError(fmt::format("op '{}' needs {} SMs but GPU {} has {}", op.name, op.channels,
                                   g_.rank_of(id), gpu.sm_count));
      if ((op.kind == OpKind::tiled || op.kind == OpKind::persistent) && gpu.sm_count == 0)
        throw ResourceError(fmt::format("op '{}' needs SMs but GPU {} has none", op.name, g_.rank_of(id)));
      if (op.kind == OpKind::copy && gpu.copy_engines == 0)
        throw ResourceError(fmt::format("copy '{}' needs a copy engine but GPU {} has none", op.name, g_.rank_of(id)));
    }
  }

  Timeline run() {
    check_resources();
    queue_.reserve(1024);
    for (OpId id = 0; id < static_cast<OpId>(g_.ops().size()); ++id)
      if (st_[static_cast<std::size_t>(id)].pending == 0) ready_.push_back(id);
    drain_ready(0);
    while (!queue_.empty()) {
      const Event e = queue_.pop();
      now_ = e.time_ps;
      switch (e.type) {
        case EventType::kernel_launched: on_launched(e.a); break;
        case EventType::cta_end: on_cta_end(e.a, static_cast<int>(e.b % kSmBits), e.b / kSmBits); break;
        case EventType::timer: on_timer(e.a, e.b); break;
        case EventType::flow_latency_end: join_flow(e.a); break;
        case EventType::flow_end:
          if (!net_.flow(e.a).active || net_.flow(e.a).version != static_cast<std::uint32_t>(e.b)) continue;  // stale
          on_flow_end(e.a);
          break;
      }
      ++tl_.events;
      drain_ready(now_);
    }
    if (completed_ != g_.ops().size()) throw SimError(deadlock_message());
    for (OpId id = 0; id < static_cast<OpId>(g_.ops().size()); ++id) {
      const Ps end = tl_.ops[static_cast<std::size_t>(id)].end_ps;
      Ps& r = tl_.rank_end_ps[static_cast<std::size_t>(g_.rank_of(id))];
      r = std::max(r, end);
      tl_.makespan_ps = std::max(tl_.makespan_ps, end);
    }
    return std::move(tl_);
  }

 private:
  const Op& op(OpId id) const { return ops_[id]; }
  OpState& state(OpId id) { return st_[static_cast<std::size_t>(id)]; }
  OpRecord& rec(OpId id) { return tl_.ops[static_cast<std::size_t>(id)]; }
  int rank(OpId id) const { return rank_of_[static_cast<std::size_t>(id)]; }
  GpuState& gpu_of(OpId id) { return gpus_[static_cast<std::size_t>(rank(id))]; }

  void mark_start(OpId id) {
    OpRecord& r = rec(id);
    if (r.start_ps < 0) r.start_ps = now_;
  }

  void complete(OpId id) {
    OpState& s = state(id);
    s.done = true;
    ++completed_;
    mark_start(id);
    rec(id).end_ps = now_;
    for (std::int32_t i = dep_start_[static_cast<std::size_t>(id)]; i < dep_start_[static_cast<std::size_t>(id) + 1]; ++i) {
      const OpId d = dependents_[static_cast<std::size_t>(i)];
      if (--state(d).pending == 0) ready_.push_back(d);
    }
  }

  // Ops whose dependencies are met, in the order they became ready (deterministic).
  void drain_ready(Ps now) {
    now_ = now;
    for (std::size_t i = 0; i < ready_.size(); ++i) on_ready(ready_[i]);
    ready_.clear();
  }

  void on_ready(OpId id) {
    const Op& o = op(id);
    rec(id).ready_ps = now_;
    if (opt_.zero_comm && o.comm) {
      complete(id);
      return;
    }
    switch (o.kind) {
      case OpKind::tiled:
      case OpKind::persistent:
      case OpKind::comm_kernel:
      case OpKind::memory:
        queue_.push(now_ + node_.kernel_launch_ps, EventType::kernel_launched, id, 0);
        break;
      case OpKind::copy: {
        GpuState& g = gpu_of(id);
        auto it = std::find(g.engine_busy.begin(), g.engine_busy.end(), 0);
        if (it == g.engine_busy.end()) g.copy_queue.push_back(id);
        else start_copy(id, static_cast<int>(it - g.engine_busy.begin()));
        break;
      }
      case OpKind::wait:
        if (counter_value_[static_cast<std::size_t>(o.counter)] >= o.target) complete(id);
        else counter_waiters_[static_cast<std::size_t>(o.counter)].push_back(id);
        break;
      case OpKind::signal:
        add_to_counter(o.counter, o.amount);
        complete(id);
        break;
      case OpKind::delay:
        mark_start(id);
        queue_.push(now_ + o.delay_ps, EventType::timer, id, kTimerComplete);
        break;
    }
  }

  void add_to_counter(CounterId c, std::int64_t amount) {
    std::int64_t& v = counter_value_[static_cast<std::size_t>(c)];
    v += amount;
    auto& waiters = counter_waiters_[static_cast<std::size_t>(c)];
    if (waiters.empty()) return;
    std::size_t kept = 0;
    for (OpId w : waiters) {
      if (v >= op(w).target) complete(w);
      else waiters[kept++] = w;
    }
    waiters.resize(kept);
  }

  // ---- SMs ----

  void on_launched(OpId id) {
    const Op& o = op(id);
    if (is_gang(o.kind) && o.channels == 0) {
      start_gang(id);
      return;
    }
    GpuState& g = gpu_of(id);
    const Stream& s = g_.streams()[static_cast<std::size_t>(o.stream)];
    g.sms.enqueue({s.priority, launch_seq_++, id});
    dispatch(g);
  }

  void take_sm(GpuState& g, OpId id, int& sm) {
    sm = g.sms.take(id);
    OpState& s = state(id);
    ++s.held;
    OpRecord& r = rec(id);
    r.sms_held = std::max(r.sms_held, s.held);
  }

  // Hands free SMs to waiting kernels: highest priority first, then launch order.
  void dispatch(GpuState& g) {
    auto& waiting = g.sms.waiting();
    std::size_t i = 0;
    while (i < waiting.size() && g.sms.free_count() > 0) {
      const OpId id = waiting[i].op;
      const Op& o = op(id);
      OpState& s = state(id);
      bool leaves = false;
      if (o.kind == OpKind::tiled) {
        while (s.next_tile < o.ctas && g.sms.free_count() > 0) {
          int sm;
          take_sm(g, id, sm);
          const std::int64_t n = std::min<std::int64_t>(o.ctas_per_sm, o.ctas - s.next_tile);
          g.sms.resident(sm) = static_cast<int>(n);
          for (std::int64_t k = 0; k < n; ++k) start_cta(id, sm, s.next_tile++);
        }
        leaves = s.next_tile == o.ctas;
      } else if (o.kind == OpKind::persistent) {
        // A persistent kernel sizes its grid to the slots free when it starts and keeps it
        // (design.md "GPU"): this is how it can take every SM and starve a later comm kernel.
        std::int64_t grid = std::min<std::int64_t>(o.ctas, std::int64_t{g.sms.free_count()} * o.ctas_per_sm);
        if (o.max_ctas > 0) grid = std::min<std::int64_t>(grid, o.max_ctas);
        s.grid = static_cast<std::int32_t>(grid);
        for (std::int64_t j = 0; j < grid; j += o.ctas_per_sm) {
          int sm;
          take_sm(g, id, sm);
          const std::int64_t n = std::min<std::int64_t>(o.ctas_per_sm, grid - j);
          g.sms.resident(sm) = static_cast<int>(n);
          for (std::int64_t k = 0; k < n; ++k) start_cta(id, sm, j + k);
        }
        leaves = true;
      } else {  // gang: comm_kernel or memory kernel holding `channels` SMs
        while (s.held < o.channels && g.sms.free_count() > 0) {
          int sm;
          take_sm(g, id, sm);
          g.sms.resident(sm) = 1;
          rec(id).sms.push_back(sm);
        }
        leaves = s.held == o.channels;
        if (leaves) {
          waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
          start_gang(id);
          continue;
        }
      }
      if (leaves) waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
      else ++i;
    }
  }

  void start_cta(OpId id, int sm, std::int64_t tile) {
    mark_start(id);
    queue_.push(now_ + op(id).cta_ps, EventType::cta_end, id, tile * kSmBits + sm);
  }

  void on_cta_end(OpId id, int sm, std::int64_t tile) {
    const Op& o = op(id);
    OpState& s = state(id);
    GpuState& g = gpu_of(id);
    tl_.sm_busy_ps[static_cast<std::size_t>(rank(id))] += o.cta_ps;
    if (opt_.record_ctas) tl_.ctas.push_back(CtaRecord{id, sm, tile, now_ - o.cta_ps, now_});
    if (opt_.on_tile_end) opt_.on_tile_end(id, tile, now_);
    ++s.done_tiles;
    if (!o.tile_counters.empty())
      add_to_counter(o.tile_counters.size() == 1 ? o.tile_counters[0] : o.tile_counters[static_cast<std::size_t>(tile)], 1);

    bool sm_freed = false;
    if (o.kind == OpKind::persistent && tile + s.grid < o.ctas) {
      queue_.push(now_ + o.cta_ps, EventType::cta_end, id, (tile + s.grid) * kSmBits + sm);
    } else if (o.kind == OpKind::tiled && s.next_tile < o.ctas &&
               (g.sms.resident(sm) > 1 || g.sms.waiting().front().op == id)) {
      // The slot goes straight to this kernel's next CTA: either the SM still hosts its other CTAs,
      // or it is first in line for any freed SM anyway (the hot path of a running GEMM).
      start_cta(id, sm, s.next_tile++);
      if (s.next_tile == o.ctas) g.sms.dequeue(id);
    } else if (--g.sms.resident(sm) == 0) {
      g.sms.release(sm);
      --s.held;
      sm_freed = true;
    }
    if (s.done_tiles == o.ctas) complete(id);
    if (sm_freed) dispatch(g);
  }

  // ---- gang kernels: collectives (curve or steps), SM copies, memory-bound kernels ----

  void start_gang(OpId id) {
    const Op& o = op(id);
    mark_start(id);
    if (o.kind == OpKind::memory) {
      if (o.bytes == 0) {
        queue_.push(now_, EventType::timer, id, kTimerComplete);
        return;
      }
      const int gpu = rank(id);
      const int hbm = node_.fabric.hbm_link(gpu);
      if (hbm < 0) {  // a node without a memory model: memory-bound work is free
        queue_.push(now_, EventType::timer, id, kTimerComplete);
        return;
      }
      const double cap = node_.fabric.links()[static_cast<std::size_t>(hbm)].capacity_bytes_per_ps;
      const double service = std::ceil(static_cast<double>(o.bytes) / cap);
      start_transfer(TransferState{TransferKind::memory, id, kNoOp, gpu, gpu, o.bytes, {hbm},
                                   static_cast<double>(o.bytes) / service, service, now_},
                     0);
      return;
    }
    if (!o.phases.empty()) {
      enter_phase(id);
      return;
    }
    if (o.collective >= 0 && o.members > 1) {
      // Curve fidelity: a collective runs once every member's kernel is resident.
      auto& arrived = rendezvous_[o.collective];
      arrived.push_back(id);
      if (static_cast<int>(arrived.size()) < o.members) return;
      for (OpId m : arrived) queue_.push(now_ + op(m).duration_ps, EventType::timer, m, kTimerComplete);
      rendezvous_.erase(o.collective);
      return;
    }
    queue_.push(now_ + o.duration_ps, EventType::timer, id, kTimerComplete);
  }

  void on_timer(OpId id, std::int64_t kind) {
    const Op& o = op(id);
    if (kind == kTimerPhaseEnd) {
      ++state(id).phase;
      enter_phase(id);
      return;
    }
    if (is_gang(o.kind)) release_gang(id);
    complete(id);
  }

  void release_gang(OpId id) {
    GpuState& g = gpu_of(id);
    OpRecord& r = rec(id);
    tl_.sm_busy_ps[static_cast<std::size_t>(rank(id))] += static_cast<Ps>(r.sms.size()) * (now_ - r.start_ps);
    for (int sm : r.sms) g.sms.release(sm);
    state(id).held = 0;
    if (!r.sms.empty()) dispatch(g);
  }

  void enter_phase(OpId id) {
    const Op& o = op(id);
    OpState& s = state(id);
    if (s.phase == static_cast<std::int32_t>(o.phases.size())) {
      queue_.push(now_ + o.duration_ps, EventType::timer, id, kTimerComplete);
      return;
    }
    const Phase& ph = o.phases[static_cast<std::size_t>(s.phase)];
    const int me = rank(id);
    s.outstanding = static_cast<std::int32_t>(ph.sends.size() + ph.recvs.size());
    if (s.outstanding == 0) {
      queue_.push(now_ + ph.compute_ps + ph.latency_ps, EventType::timer, id, kTimerPhaseEnd);
      return;
    }
    // Sends and receives rendezvous by (collective, phase, src, dst); the transfer starts when both
    // sides have entered the phase (per-step synchronisation, design.md "Collectives").
    for (const PeerBytes& pb : ph.sends) {
      MatchKey key{o.collective, s.phase, me, pb.peer};
      auto it = posted_recvs_.find(key);
      if (it != posted_recvs_.end() && !it->second.empty()) {
        auto [receiver, bytes] = it->second.front();
        it->second.pop_front();
        check_bytes(id, receiver, pb.bytes, bytes);
        start_phase_transfer(id, receiver, me, pb.peer, pb.bytes);
      } else {
        posted_sends_[key].push_back({id, pb.bytes});
      }
    }
    for (const PeerBytes& pb : ph.recvs) {
      MatchKey key{o.collective, s.phase, pb.peer, me};
      auto it = posted_sends_.find(key);
      if (it != posted_sends_.end() && !it->second.empty()) {
        auto [sender, bytes] = it->second.front();
        it->second.pop_front();
        check_bytes(sender, id, bytes, pb.bytes);
        start_phase_transfer(sender, id, pb.peer, me, bytes);
      } else {
        posted_recvs_[key].push_back({id, pb.bytes});
      }
    }
  }

  void check_bytes(OpId sender, OpId receiver, Bytes sent, Bytes expected) const {
    if (sent != expected)
      throw SimError(fmt::format("'{}' sends {} bytes but '{}' expects {}", op(sender).name, sent,
                                 op(receiver).name, expected));
  }

  void start_phase_transfer(OpId sender, OpId receiver, int src, int dst, Bytes bytes) {
    const Op& o = op(sender);
    start_transfer(make_transfer(TransferKind::phase, sender, receiver, src, dst, bytes, Mechanism::sm, o.link_efficiency),
                   o.phase_latency_covers_wire ? 0 : node_.fabric.route_latency_ps(src, dst));
  }

  void phase_leg_done(OpId id) {
    OpState& s = state(id);
    if (--s.outstanding > 0) return;
    const Phase& ph = op(id).phases[static_cast<std::size_t>(s.phase)];
    queue_.push(now_ + ph.compute_ps + ph.latency_ps, EventType::timer, id, kTimerPhaseEnd);
  }

  // ---- copies and transfers ----

  void start_copy(OpId id, int engine) {
    const Op& o = op(id);
    GpuState& g = gpu_of(id);
    g.engine_busy[static_cast<std::size_t>(engine)] = 1;
    g.engine_since[static_cast<std::size_t>(engine)] = now_;
    mark_start(id);
    rec(id).copy_engine = engine;
    start_transfer(make_transfer(TransferKind::copy, id, kNoOp, o.src_gpu, o.dst_gpu, o.bytes, Mechanism::copy_engine),
                   o.src_gpu == o.dst_gpu ? 0 : node_.fabric.route_latency_ps(o.src_gpu, o.dst_gpu));
  }

  TransferState make_transfer(TransferKind kind, OpId id, OpId receiver, int src, int dst, Bytes bytes, Mechanism m,
                              double efficiency = 1.0) {
    const Fabric& f = node_.fabric;
    const Ps latency = src == dst ? 0 : f.route_latency_ps(src, dst);
    const Ps total = f.isolated_ps(src, dst, bytes, m);
    // The isolated time is the truth (a calibrated curve); what is left after the route latency is
    // served at the rate that makes it exact (slowed by the sender's efficiency), and shared max-min
    // fairly with everything else.
    const double service = std::ceil(static_cast<double>(std::max<Ps>(1, total - latency)) / efficiency);
    const double moved = static_cast<double>(bytes) * (src == dst ? 2.0 : 1.0);
    return TransferState{kind, id, receiver, src, dst, bytes, f.route(src, dst), moved / service, service, now_};
  }

  void start_transfer(TransferState t, Ps latency_ps) {
    transfers_.push_back(std::move(t));
    const auto idx = static_cast<std::int32_t>(transfers_.size() - 1);
    if (latency_ps > 0) queue_.push(now_ + latency_ps, EventType::flow_latency_end, idx, 0);
    else join_flow(idx);
  }

  void join_flow(std::int32_t idx) {
    const TransferState& t = transfers_[static_cast<std::size_t>(idx)];
    const int flow = net_.add(now_, t.links, t.cap_bytes_per_ps, t.service_ps);
    if (static_cast<int>(flow_transfer_.size()) <= flow) flow_transfer_.resize(static_cast<std::size_t>(flow) + 1);
    flow_transfer_[static_cast<std::size_t>(flow)] = idx;
    reshare();
  }

  void reshare() {
    changed_.clear();
    net_.reshare(now_, changed_);
    for (int f : changed_)
      queue_.push(net_.finish_ps(f, now_), EventType::flow_end, f, static_cast<std::int64_t>(net_.flow(f).version));
  }

  void on_flow_end(int flow) {
    const std::int32_t idx = flow_transfer_[static_cast<std::size_t>(flow)];
    net_.remove(now_, flow);
    reshare();
    const TransferState& t = transfers_[static_cast<std::size_t>(idx)];
    // A local copy reads and writes HBM (twice its bytes); a memory kernel's bytes already count both.
    const double moved = static_cast<double>(t.bytes) * (t.src == t.dst && t.kind != TransferKind::memory ? 2.0 : 1.0);
    for (int l : t.links) tl_.link_bytes[static_cast<std::size_t>(l)] += moved;
    if (t.kind != TransferKind::memory)
      tl_.transfers.push_back(TransferRecord{t.op, t.src, t.dst, t.bytes, t.start_ps, now_, t.links});
    switch (t.kind) {
      case TransferKind::memory:
        release_gang(t.op);
        complete(t.op);
        break;
      case TransferKind::phase:
        phase_leg_done(t.op);
        phase_leg_done(t.receiver);
        break;
      case TransferKind::copy: {
        GpuState& g = gpu_of(t.op);
        const int e = rec(t.op).copy_engine;
        g.engine_busy[static_cast<std::size_t>(e)] = 0;
        tl_.copy_engine_busy_ps[static_cast<std::size_t>(rank(t.op))] += now_ - g.engine_since[static_cast<std::size_t>(e)];
        complete(t.op);
        if (!g.copy_queue.empty()) {
          const OpId next = g.copy_queue.front();
          g.copy_queue.pop_front();
          start_copy(next, e);
        }
        break;
      }
    }
  }

  // ---- diagnostics ----

  std::string deadlock_message() {
    std::string msg = fmt::format("simulation stalled: {} of {} ops never finished:", g_.ops().size() - completed_,
                                  g_.ops().size());
    int shown = 0;
    for (OpId id = 0; id < static_cast<OpId>(g_.ops().size()) && shown < 8; ++id) {
      const OpState& s = st_[static_cast<std::size_t>(id)];
      const Op& o = op(id);
      if (s.done) continue;
      std::string why;
      if (s.pending > 0) continue;  // blocked behind another unfinished op: report the root causes
      if (o.kind == OpKind::wait)
        why = fmt::format("waits for counter '{}' to reach {} (it is {})",
                          g_.counters()[static_cast<std::size_t>(o.counter)].name, o.target,
                          counter_value_[static_cast<std::size_t>(o.counter)]);
      else if (o.kind == OpKind::comm_kernel && o.phases.empty())
        why = fmt::format("collective {} has only some of its {} members", o.collective, o.members);
      else if (o.kind == OpKind::comm_kernel)
        why = fmt::format("phase {} has unmatched sends or receives", s.phase);
      else
        why = "could not get its resources";
      msg += fmt::format("\n  '{}' on rank {}: {}", o.name, rank(id), why);
      ++shown;
    }
    return msg;
  }

  const TaskGraph& g_;
  const NodeConfig& node_;
  const EngineOptions& opt_;
  const Op* ops_;               // hot path: no bounds checks
  std::vector<int> rank_of_;
  FlowNetwork net_;
  std::vector<OpState> st_;
  std::vector<GpuState> gpus_;
  std::vector<std::int32_t> dep_start_;
  std::vector<OpId> dependents_;
  std::vector<std::int64_t> counter_value_;
  std::vector<std::vector<OpId>> counter_waiters_;
  std::map<std::int64_t, std::vector<OpId>> rendezvous_;
  std::map<MatchKey, std::deque<std::pair<OpId, Bytes>>> posted_sends_, posted_recvs_;
  std::vector<TransferState> transfers_;
  std::vector<std::int32_t> flow_transfer_;
  std::vector<int> changed_;
  std::vector<OpId> ready_;
  EventQueue queue_;
  Timeline tl_;
  Ps now_ = 0;
  std::uint64_t launch_seq_ = 0;
  std::size_t completed_ = 0;
};

}  // namespace

Timeline run(const TaskGraph& graph, const NodeConfig& node, const EngineOptions& options) {
  if (static_cast<int>(node.gpus.size()) < graph.num_ranks())
    throw SimError(fmt::format("graph has {} ranks but the node has {} GPUs", graph.num_ranks(), node.gpus.size()));
  for (const GpuConfig& g : node.gpus)
    if (g.sm_count > kSmBits) throw ResourceError(fmt::format("a GPU with {} SMs is beyond the engine's limit", g.sm_count));
  // Every CTA is an event: past a few hundred million a run takes minutes, so refuse it up front
  // rather than appear to hang.
  constexpr std::int64_t kMaxCtas = 200'000'000;
  std::int64_t ctas = 0;
  for (const Op& op : graph.ops())
    if (op.kind == OpKind::tiled || op.kind == OpKind::persistent) ctas += op.ctas;
  if (ctas > kMaxCtas)
    throw ResourceError(fmt::format("the graph has {} CTAs, more than the {} the engine simulates one by one; "
                                    "shrink the workload", ctas, kMaxCtas));
  graph.check_acyclic();
  Engine engine(graph, node, options);
  return engine.run();
}

}  // namespace overlap::sim
