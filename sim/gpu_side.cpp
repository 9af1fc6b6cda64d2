#include "sim/gpu_side.hpp"

#include <algorithm>
#include <cmath>
#include <span>

namespace overlap::sim {
namespace {

bool is_tile_kernel(OpKind k) { return k == OpKind::tiled || k == OpKind::persistent; }

}  // namespace

GpuSide::GpuSide(SimContext& ctx, GpuListener& listener, NetworkApi& net)
    : ctx_(ctx), listener_(listener), net_(net), kernels_(ctx.graph.ops().size()) {
  const int ranks = ctx.graph.num_ranks();
  phys_.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const GpuConfig& c = ctx.node.gpus[static_cast<std::size_t>(r)];
    pools_.emplace_back(c.sm_count);
    PhysicalGpu& g = phys_[static_cast<std::size_t>(ctx.physical(r))];
    g.sm_total += c.sm_count;
    g.interference = c.comm_interference;
    g.full_rate_sms = c.full_rate_sms;
    full_rate_ = full_rate_ || c.full_rate_sms > 0;
  }
  for (int p = 0; p < ranks; ++p) {
    const int engines = ctx.node.gpus[static_cast<std::size_t>(p)].copy_engines;
    phys_[static_cast<std::size_t>(p)].engine_busy.assign(static_cast<std::size_t>(engines), 0);
    phys_[static_cast<std::size_t>(p)].engine_since.assign(static_cast<std::size_t>(engines), 0);
  }
}

// ---- SMs ----

void GpuSide::launch(OpId id) {
  const Op& o = ctx_.op(id);
  KernelState& s = ks(id);
  const int rank = ctx_.rank(id);
  if (o.kind == OpKind::persistent) {
    // A persistent kernel's grid is fixed at launch (one CTA per slot of the GPU, or its cap); its
    // CTAs start as SMs free up, each looping over its tiles (tile c, c + grid, ...).
    const std::int64_t slots = static_cast<std::int64_t>(pools_[static_cast<std::size_t>(rank)].sm_count()) * o.ctas_per_sm;
    s.grid = std::min<std::int64_t>(o.ctas, o.max_ctas > 0 ? o.max_ctas : slots);
  }
  s.has_demand = o.hbm_bytes_per_cta > 0 && o.cta_ps > 0 && !(ctx_.options.zero_compute && !o.comm);
  const Stream& st = ctx_.graph.streams()[static_cast<std::size_t>(o.stream)];
  pools_[static_cast<std::size_t>(rank)].enqueue({st.priority, launch_seq_++, id});
  dispatch(rank);
}

int GpuSide::take_sm(SmPool& p, OpId id) {
  const int sm = p.take(id);
  claim_sms(id, 1);
  return sm;
}

// The bookkeeping of `count` SMs taken by one kernel in a row: taking them one by one would give the
// same held count, peak, tile SMs and dirty marks (none of it depends on which SMs they are).
void GpuSide::claim_sms(OpId id, int count) {
  KernelState& s = ks(id);
  s.held += count;
  OpRecord& r = ctx_.rec(id);
  r.sms_held = std::max(r.sms_held, s.held);
  tile_sms_changed(id, count);
  if (is_tile_kernel(ctx_.op(id).kind) && !s.in_active) {
    // From now on its rate follows the GPU's interference; set it for what runs there already.
    s.in_active = true;
    phys_of(id).active.push_back(id);
    if (phys_of(id).comm_sms > 0) mark_rate(id);
  }
}

// Hands free SMs to waiting kernels: highest priority first, then launch order.
void GpuSide::dispatch(int rank) {
  SmPool& p = pools_[static_cast<std::size_t>(rank)];
  auto& waiting = p.waiting();
  std::size_t i = 0;
  while (i < waiting.size() && p.free_count() > 0) {
    const OpId id = waiting[i].op;
    const Op& o = ctx_.op(id);
    KernelState& s = ks(id);
    bool leaves = false;
    if (is_tile_kernel(o.kind)) {
      // Tiled: the next tiles in launch order. Persistent: the next CTAs of the grid, each starting
      // on its first tile (its index).
      // All the SMs it gets now are taken in one pass: the lowest free ones in order, each filled
      // with its CTAs in tile order, all starting now and so joining one cohort (as start_cta would).
      const std::int64_t limit = o.kind == OpKind::tiled ? o.ctas : s.grid;
      const std::int64_t per_sm = o.ctas_per_sm;
      const int sms = static_cast<int>(std::min<std::int64_t>(p.free_count(), (limit - s.next + per_sm - 1) / per_sm));
      if (sms > 0) {
        claim_sms(id, sms);
        const std::int64_t first = s.next;
        Cohort* open = nullptr;
        p.take_lowest(sms, id, [&](int sm) {
          const std::int64_t n = std::min<std::int64_t>(per_sm, limit - s.next);
          p.resident(sm) = static_cast<int>(n);
          std::int64_t k = 0;
          if (!open) {
            start_cta(id, sm, s.next++);
            open = &cohorts_[static_cast<std::size_t>(s.open_cohort)];
            k = 1;
          }
          for (; k < n; ++k) open->ctas.emplace_back(sm, s.next++);
        });
        s.running += static_cast<std::int32_t>(s.next - first - 1);
      }
      leaves = s.next == limit;
    } else {  // gang: comm_kernel or memory kernel holding `channels` SMs
      while (s.held < o.channels && p.free_count() > 0) {
        const int sm = take_sm(p, id);
        p.resident(sm) = 1;
        std::vector<int>& sms = ctx_.rec(id).sms;
        if (sms.empty()) sms.reserve(static_cast<std::size_t>(o.channels));  // one allocation per gang kernel
        sms.push_back(sm);
        if (o.comm) comm_sms_changed(phys_of(id), 1);
      }
      if (s.held == o.channels) {
        waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
        listener_.gang_started(id);
        continue;
      }
    }
    if (leaves) waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
    else ++i;
  }
}

void GpuSide::start_cta(OpId id, int sm, std::int64_t tile) {
  KernelState& s = ks(id);
  ++s.running;
  if (s.has_demand && !s.dirty_demand) mark_demand(id);
  if (s.open_cohort >= 0) {
    Cohort& open = cohorts_[static_cast<std::size_t>(s.open_cohort)];
    if (open.alive && open.start_ps == ctx_.now) {  // the hot path: a wave refilling its SMs
      open.ctas.emplace_back(sm, tile);
      return;
    }
  }
  ctx_.mark_start(id);
  std::int32_t c;
  if (!free_cohorts_.empty()) {
    c = free_cohorts_.back();
    free_cohorts_.pop_back();
  } else {
    cohorts_.emplace_back();
    c = static_cast<std::int32_t>(cohorts_.size() - 1);
  }
  Cohort& co = cohorts_[static_cast<std::size_t>(c)];
  co.op = id;
  co.start_ps = co.last_ps = ctx_.now;
  const Op& o = ctx_.op(id);
  co.left = ctx_.options.zero_compute && !o.comm ? 0.0 : static_cast<double>(o.cta_ps);
  co.rate = s.rate;
  ++co.version;
  co.alive = true;
  co.ctas.clear();  // keeps the buffer of the cohort that used this slot before
  co.ctas.emplace_back(sm, tile);
  s.cohorts.push_back(c);
  s.open_cohort = c;
  schedule(c);
}

void GpuSide::schedule(std::int32_t c) {
  const Cohort& co = cohorts_[static_cast<std::size_t>(c)];
  // At rate 1 the end is exact (integer work); otherwise rounded up, forgiving floating-point dust.
  const double left = co.rate == 1.0 ? co.left : std::ceil(co.left / co.rate - 1e-6);
  ctx_.queue.push(checked_add(co.last_ps, checked_ps(std::max(0.0, left))), EventType::cohort_end, c, co.version);
}

void GpuSide::on_cohort_end(std::int32_t c, std::uint32_t version) {
  Cohort& co = cohorts_[static_cast<std::size_t>(c)];
  if (!co.alive || co.version != version) return;  // stale: the cohort's rate changed
  co.alive = false;
  const OpId id = co.op;
  const Ps start = co.start_ps;
  ctas_.swap(co.ctas);
  const Op& o = ctx_.op(id);
  KernelState& s = ks(id);
  s.cohorts.erase(std::find(s.cohorts.begin(), s.cohorts.end(), c));
  if (s.open_cohort == c) s.open_cohort = -1;
  const int rank = ctx_.rank(id);
  SmPool& p = pools_[static_cast<std::size_t>(rank)];
  ctx_.tl.sm_busy_ps[static_cast<std::size_t>(rank)] += static_cast<Ps>(ctas_.size()) * (ctx_.now - start);
  s.running -= static_cast<std::int32_t>(ctas_.size());
  if (s.has_demand) mark_demand(id);
  // A kernel signalling one counter (FlashOverlap) signals the cohort's tiles at once when that
  // releases no waiter: nothing else then depends on the tile order, so it retires as unsignalled ones.
  const bool per_tile = ctx_.options.record_ctas || ctx_.options.on_tile_end ||
                        (!o.tile_counters.empty() && !listener_.tiles_done_quietly(id, static_cast<std::int64_t>(ctas_.size())));
  // The CTAs retire one by one in the order they started, as separate events would have. While the
  // kernel is first in line for its freed SMs and has tiles left, each retiring CTA's slot goes straight
  // to its next tile (the branch below); with nothing to record per tile, those first CTAs are handed
  // over in one pass: the same slots, tiles and order, without a call per CTA.
  std::size_t first = 0;
  if (!per_tile && o.kind == OpKind::tiled && s.next < o.ctas && p.waiting().front().op == id) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(ctas_.size()), o.ctas - s.next));
    s.done_tiles += static_cast<std::int64_t>(n);
    start_cta(id, ctas_[0].first, s.next++);
    // The slots' SMs in order, with the next tiles: written in place (a wave is hundreds of CTAs).
    auto& out = cohorts_[static_cast<std::size_t>(s.open_cohort)].ctas;
    const std::size_t at = out.size();
    out.resize(at + n - 1);
    std::int64_t next = s.next;
    for (std::size_t i = 1; i < n; ++i) out[at + i - 1] = {ctas_[i].first, next++};
    s.next = next;
    s.running += static_cast<std::int32_t>(n - 1);
    if (s.next == o.ctas) p.dequeue(id);
    first = n;
  }
  if (!per_tile && o.kind == OpKind::tiled && s.next == o.ctas && p.waiting().empty()) {
    // Nothing left to start and no kernel of this rank waiting: every remaining CTA just frees its
    // slot, and the dispatch after each freed SM would find no one to hand it to. Released in one
    // pass: the same SMs freed, the same counts, the kernel finishing after its last CTA.
    int freed = 0;
    for (std::size_t i = first; i < ctas_.size(); ++i) {
      const int sm = ctas_[i].first;
      if (--p.resident(sm) == 0) {
        p.release(sm);
        ++freed;
      }
    }
    s.done_tiles += static_cast<std::int64_t>(ctas_.size() - first);
    if (freed > 0) {
      s.held -= freed;
      tile_sms_changed(id, -freed);
    }
    if (first < ctas_.size() && s.done_tiles == o.ctas) kernel_finished(id);
    first = ctas_.size();
  }
  for (std::size_t i = first; i < ctas_.size(); ++i) {
    const auto [sm, tile] = ctas_[i];
    if (per_tile) {
      if (ctx_.options.record_ctas) ctx_.tl.ctas.push_back(CtaRecord{id, sm, tile, start, ctx_.now});
      if (ctx_.options.on_tile_end) ctx_.options.on_tile_end(id, tile, ctx_.now);
      listener_.tile_done(id, tile);
    }
    ++s.done_tiles;
    bool freed = false;
    if (o.kind == OpKind::persistent && tile + s.grid < o.ctas) {
      start_cta(id, sm, tile + s.grid);  // a persistent CTA loops to its next tile
    } else if (o.kind == OpKind::tiled && s.next < o.ctas && p.waiting().front().op == id) {
      // The slot goes straight to this kernel's next CTA when it is first in line for a freed SM. A
      // higher-priority kernel waiting first instead lets the SM drain (all its CTAs end) and takes it.
      start_cta(id, sm, s.next++);
      if (s.next == o.ctas) p.dequeue(id);
    } else if (--p.resident(sm) == 0) {
      p.release(sm);
      --s.held;
      tile_sms_changed(id, -1);
      freed = true;
    }
    if (s.done_tiles == o.ctas) kernel_finished(id);
    if (freed && !hand_freed_sm(p, sm)) dispatch(rank);
  }
  // The slot keeps this buffer for the cohort that reuses it next.
  ctas_.clear();
  cohorts_[static_cast<std::size_t>(c)].ctas.swap(ctas_);
  free_cohorts_.push_back(c);
}

// dispatch(rank) when `sm`, just freed, is the only free SM: the first kernel in line takes it. A
// gang kernel adds it to its channels (starting once it holds them all); a tile kernel that already
// holds SMs and opened a cohort now (joined the GPU's active kernels, its rate marked: what its first
// SM did) takes it with its next CTAs, which join that cohort. The same steps, sums and marks, in the
// same order, as a dispatch call, without its search of the waiting list and the free bits: the tail
// of a wave hands its SMs one by one to the kernel waiting beside it, and this is that hot path.
// False (nothing done): a case for dispatch itself.
bool GpuSide::hand_freed_sm(SmPool& p, int sm) {
  if (p.free_count() != 1 || p.waiting().empty()) return false;
  const OpId w = p.waiting().front().op;
  const Op& wo = ctx_.op(w);
  KernelState& ws = ks(w);
  if (!is_tile_kernel(wo.kind)) {  // dispatch's gang branch, for one SM
    if (ws.held >= wo.channels) return false;
    claim_sms(w, 1);
    p.take(w);  // the lowest free SM: `sm`, the only one
    p.resident(sm) = 1;
    std::vector<int>& sms = ctx_.rec(w).sms;
    if (sms.empty()) sms.reserve(static_cast<std::size_t>(wo.channels));
    sms.push_back(sm);
    if (wo.comm) comm_sms_changed(phys_of(w), 1);
    if (ws.held == wo.channels) {
      p.waiting().erase(p.waiting().begin());
      listener_.gang_started(w);
    }
    return true;
  }
  if (!ws.in_active || ws.open_cohort < 0) return false;
  Cohort& open = cohorts_[static_cast<std::size_t>(ws.open_cohort)];
  if (!open.alive || open.start_ps != ctx_.now) return false;
  const std::int64_t limit = wo.kind == OpKind::tiled ? wo.ctas : ws.grid;
  // claim_sms(w, 1), in_active already set.
  ++ws.held;
  OpRecord& r = ctx_.rec(w);
  r.sms_held = std::max(r.sms_held, ws.held);
  tile_sms_changed(w, 1);
  p.take(w);
  const std::int64_t n = std::min<std::int64_t>(wo.ctas_per_sm, limit - ws.next);
  p.resident(sm) = static_cast<int>(n);
  // start_cta joining the open cohort, then the SM's other CTAs.
  if (ws.has_demand && !ws.dirty_demand) mark_demand(w);
  for (std::int64_t k = 0; k < n; ++k) open.ctas.emplace_back(sm, ws.next++);
  ws.running += static_cast<std::int32_t>(n);
  if (ws.next == limit) p.waiting().erase(p.waiting().begin());
  return true;
}

void GpuSide::kernel_finished(OpId id) {
  KernelState& s = ks(id);
  if (s.demand >= 0) remove_demand(id);
  if (s.in_active) {
    auto& active = phys_of(id).active;
    active.erase(std::find(active.begin(), active.end(), id));
    s.in_active = false;
  }
  listener_.kernel_done(id);
}

void GpuSide::release_gang(OpId id) {
  const Op& o = ctx_.op(id);
  OpRecord& r = ctx_.rec(id);
  if (r.sms.empty()) return;
  const int rank = ctx_.rank(id);
  SmPool& p = pools_[static_cast<std::size_t>(rank)];
  ctx_.tl.sm_busy_ps[static_cast<std::size_t>(rank)] += static_cast<Ps>(r.sms.size()) * (ctx_.now - r.start_ps);
  for (int sm : r.sms) p.release(sm);
  if (o.comm) comm_sms_changed(phys_of(id), -static_cast<int>(r.sms.size()));
  ks(id).held = 0;
  dispatch(rank);
}

// ---- rates: interference and HBM ----

void GpuSide::comm_sms_changed(PhysicalGpu& g, int delta) {
  g.comm_sms += delta;
  if (g.interference > 0 && !g.dirty) {
    g.dirty = true;
    dirty_phys_.push_back(static_cast<int>(&g - phys_.data()));
  }
}

void GpuSide::tile_sms_changed(OpId id, int delta) {
  if (!full_rate_) return;
  const Op& o = ctx_.op(id);
  if (!is_tile_kernel(o.kind) || o.comm || o.reference_sms <= 0) return;
  PhysicalGpu& g = phys_of(id);
  g.tile_sms += delta;
  if (g.full_rate_sms > 0 && !g.dirty) {
    g.dirty = true;
    dirty_phys_.push_back(static_cast<int>(&g - phys_.data()));
  }
}

double GpuSide::saturation_rate(OpId id) const {
  if (!full_rate_) return 1.0;
  const Op& o = ctx_.op(id);
  const PhysicalGpu& g = phys_[static_cast<std::size_t>(ctx_.physical(ctx_.rank(id)))];
  if (g.full_rate_sms <= 0 || o.reference_sms <= 0) return 1.0;
  return std::max(g.full_rate_sms, static_cast<double>(o.reference_sms)) /
         std::max(g.full_rate_sms, static_cast<double>(g.tile_sms));
}

void GpuSide::mark_demand(OpId id) {
  KernelState& s = ks(id);
  if (s.dirty_demand) return;
  s.dirty_demand = true;
  dirty_demand_.push_back(id);
}

// A flow is mapped to its op once add_demand has it: the share a new demand gets is read when its
// rate is marked there.
void GpuSide::rate_changed(int flow) {
  if (flow >= static_cast<int>(demand_op_.size())) return;
  const OpId id = demand_op_[static_cast<std::size_t>(flow)];
  if (id != kNoOp) mark_rate(id);
}

void GpuSide::add_demand(OpId id, double bytes_per_ps) {
  const int hbm = ctx_.bandwidth.hbm(ctx_.rank(id));
  if (hbm < 0 || !(bytes_per_ps > 0)) return;  // no memory model, or nothing to stream
  const int flow = ctx_.bandwidth.add(*this, ctx_.now, std::span<const int>(&hbm, 1), bytes_per_ps, -1.0);
  if (static_cast<int>(demand_op_.size()) <= flow) demand_op_.resize(static_cast<std::size_t>(flow) + 1, kNoOp);
  demand_op_[static_cast<std::size_t>(flow)] = id;
  ks(id).demand = flow;
}

void GpuSide::remove_demand(OpId id) {
  KernelState& s = ks(id);
  ctx_.bandwidth.remove(ctx_.now, s.demand);
  demand_op_[static_cast<std::size_t>(s.demand)] = kNoOp;
  s.demand = -1;
}

void GpuSide::mark_rate(OpId id) {
  KernelState& s = ks(id);
  if (s.dirty_rate) return;
  s.dirty_rate = true;
  dirty_rate_.push_back(id);
}

double GpuSide::target_rate(OpId id) const {
  const KernelState& s = kernels_[static_cast<std::size_t>(id)];
  const PhysicalGpu& g = phys_[static_cast<std::size_t>(ctx_.physical(ctx_.rank(id)))];
  double rate = 1.0;
  if (g.interference > 0 && g.comm_sms > 0 && g.sm_total > 0)
    rate = 1.0 / (1.0 + g.interference * std::min(1.0, static_cast<double>(g.comm_sms) / g.sm_total));
  // The HBM demand was set at the saturation rate (flush), so its multiplier is relative to it.
  if (s.demand >= 0) rate = std::min(rate, ctx_.bandwidth.multiplier(s.demand));
  const double saturation = saturation_rate(id);
  return saturation == 1.0 ? rate : rate * saturation;
}

void GpuSide::set_rate(OpId id, double rate) {
  KernelState& s = ks(id);
  s.rate = rate;
  for (std::int32_t c : s.cohorts) {
    Cohort& co = cohorts_[static_cast<std::size_t>(c)];
    co.left = std::max(0.0, co.left - static_cast<double>(ctx_.now - co.last_ps) * co.rate);
    co.last_ps = ctx_.now;
    co.rate = rate;
    ++co.version;
    schedule(c);
  }
}

void GpuSide::flush() {
  while (!dirty_demand_.empty() || !dirty_rate_.empty() || !dirty_phys_.empty()) {
    scratch_ops_.clear();
    scratch_ops_.swap(dirty_demand_);
    for (OpId id : scratch_ops_) {
      KernelState& s = ks(id);
      s.dirty_demand = false;
      const Op& o = ctx_.op(id);
      if (s.done_tiles == o.ctas) continue;
      // A tile's HBM traffic at full speed, for every CTA running now.
      const double cap = static_cast<double>(s.running) * static_cast<double>(o.hbm_bytes_per_cta) /
                         static_cast<double>(o.cta_ps) * saturation_rate(id);
      if (s.running == 0) {
        if (s.demand >= 0) remove_demand(id);
      } else if (s.demand < 0) {
        add_demand(id, cap);
      } else {
        ctx_.bandwidth.set_cap(ctx_.now, s.demand, cap);
      }
      mark_rate(id);
    }
    scratch_phys_.clear();
    scratch_phys_.swap(dirty_phys_);
    for (int index : scratch_phys_) {
      PhysicalGpu& g = phys_[static_cast<std::size_t>(index)];
      g.dirty = false;
      for (OpId id : g.active) {
        KernelState& s = ks(id);
        if (g.full_rate_sms > 0 && s.has_demand) mark_demand(id);  // its HBM demand follows its rate
        mark_rate(id);
      }
    }
    scratch_ops_.clear();
    scratch_ops_.swap(dirty_rate_);
    for (OpId id : scratch_ops_) {
      KernelState& s = ks(id);
      s.dirty_rate = false;
      if (s.done_tiles == ctx_.op(id).ctas) continue;
      const double r = target_rate(id);
      if (r != s.rate) set_rate(id, r);
    }
  }
}

// ---- copy engines ----

void GpuSide::queue_copy(OpId id) {
  PhysicalGpu& g = phys_of(id);
  const auto it = std::find(g.engine_busy.begin(), g.engine_busy.end(), 0);
  if (it == g.engine_busy.end()) g.copy_queue.push_back(id);
  else start_copy(id, static_cast<int>(it - g.engine_busy.begin()));
}

void GpuSide::start_copy(OpId id, int engine) {
  PhysicalGpu& g = phys_of(id);
  g.engine_busy[static_cast<std::size_t>(engine)] = 1;
  g.engine_since[static_cast<std::size_t>(engine)] = ctx_.now;
  ctx_.mark_start(id);
  ctx_.rec(id).copy_engine = engine;
  const Op& o = ctx_.op(id);
  net_.transfer(TransferRequest{o.src_gpu, o.dst_gpu, o.bytes, Transport::copy_engine, 0}, id);
}

void GpuSide::copy_done(OpId id) {
  PhysicalGpu& g = phys_of(id);
  const int e = ctx_.rec(id).copy_engine;
  g.engine_busy[static_cast<std::size_t>(e)] = 0;
  ctx_.tl.copy_engine_busy_ps[static_cast<std::size_t>(ctx_.rank(id))] += ctx_.now - g.engine_since[static_cast<std::size_t>(e)];
  if (!g.copy_queue.empty()) {
    const OpId next = g.copy_queue.front();
    g.copy_queue.pop_front();
    start_copy(next, e);
  }
}

// ---- diagnostics ----

bool GpuSide::waiting_for_sms(OpId op) const {
  const SmPool& p = pools_[static_cast<std::size_t>(ctx_.rank(op))];
  auto& w = const_cast<SmPool&>(p).waiting();
  return std::any_of(w.begin(), w.end(), [op](const SmPool::Waiting& x) { return x.op == op; });
}

bool GpuSide::waiting_for_copy_engine(OpId op) const {
  const PhysicalGpu& g = phys_[static_cast<std::size_t>(ctx_.physical(ctx_.rank(op)))];
  return std::find(g.copy_queue.begin(), g.copy_queue.end(), op) != g.copy_queue.end();
}

}  // namespace overlap::sim
