// The engine's core (engine.hpp): the event loop, dependencies and stream order, the host's launch
// queue, counters and delays. Resources live on the two sides it connects: the GPU side (SMs, CTAs,
// copy engines, its kernels' HBM traffic) and the network side (links, flows, collectives), which
// load one pool of link and HBM bandwidth (shared_bandwidth.hpp) and meet only through the verbs of
// network_api.hpp.
#include "sim/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "sim/gpu_side.hpp"
#include "sim/network_api.hpp"
#include "sim/sim_context.hpp"

namespace overlap::sim {
namespace {

bool is_gang(OpKind k) { return k == OpKind::comm_kernel || k == OpKind::memory; }

// Work the host issues through the CUDA API (a kernel launch or cudaMemcpyAsync); waits, signals and
// delays are modelled work that costs the host nothing.
bool is_launched(OpKind k) {
  return k == OpKind::tiled || k == OpKind::persistent || k == OpKind::comm_kernel || k == OpKind::memory ||
         k == OpKind::copy;
}

bool same_gpu(const GpuConfig& a, const GpuConfig& b) {
  return a.sm_count == b.sm_count && a.copy_engines == b.copy_engines && a.comm_interference == b.comm_interference &&
         a.full_rate_sms == b.full_rate_sms && a.hbm_latency_ps == b.hbm_latency_ps &&
         a.hbm_sm_bytes_per_ps == b.hbm_sm_bytes_per_ps;
}

// A one-to-one correspondence built as pairs are met (streams, counters of two ranks): false when a
// pair contradicts an earlier one.
struct Bijection {
  std::vector<std::int32_t> to, from;
  Bijection(std::size_t n) : to(n, -1), from(n, -1) {}
  bool pair(std::int32_t a, std::int32_t b) {
    if (a < 0 || b < 0) return a == b;
    auto& x = to[static_cast<std::size_t>(a)];
    auto& y = from[static_cast<std::size_t>(b)];
    if (x < 0 && y < 0) {
      x = b;
      y = a;
      return true;
    }
    return x == b && y == a;
  }
};

// EngineOptions::fold_like_ranks: per rank, 1 when it runs exactly as rank 0 (not simulated; its
// records are rank 0's). Empty when no rank can be folded.
// Why exact: with no resource shared between ranks, a rank's state (its SMs, streams, counters, host
// thread, its HBM link and the flows on it) changes only through its own events, and those run in
// the same order as in a run of that rank alone (the (time, sequence) order restricted to one rank is
// the order its own handlers scheduled them in). A rank whose ops are rank 0's, field by field and in
// the same order, with dependencies, streams and counters corresponding, on an equal GPU and HBM,
// then gets rank 0's timeline. Dependencies across ranks (async TP's zeroed copies wait for peers'
// GEMM chunks) are allowed only when every rank is alike: each op then waits for ops at the same
// places among their ranks' ops, which end together on every rank, so rank 0 waits for its own op at
// that place instead (the same time; tests/sim/test_fold_ranks.cpp holds every scheme's step to the
// full run record by record). Any doubt (a field differs, bytes cross between GPUs, a counter shared
// across ranks, a shared physical GPU, a coupled rank unlike rank 0) and no rank is folded.
std::vector<char> ranks_like_rank0(const TaskGraph& g, const NodeConfig& node, const EngineOptions& opt,
                                   const SimContext& ctx) {
  const int ranks = g.num_ranks();
  if (!opt.fold_like_ranks || ranks < 2 || opt.record_ctas || opt.on_tile_end) return {};
  const auto gpu = [&](int r) -> const GpuConfig& { return node.gpus[static_cast<std::size_t>(r)]; };
  const auto hbm_capacity = [&](int r) {
    const int l = node.fabric.hbm_link(r);
    return l < 0 ? -1.0 : node.fabric.links()[static_cast<std::size_t>(l)].capacity_bytes_per_ps;
  };
  std::vector<int> hbm_owner(node.fabric.links().size(), -1);
  if (node.fabric.num_gpus() < ranks) return {};  // a rank the fabric does not know: no doubt allowed
  for (int r = 0; r < ranks; ++r) {
    if (gpu(r).physical >= 0 && gpu(r).physical != r) return {};  // virtual ranks share a GPU
    const int l = node.fabric.hbm_link(r);
    if (l >= 0) {
      if (hbm_owner[static_cast<std::size_t>(l)] >= 0) return {};
      hbm_owner[static_cast<std::size_t>(l)] = r;
    }
  }
  // Nothing couples two ranks: dependencies and counters stay within a rank; no op that runs moves
  // bytes over the fabric (copies and communication kernels; a memory kernel streams its own HBM).
  std::vector<int> counter_rank(g.counters().size(), -1);
  auto own_counter = [&](CounterId c, int r) {
    if (c < 0) return true;
    int& owner = counter_rank[static_cast<std::size_t>(c)];
    if (owner < 0) owner = r;
    return owner == r;
  };
  bool coupled = false;  // a dependency across ranks (a zeroed copy waiting for a peer's GEMM)
  std::vector<std::vector<OpId>> by_rank(static_cast<std::size_t>(ranks));
  std::vector<std::int32_t> index(g.ops().size(), 0);  // an op's place among its rank's ops
  for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) {
    const Op& o = g.ops()[static_cast<std::size_t>(id)];
    const int r = ctx.rank(id);
    if (!ctx.zeroed(o) && (o.kind == OpKind::copy || o.kind == OpKind::comm_kernel)) return {};
    for (OpId d : o.deps) coupled = coupled || ctx.rank(d) != r;
    if (!own_counter(o.counter, r)) return {};
    for (CounterId c : o.tile_counters)
      if (!own_counter(c, r)) return {};
    auto& list = by_rank[static_cast<std::size_t>(r)];
    index[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(list.size());
    list.push_back(id);
  }
  std::vector<char> folded(static_cast<std::size_t>(ranks), 0);
  bool any = false;
  for (int r = 1; r < ranks; ++r) {
    const auto& mine = by_rank[static_cast<std::size_t>(r)];
    const auto& base = by_rank[0];
    if (mine.size() != base.size() || !same_gpu(gpu(r), gpu(0)) || hbm_capacity(r) != hbm_capacity(0)) continue;
    Bijection streams(g.streams().size()), counters(g.counters().size());
    bool same = true;
    for (std::size_t i = 0; i < mine.size() && same; ++i) {
      const Op& a = g.ops()[static_cast<std::size_t>(base[i])];
      const Op& b = g.ops()[static_cast<std::size_t>(mine[i])];
      const bool zeroed = ctx.zeroed(a);
      same = zeroed == ctx.zeroed(b) && a.kind == b.kind && a.pass == b.pass && a.host_ps == b.host_ps &&
             (a.collective < 0) == (b.collective < 0) && a.deps.size() == b.deps.size() &&
             streams.pair(a.stream, b.stream) &&
             g.streams()[static_cast<std::size_t>(a.stream)].priority == g.streams()[static_cast<std::size_t>(b.stream)].priority;
      for (std::size_t k = 0; k < a.deps.size() && same; ++k)
        same = index[static_cast<std::size_t>(a.deps[k])] == index[static_cast<std::size_t>(b.deps[k])];
      if (!same || zeroed) continue;  // a zeroed op completes when ready, holding nothing
      // Every field the engine reads of an op that runs.
      same = a.comm == b.comm && a.communicator == b.communicator && a.ctas == b.ctas && a.ctas_per_sm == b.ctas_per_sm &&
             a.cta_ps == b.cta_ps && a.hbm_bytes_per_cta == b.hbm_bytes_per_cta && a.max_ctas == b.max_ctas &&
             a.reference_sms == b.reference_sms && a.channels == b.channels && a.duration_ps == b.duration_ps &&
             a.bytes == b.bytes && a.target == b.target && a.amount == b.amount && a.delay_ps == b.delay_ps &&
             a.members == b.members && a.phases == b.phases && a.curve_sends == b.curve_sends &&
             a.curve_from_switch == b.curve_from_switch && a.curve_latency_ps == b.curve_latency_ps &&
             a.outside_sends == b.outside_sends && a.outside_recvs == b.outside_recvs &&
             counters.pair(a.counter, b.counter) && a.tile_counters.size() == b.tile_counters.size();
      for (std::size_t k = 0; k < a.tile_counters.size() && same; ++k)
        same = counters.pair(a.tile_counters[k], b.tile_counters[k]);
    }
    if (same) folded[static_cast<std::size_t>(r)] = 1;
    any = any || same;
  }
  if (!any) return {};
  // Dependencies across ranks: a rank's timeline is rank 0's only if the ranks it waits for run as
  // rank 0 does too, so every rank must be like rank 0. Rank 0 then waits for its own op at the same
  // place among its ops (Engine's constructor redirects the dependency): by the correspondence checked
  // above that op ends when the peer's does.
  if (coupled && std::find(folded.begin() + 1, folded.end(), 0) != folded.end()) return {};
  return folded;
}

struct OpState {
  std::int32_t pending = 0;  // unfinished dependencies + stream predecessor
  bool done = false;
};

class Engine final : public NetworkClient, public GpuListener {
 public:
  Engine(const TaskGraph& g, const NodeConfig& node, const EngineOptions& opt, const NetworkFactory& network)
      : ctx_(g, node, opt), net_(network(NetworkEnv{ctx_.node, ctx_.queue, ctx_.now, *this, ctx_.bandwidth})), gpu_(ctx_, *this, *net_),
        st_(g.ops().size()),
        issue_ps_(g.ops().size(), 0), folded_(ranks_like_rank0(g, node, opt, ctx_)) {
    counter_value_.assign(g.counters().size(), 0);
    counter_waiters_.resize(g.counters().size());
    counter_low_target_.assign(g.counters().size(), std::numeric_limits<std::int64_t>::max());
    // Dependents in CSR form: dependencies and stream order, each op's in the order they are found
    // below (op id order). Counted and listed, then filled: no vector per op (this runs three times a
    // step), and the ops' dependency lists are read once.
    const std::size_t n = g.ops().size();
    dep_start_.assign(n + 1, 0);
    std::vector<OpId> last(g.streams().size(), kNoOp);
    std::vector<Ps> host(static_cast<std::size_t>(g.num_ranks()), 0);
    std::vector<std::pair<OpId, OpId>> edges;  // (before, after) in the order found: read once more, in order
    edges.reserve(2 * n);
    // Folded ranks: their ops never run, so nothing waits on them and they wait on nothing; an op that
    // runs and waits for a folded rank's op waits for rank 0's op at the same place instead.
    const std::vector<OpId> twin = folded_.empty() ? std::vector<OpId>{} : rank0_twins(g);
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) {
      const Op& op = g.op(id);
      OpState& s = st_[static_cast<std::size_t>(id)];
      const bool folded = is_folded(id);
      for (OpId d : op.deps) {
        ++s.pending;
        if (folded) continue;
        if (is_folded(d)) d = twin[static_cast<std::size_t>(d)];
        ++dep_start_[static_cast<std::size_t>(d) + 1];
        edges.emplace_back(d, id);
      }
      OpId& prev = last[static_cast<std::size_t>(op.stream)];
      if (prev != kNoOp && folded) {
        ++s.pending;
      } else if (prev != kNoOp) {
        ++dep_start_[static_cast<std::size_t>(prev) + 1];
        edges.emplace_back(prev, id);
        ++s.pending;
      }
      prev = id;
      // The host thread of each rank (or of each physical GPU, shared_host) issues its launches
      // ahead, in program order.
      if (is_launched(op.kind)) {
        const int rank = ctx_.rank(id);
        Ps& h = host[static_cast<std::size_t>(node.shared_host ? ctx_.physical(rank) : rank)];
        h = checked_add(h, checked_add(node.launch_host_ps, op.host_ps));
        // A library collective's own event handling is in its host_ps already.
        if (node.sync_host_ps > 0 && op.collective < 0) {
          for (OpId d : op.deps) {
            if (g.op(d).stream != op.stream) h = checked_add(h, node.sync_host_ps);
          }
        }
        issue_ps_[static_cast<std::size_t>(id)] = h;
      }
    }
    for (std::size_t i = 0; i < n; ++i) dep_start_[i + 1] += dep_start_[i];
    dependents_.resize(static_cast<std::size_t>(dep_start_[n]));
    std::vector<std::int32_t> fill(dep_start_.begin(), dep_start_.end() - 1);
    for (const auto& [from, to] : edges) dependents_[static_cast<std::size_t>(fill[static_cast<std::size_t>(from)]++)] = to;
  }

  void check_resources() const {
    const TaskGraph& g = ctx_.graph;
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) {
      const Op& op = g.op(id);
      if (ctx_.zeroed(op)) continue;
      const int rank = g.rank_of(id);
      const GpuConfig& gpu = ctx_.node.gpus[static_cast<std::size_t>(rank)];
      if (is_gang(op.kind) && op.channels > gpu.sm_count)
        throw ResourceError(fmt::format("op '{}' needs {} SMs but GPU {} has {}", op.name, op.channels, rank, gpu.sm_count));
      if ((op.kind == OpKind::tiled || op.kind == OpKind::persistent) && gpu.sm_count == 0)
        throw ResourceError(fmt::format("op '{}' needs SMs but GPU {} has none", op.name, rank));
      const GpuConfig& phys = ctx_.node.gpus[static_cast<std::size_t>(ctx_.physical(rank))];
      if (op.kind == OpKind::copy && phys.copy_engines == 0)
        throw ResourceError(fmt::format("copy '{}' needs a copy engine but GPU {} has none", op.name, rank));
    }
  }

  Timeline run() {
    check_resources();
    ctx_.queue.reserve(1024);
    // A folded rank's ops never become ready: nothing of another rank depends on them.
    std::size_t simulated = 0;
    for (OpId id = 0; id < static_cast<OpId>(ctx_.graph.ops().size()); ++id) {
      if (is_folded(id)) continue;
      ++simulated;
      if (st_[static_cast<std::size_t>(id)].pending == 0) ready_.push_back(id);
    }
    drain_ready();
    gpu_.flush();
    while (!ctx_.queue.empty()) {
      const Event e = ctx_.queue.pop();
      ctx_.now = e.time_ps;
      switch (e.type) {
        case EventType::kernel_launched: on_launched(e.a); break;
        case EventType::cohort_end: gpu_.on_cohort_end(e.a, static_cast<std::uint32_t>(e.b)); break;
        case EventType::timer: complete(e.a); break;
        case EventType::net_timer:
        case EventType::flow_latency_end:
        case EventType::flow_end: net_->on_event(e); break;
      }
      ++ctx_.tl.events;
      drain_ready();
      gpu_.flush();
    }
    if (completed_ != simulated) {
      if (!folded_.empty()) throw Unfold{};
      throw SimError(deadlock_message());
    }
    Timeline& tl = ctx_.tl;
    if (!folded_.empty()) copy_rank0_to_folded();
    for (OpId id = 0; id < static_cast<OpId>(ctx_.graph.ops().size()); ++id) {
      const Ps end = tl.ops[static_cast<std::size_t>(id)].end_ps;
      Ps& r = tl.rank_end_ps[static_cast<std::size_t>(ctx_.rank(id))];
      r = std::max(r, end);
      tl.makespan_ps = std::max(tl.makespan_ps, end);
    }
    return std::move(tl);
  }

  // A folded run stalled: the caller runs the graph in full (the full run's own message).
  struct Unfold {};

  // ---- NetworkClient / GpuListener ----

  // The timeline's record of what the network moved: every move loads its links; all but a memory
  // kernel's stream are transfers between GPUs.
  void moved(TransferReport&& r) override {
    for (int l : r.links) ctx_.tl.link_bytes[static_cast<std::size_t>(l)] += static_cast<double>(r.bytes);
    if (!r.memory_stream)
      ctx_.tl.transfers.push_back(
          TransferRecord{r.token, r.src_gpu, r.dst_gpu, r.bytes, r.start_ps, ctx_.now, std::move(r.links), r.receiver});
  }
  // A copy's bytes arrived, or a gang kernel's work (collective, memory stream, timed kernel) is done.
  void network_done(NetToken id) override {
    if (ctx_.op(id).kind == OpKind::copy) {
      complete(id);
      gpu_.copy_done(id);
      return;
    }
    gpu_.release_gang(id);
    complete(id);
  }
  // A gang kernel (comm_kernel or memory) holds its SMs: its work goes to the network side as plain
  // requests (a memory stream, a collective member, or a delay).
  void gang_started(OpId id) override {
    ctx_.mark_start(id);
    const Op& o = ctx_.op(id);
    if (o.kind == OpKind::memory) {
      start_memory_stream(id, o);
      return;
    }
    if (!o.phases.empty() || (o.collective >= 0 && (o.members > 1 || !o.outside_sends.empty() || !o.outside_recvs.empty()))) {
      net_->collective(collective_request(id, o), id);
      return;
    }
    net_->after(o.duration_ps, id);
  }
  void tile_done(OpId id, std::int64_t tile) override {
    const Op& o = ctx_.op(id);
    if (!o.tile_counters.empty())
      add_to_counter(o.tile_counters.size() == 1 ? o.tile_counters[0] : o.tile_counters[static_cast<std::size_t>(tile)], 1);
  }
  bool tiles_done_quietly(OpId id, std::int64_t count) override {
    const Op& o = ctx_.op(id);
    if (o.tile_counters.size() != 1) return false;
    const auto c = static_cast<std::size_t>(o.tile_counters[0]);
    if (counter_value_[c] + count >= counter_low_target_[c]) return false;
    counter_value_[c] += count;
    return true;
  }
  void kernel_done(OpId id) override { complete(id); }

  // What the network side needs of a collective member: the op's description of its part as data
  // (views of the op's phases and legs, which live as long as the graph).
  CollectiveRequest collective_request(OpId id, const Op& o) const {
    return CollectiveRequest{.group = o.collective, .members = o.members, .gpu = ctx_.rank(id), .name = o.name,
                             .phases = o.phases, .transport = o.transport, .ctas = o.channels,
                             .link_efficiency = o.link_efficiency, .latency_covers_wire = o.phase_latency_covers_wire,
                             .duration_ps = o.duration_ps, .curve_latency_ps = o.curve_latency_ps,
                             .sends = o.curve_sends, .outside_sends = o.outside_sends, .outside_recvs = o.outside_recvs,
                             .from_switch = o.curve_from_switch, .reduces = o.curve_reduces};
  }

  // A memory kernel streams its bytes through its GPU's HBM, no faster than its SMs pull
  // (GpuSpec::hbm_sm_gbps: a kernel on few SMs, a virtual rank's partition, cannot pull all of HBM).
  void start_memory_stream(OpId id, const Op& o) {
    if (o.bytes == 0 || (ctx_.options.zero_compute && !o.comm)) {  // nothing to stream
      net_->after(0, id);
      return;
    }
    const int r = ctx_.rank(id);
    const GpuConfig& gpu = ctx_.node.gpus[static_cast<std::size_t>(r)];
    const double cap = gpu.hbm_sm_bytes_per_ps > 0 ? (o.channels > 0 ? o.channels : gpu.sm_count) * gpu.hbm_sm_bytes_per_ps : 0;
    net_->stream_memory(MemoryStreamRequest{r, o.bytes, cap, gpu.hbm_latency_ps}, id);
  }

 private:
  OpState& state(OpId id) { return st_[static_cast<std::size_t>(id)]; }
  bool is_folded(OpId id) const { return !folded_.empty() && folded_[static_cast<std::size_t>(ctx_.rank(id))]; }

  // Each op of a folded rank: rank 0's op at the same place among its rank's ops (ranks_like_rank0:
  // the same ops in the same order); -1 for the other ranks' ops.
  std::vector<OpId> rank0_twins(const TaskGraph& g) const {
    std::vector<OpId> base, twin(g.ops().size(), kNoOp);
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id)
      if (ctx_.rank(id) == 0) base.push_back(id);
    std::vector<std::size_t> next(folded_.size(), 0);
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) {
      const auto r = static_cast<std::size_t>(ctx_.rank(id));
      if (folded_[r]) twin[static_cast<std::size_t>(id)] = base[next[r]++];
    }
    return twin;
  }

  // A folded rank's records are rank 0's (ranks_like_rank0: its ops are rank 0's, in the same order).
  void copy_rank0_to_folded() {
    const TaskGraph& g = ctx_.graph;
    Timeline& tl = ctx_.tl;
    std::vector<OpId> base;
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id)
      if (ctx_.rank(id) == 0) base.push_back(id);
    std::vector<std::size_t> next(folded_.size(), 0);
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()); ++id) {
      const auto r = static_cast<std::size_t>(ctx_.rank(id));
      if (!folded_[r]) continue;
      OpRecord& rec = tl.ops[static_cast<std::size_t>(id)];
      rec = tl.ops[static_cast<std::size_t>(base[next[r]++])];
      rec.op = id;
    }
    for (std::size_t r = 0; r < folded_.size(); ++r) {
      if (!folded_[r]) continue;
      tl.sm_busy_ps[r] = tl.sm_busy_ps[0];
      tl.copy_engine_busy_ps[r] = tl.copy_engine_busy_ps[0];
    }
  }

  void complete(OpId id) {
    OpState& s = state(id);
    s.done = true;
    ++completed_;
    ctx_.mark_start(id);
    ctx_.rec(id).end_ps = ctx_.now;
    for (std::int32_t i = dep_start_[static_cast<std::size_t>(id)]; i < dep_start_[static_cast<std::size_t>(id) + 1]; ++i) {
      const OpId d = dependents_[static_cast<std::size_t>(i)];
      if (--state(d).pending == 0) ready_.push_back(d);
    }
  }

  // Ops whose dependencies are met, in the order they became ready (deterministic).
  void drain_ready() {
    for (std::size_t i = 0; i < ready_.size(); ++i) on_ready(ready_[i]);
    ready_.clear();
  }

  void on_ready(OpId id) {
    const Op& o = ctx_.op(id);
    ctx_.rec(id).ready_ps = ctx_.now;
    if (ctx_.zeroed(o)) {
      complete(id);
      return;
    }
    switch (o.kind) {
      case OpKind::tiled:
      case OpKind::persistent:
      case OpKind::comm_kernel:
      case OpKind::memory:
      case OpKind::copy: {
        // Launch: no earlier than the host issued it, and a device-side gap after its dependencies.
        const Ps at = std::max(checked_add(ctx_.now, ctx_.node.launch_gap_ps), issue_ps_[static_cast<std::size_t>(id)]);
        ctx_.queue.push(at, EventType::kernel_launched, id, 0);
        break;
      }
      case OpKind::wait:
        if (counter_value_[static_cast<std::size_t>(o.counter)] >= o.target) {
          complete(id);
        } else {
          counter_waiters_[static_cast<std::size_t>(o.counter)].push_back(id);
          std::int64_t& low = counter_low_target_[static_cast<std::size_t>(o.counter)];
          low = std::min(low, o.target);
        }
        break;
      case OpKind::signal:
        add_to_counter(o.counter, o.amount);
        complete(id);
        break;
      case OpKind::delay:
        ctx_.mark_start(id);
        ctx_.queue.push(checked_add(ctx_.now, ctx_.options.zero_compute && !o.comm ? 0 : o.delay_ps), EventType::timer, id, 0);
        break;
    }
  }

  void on_launched(OpId id) {
    const Op& o = ctx_.op(id);
    // Communication alone (zero_compute): a compute kernel's CTAs would take no time, so it ends at its
    // launch without dispatching them; one that signals counters per tile still runs its (zero-time)
    // tiles so waiters see every signal.
    if (ctx_.options.zero_compute && !o.comm && (o.kind == OpKind::tiled || o.kind == OpKind::persistent) &&
        o.tile_counters.empty() && !ctx_.options.on_tile_end) {
      complete(id);
      return;
    }
    if (o.kind == OpKind::copy) gpu_.queue_copy(id);
    else if (is_gang(o.kind) && o.channels == 0) gang_started(id);  // needs no SM (HBM-bound, or a timer)
    else gpu_.launch(id);
  }

  void add_to_counter(CounterId c, std::int64_t amount) {
    std::int64_t& v = counter_value_[static_cast<std::size_t>(c)];
    v += amount;
    // Below every waiter's target nothing is released (FlashOverlap's counter moves once per tile,
    // its waiters far fewer times): skip reading the waiting ops.
    std::int64_t& low = counter_low_target_[static_cast<std::size_t>(c)];
    if (v < low) return;
    auto& waiters = counter_waiters_[static_cast<std::size_t>(c)];
    std::size_t kept = 0;
    low = std::numeric_limits<std::int64_t>::max();
    for (OpId w : waiters) {
      const std::int64_t target = ctx_.op(w).target;
      if (v >= target) {
        complete(w);
      } else {
        waiters[kept++] = w;
        low = std::min(low, target);
      }
    }
    waiters.resize(kept);
  }

  std::string deadlock_message() {
    const TaskGraph& g = ctx_.graph;
    std::string msg = fmt::format("simulation stalled: {} of {} ops never finished:", g.ops().size() - completed_,
                                  g.ops().size());
    int shown = 0;
    for (OpId id = 0; id < static_cast<OpId>(g.ops().size()) && shown < 8; ++id) {
      const OpState& s = st_[static_cast<std::size_t>(id)];
      const Op& o = ctx_.op(id);
      if (s.done || s.pending > 0) continue;  // blocked behind another unfinished op: report the root causes
      std::string why;
      if (o.kind == OpKind::wait)
        why = fmt::format("waits for counter '{}' to reach {} (it is {})", g.counters()[static_cast<std::size_t>(o.counter)].name,
                          o.target, counter_value_[static_cast<std::size_t>(o.counter)]);
      else if (gpu_.waiting_for_sms(id))
        why = "waits for SMs that never free up";
      else if (gpu_.waiting_for_copy_engine(id))
        why = "waits for a copy engine";
      else if (o.kind == OpKind::comm_kernel && net_->waiting_in_rendezvous(id))
        why = fmt::format("collective {} has only some of its {} members", o.collective, o.members);
      else if (o.kind == OpKind::comm_kernel && !o.phases.empty())
        why = "a phase has unmatched sends or receives";
      else
        why = "could not get its resources";
      msg += fmt::format("\n  '{}' on rank {}: {}", o.name, ctx_.rank(id), why);
      ++shown;
    }
    return msg;
  }

  SimContext ctx_;
  std::unique_ptr<NetworkApi> net_;
  GpuSide gpu_;
  std::vector<OpState> st_;
  std::vector<Ps> issue_ps_;
  std::vector<std::int32_t> dep_start_;
  std::vector<OpId> dependents_;
  std::vector<std::int64_t> counter_value_;
  std::vector<std::vector<OpId>> counter_waiters_;
  std::vector<std::int64_t> counter_low_target_;  // lowest target of the counter's waiters (max: none)
  std::vector<OpId> ready_;
  std::size_t completed_ = 0;
  std::vector<char> folded_;  // per rank (EngineOptions::fold_like_ranks); empty: none
};

}  // namespace

Timeline run(const TaskGraph& graph, const NodeConfig& node, const EngineOptions& options) {
  return run_with_network(graph, node, options, make_flow_network_side);
}

Timeline run_with_network(const TaskGraph& graph, const NodeConfig& node, const EngineOptions& options,
                          const NetworkFactory& network) {
  if (static_cast<int>(node.gpus.size()) < graph.num_ranks())
    throw SimError(fmt::format("graph has {} ranks but the node has {} GPUs", graph.num_ranks(), node.gpus.size()));
  for (int r = 0; r < graph.num_ranks(); ++r) {
    const int p = node.gpus[static_cast<std::size_t>(r)].physical;
    if (p >= graph.num_ranks())
      throw SimError(fmt::format("rank {} runs on physical GPU {}, outside the graph's {} ranks", r, p, graph.num_ranks()));
  }
  // CTAs of a wave end together and cost one event, but each is still dispatched and retired one by
  // one: past a few hundred million a run takes minutes, so refuse it up front rather than appear to hang.
  // Both are properties of the graph alone: a re-run of a checked graph (graph_checked) skips them.
  if (!options.graph_checked) {
    constexpr std::int64_t kMaxCtas = 200'000'000;
    std::int64_t ctas = 0;
    for (const Op& op : graph.ops())
      if (op.kind == OpKind::tiled || op.kind == OpKind::persistent) ctas += op.ctas;
    if (ctas > kMaxCtas)
      throw ResourceError(fmt::format("the graph has {} CTAs, more than the {} the engine simulates one by one; "
                                      "shrink the workload", ctas, kMaxCtas));
    graph.check_acyclic();
  }
  if (options.fold_like_ranks) {
    try {
      Engine engine(graph, node, options, network);
      return engine.run();
    } catch (const Engine::Unfold&) {
      EngineOptions full = options;
      full.fold_like_ranks = false;
      return Engine(graph, node, full, network).run();
    }
  }
  Engine engine(graph, node, options, network);
  return engine.run();
}

}  // namespace overlap::sim
