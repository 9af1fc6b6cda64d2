// Overlap figures and kernel listings of a trace (calibrate/traces/trace_analysis.hpp).
#include "calibrate/traces/trace_analysis.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "calibrate/traces/trace_limits.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/text.hpp"

namespace overlap::traces {

std::optional<double> OverlapFigures::overlap() const {
  if (comm_ns <= 0) return std::nullopt;
  return 1.0 - static_cast<double>(exposed_ns) / static_cast<double>(comm_ns);
}

OverlapFigures& OverlapFigures::operator+=(const OverlapFigures& o) {
  // Each figure of one GPU is below 2^62 ns (trace_limits.hpp); their sums are checked.
  compute_ns = add_ns(compute_ns, o.compute_ns, "", "the summed compute time");
  comm_ns = add_ns(comm_ns, o.comm_ns, "", "the summed communication time");
  exposed_ns = add_ns(exposed_ns, o.exposed_ns, "", "the summed unoverlapped communication time");
  memory_ns = add_ns(memory_ns, o.memory_ns, "", "the summed memory time");
  span_ns = std::max(span_ns, o.span_ns);
  kernels += o.kernels;
  return *this;
}

namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

// Sorts and merges overlapping or touching intervals in place.
void merge(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  std::size_t out = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (out > 0 && v[i].first <= v[out - 1].second) {
      v[out - 1].second = std::max(v[out - 1].second, v[i].second);
    } else {
      v[out++] = v[i];
    }
  }
  v.resize(out);
}

std::int64_t length(const std::vector<Interval>& v) {
  std::int64_t sum = 0;
  for (const auto& [a, b] : v) sum += b - a;
  return sum;
}

// |A n B| of two merged interval lists.
std::int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t sum = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) sum += hi - lo;
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return sum;
}

}  // namespace

const char* class_name(ActivityClass c) {
  switch (c) {
    case ActivityClass::compute: return "compute";
    case ActivityClass::communication: return "communication";
    case ActivityClass::memory: return "memory";
  }
  return "compute";
}

std::string describe(const GemmGroup& g) {
  if (!g.shape) return "shape unknown";
  const GemmShape& s = *g.shape;
  std::string out = s.batch > 1 ? fmt::format("{}x({}x{}x{})", s.batch, s.m, s.n, s.k) : fmt::format("{}x{}x{}", s.m, s.n, s.k);
  return s.dtype.empty() ? out : out + " " + s.dtype;
}

std::string describe(const CommGroup& g) {
  const std::string library = g.library.empty() || g.library == "nccl" ? "" : g.library + " ";
  return fmt::format("{}{} {} group {}", library, g.collective.empty() ? "collective unknown" : g.collective,
                     g.bytes ? std::to_string(*g.bytes) + " B" : std::string("size unknown"),
                     g.group_size ? std::to_string(*g.group_size) : std::string("unknown"));
}

int dtype_bytes(const std::string& dtype) {
  const std::string d = lowercase(dtype);
  static const std::pair<const char*, int> kTypes[] = {
      {"float", 4},    {"float32", 4},  {"double", 8},  {"float64", 8},   {"half", 2},      {"float16", 2},
      {"bfloat16", 2}, {"int", 4},      {"int32", 4},   {"long", 8},      {"int64", 8},     {"short", 2},
      {"int16", 2},    {"char", 1},     {"int8", 1},    {"byte", 1},      {"uint8", 1},     {"bool", 1},
      {"float8_e4m3fn", 1}, {"float8_e5m2", 1}, {"float8_e4m3fnuz", 1}, {"float8_e5m2fnuz", 1},
      {"complexfloat", 8},  {"complexdouble", 16}};
  for (const auto& [name, bytes] : kTypes)
    if (d == name) return bytes;
  return 0;
}

std::string describe(const ShapedGroup& g) {
  const ShapedOp& s = g.shape;
  if (s.batch > 0)
    return fmt::format("attention {} {}x{}x{}x{}x{}{} {}", s.backward ? "bwd" : "fwd", s.batch, s.heads, s.seq_q, s.seq_kv,
                       s.head_dim, s.causal ? " causal" : "", g.dtype);
  return fmt::format("memory {} B {}", s.bytes, g.dtype);
}

OverlapFigures measure(const std::vector<const GpuActivity*>& activities) {
  struct Device {
    std::vector<Interval> compute, comm, memory;
    std::int64_t first = 0, last = 0;
    bool any = false;
  };
  std::map<std::int32_t, Device> devices;  // ordered: sums in a fixed order
  OverlapFigures f;
  for (const GpuActivity* a : activities) {
    Device& d = devices[a->device];
    const Interval iv{a->start_ns, a->end_ns};
    switch (a->cls) {
      case ActivityClass::compute: d.compute.push_back(iv); ++f.kernels; break;
      case ActivityClass::communication: d.comm.push_back(iv); ++f.kernels; break;
      case ActivityClass::memory: d.memory.push_back(iv); break;
    }
    if (!d.any || a->start_ns < d.first) d.first = a->start_ns;
    if (!d.any || a->end_ns > d.last) d.last = a->end_ns;
    d.any = true;
  }
  for (auto& [id, d] : devices) {
    merge(d.compute);
    merge(d.comm);
    merge(d.memory);
    // One GPU's figures are lengths of unions of intervals in [0, 2^62): each below 2^62.
    OverlapFigures one;
    one.comm_ns = length(d.comm);
    one.compute_ns = length(d.compute);
    one.exposed_ns = one.comm_ns - intersection(d.comm, d.compute);
    one.memory_ns = length(d.memory);
    one.span_ns = d.last - d.first;
    f += one;
  }
  return f;
}

namespace {

// An activity belongs to the step during which the CPU launched it (its launch's time
// through the correlation id; its own start when the launch was not recorded), so a kernel that
// runs after its step's CPU range ended (the GPU lags the CPU) still counts for that step.
std::vector<StepFigures> step_figures(const RankTrace& trace, const std::vector<const GpuActivity*>& all) {
  std::vector<StepRange> steps = trace.steps;
  std::sort(steps.begin(), steps.end(),
            [](const StepRange& a, const StepRange& b) { return std::tie(a.start_ns, a.end_ns, a.name) < std::tie(b.start_ns, b.end_ns, b.name); });
  auto launches = trace.launches;
  std::sort(launches.begin(), launches.end());
  std::vector<std::vector<const GpuActivity*>> members(steps.size());
  for (const GpuActivity* a : all) {
    std::int64_t when = a->start_ns;
    if (a->correlation >= 0) {
      const auto it = std::lower_bound(launches.begin(), launches.end(), std::make_pair(a->correlation, std::int64_t{INT64_MIN}));
      if (it != launches.end() && it->first == a->correlation) when = it->second;
    }
    // The last step starting at or before `when` that has not ended by then.
    auto it = std::upper_bound(steps.begin(), steps.end(), when,
                               [](std::int64_t t, const StepRange& s) { return t < s.start_ns; });
    if (it == steps.begin()) continue;
    --it;
    if (when < it->end_ns) members[static_cast<std::size_t>(it - steps.begin())].push_back(a);
  }
  std::vector<StepFigures> out;
  for (std::size_t i = 0; i < steps.size(); ++i) out.push_back({steps[i].name, measure(members[i])});
  return out;
}

// A communication kernel's group: its collective (and message, when its op is linked) as known.
CommGroup comm_group_of(const RankTrace& trace, const GpuActivity& a) {
  const std::string& kernel = trace.names[a.name];
  CommGroup g;
  g.kernel = kernel;
  g.library = library_name(a.library);
  // NCCL names the collective in the kernel's name; another library's kernel is its own
  // operation (DeepEP's dispatch, combine, notify_dispatch), a copy a peer copy.
  g.collective = a.library == CommLibrary::nccl        ? collective_from_kernel_name(kernel)
                 : a.library == CommLibrary::peer_copy ? std::string("copy")
                                                       : kernel_own_name(kernel).identifier;
  if (a.link != OpLink::comm) return g;
  const CommOp& op = trace.comm_ops[static_cast<std::size_t>(a.op)];
  const std::string& named = trace.names[op.collective];
  if (!named.empty()) {
    const std::string c = collective_from_kernel_name(named);
    g.collective = c.empty() ? named : c;
  }
  if (op.in_nelems >= 0 || op.out_nelems >= 0) g.nelems = std::max(op.in_nelems, op.out_nelems);
  if (op.group_size >= 0) g.group_size = op.group_size;
  g.dtype = trace.names[op.dtype];
  g.process_group = trace.names[op.process_group];
  // A count whose bytes leave int64 (9e18 elements) is a size unknown, never a wrapped negative one.
  if (std::int64_t b = 0; g.nelems && dtype_bytes(g.dtype) > 0 && !__builtin_mul_overflow(*g.nelems, dtype_bytes(g.dtype), &b))
    g.bytes = b;
  return g;
}

// A GEMM, collective or shaped group as a line of the whole listing.
template <class Group>
KernelGroup kernel_group_of(const Group& g, ActivityClass cls, const char* kind) {
  KernelGroup k;
  k.kernel = g.kernel;
  k.cls = cls;
  k.kind = kind;
  k.what = describe(g);
  k.count = g.count;
  k.total_ns = g.total_ns;
  const auto [lo, hi] = std::minmax_element(g.durations_ns.begin(), g.durations_ns.end());
  k.min_ns = *lo;
  k.max_ns = *hi;
  return k;
}

// Kernel listings, grouped by what is known of each kernel (longest total first): each activity
// noted in its group, then the groups written into the report.
class KernelListing {
 public:
  KernelListing(const RankTrace& trace, RankReport& r) : trace_(trace), r_(r), kernels_of_(trace.shaped_ops.size(), 0) {
    for (const GpuActivity& a : trace.activities)
      if (a.link == OpLink::shaped) ++kernels_of_[static_cast<std::size_t>(a.op)];
  }

  void note_all() {
    for (std::size_t ai = 0; ai < trace_.activities.size(); ++ai) {
      const GpuActivity& a = trace_.activities[ai];
      const std::int64_t dur = a.end_ns - a.start_ns;
      // Only the GEMM kernel carries its op's shape (see analyze() in the header).
      const bool via_op = a.link == OpLink::gemm && a.kind == KernelKind::unknown;
      if (a.cls == ActivityClass::memory) note_other(a, dur);
      else if (a.cls == ActivityClass::communication) note_comm(ai, a, dur);
      else if (a.kind != KernelKind::gemm && !via_op) note_other(a, dur);
      else note_gemm(a, dur);
    }
  }

  void write() {
    for (auto& [k, g] : gemms_) r_.gemms.push_back(std::move(g));
    for (auto& [k, g] : shaped_) r_.shaped.push_back(std::move(g));
    std::stable_sort(r_.shaped.begin(), r_.shaped.end(), [](const ShapedGroup& a, const ShapedGroup& b) { return a.total_ns > b.total_ns; });
    // Longest total first; the map's key order breaks ties (stable), so the listing is deterministic.
    std::stable_sort(r_.gemms.begin(), r_.gemms.end(), [](const GemmGroup& a, const GemmGroup& b) { return a.total_ns > b.total_ns; });
    write_comms();
    for (const GemmGroup& g : r_.gemms) r_.kernels.push_back(kernel_group_of(g, ActivityClass::compute, "gemm"));
    for (const CommGroup& g : r_.comms) {
      r_.kernels.push_back(kernel_group_of(g, ActivityClass::communication, kind_name(KernelKind::communication)));
      r_.kernels.back().library = g.library;
    }
    for (auto& [k, g] : others_) r_.kernels.push_back(std::move(g));
    std::stable_sort(r_.kernels.begin(), r_.kernels.end(),
                     [](const KernelGroup& a, const KernelGroup& b) { return a.total_ns > b.total_ns; });
  }

 private:
  using GemmKey = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string, bool>;
  using CommKey = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t, std::string, std::string>;
  using ShapedKey = std::tuple<std::uint32_t, std::uint32_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                               std::int64_t, std::int64_t, bool, bool, std::uint32_t>;

  std::int64_t add_total(std::int64_t total, std::int64_t dur) const {
    return add_ns(total, dur, trace_.file, "a kernel group's total time");
  }

  void note_shaped(const GpuActivity& a, std::int64_t dur) {
    const ShapedOp& op = trace_.shaped_ops[static_cast<std::size_t>(a.op)];
    const ShapedKey key{a.name, op.name, op.bytes, op.batch, op.heads, op.seq_q, op.seq_kv, op.head_dim, op.causal, op.backward, op.dtype};
    auto [it, fresh] = shaped_.try_emplace(key);
    ShapedGroup& g = it->second;
    if (fresh) {
      g.kernel = trace_.names[a.name];
      g.op = trace_.names[op.name];
      g.kind = kind_name(a.kind);
      g.dtype = trace_.names[op.dtype];
      g.shape = op;
    }
    ++g.count;
    g.total_ns = add_total(g.total_ns, dur);
  }

  void note_other(const GpuActivity& a, std::int64_t dur) {
    if (a.link == OpLink::shaped && kernels_of_[static_cast<std::size_t>(a.op)] == 1) note_shaped(a, dur);
    auto [it, fresh] = others_.try_emplace({a.name, a.cls});
    KernelGroup& k = it->second;
    if (fresh) {
      k.kernel = trace_.names[a.name];
      k.cls = a.cls;
      k.kind = kind_name(a.kind);
      k.min_ns = k.max_ns = dur;
    }
    ++k.count;
    k.total_ns = add_total(k.total_ns, dur);
    k.min_ns = std::min(k.min_ns, dur);
    k.max_ns = std::max(k.max_ns, dur);
  }

  void note_comm(std::size_t ai, const GpuActivity& a, std::int64_t dur) {
    ++r_.comm_kernels;
    const CommGroup g = comm_group_of(trace_, a);
    if (!g.bytes) ++r_.comm_size_unknown;
    const CommKey key{g.kernel, g.collective, g.nelems.value_or(-1), g.bytes.value_or(-1), g.group_size.value_or(-1),
                      g.dtype, g.process_group};
    auto [it, fresh] = comms_.try_emplace(key, g, static_cast<std::int32_t>(comms_.size()));
    ++it->second.first.count;
    it->second.first.total_ns = add_total(it->second.first.total_ns, dur);
    it->second.first.durations_ns.push_back(dur);
    if (a.library != CommLibrary::peer_copy) sequence_.emplace_back(ai, it->second.second);
  }

  void note_gemm(const GpuActivity& a, std::int64_t dur) {
    ++r_.gemm_kernels;
    GemmGroup g;
    g.kernel = trace_.names[a.name];
    if (a.link == OpLink::gemm) {
      const GemmOp& op = trace_.gemm_ops[static_cast<std::size_t>(a.op)];
      g.op = trace_.names[op.name];
      if (op.batch > 0) g.shape = GemmShape{op.batch, op.m, op.n, op.k, trace_.names[op.dtype]};
    }
    if (!g.shape) ++r_.gemm_shape_unknown;
    const GemmShape s = g.shape.value_or(GemmShape{0, 0, 0, 0, ""});
    const GemmKey key{g.kernel, g.op, s.batch, s.m, s.n, s.k, s.dtype, g.shape.has_value()};
    auto [it, fresh] = gemms_.try_emplace(key, g);
    ++it->second.count;
    it->second.total_ns = add_total(it->second.total_ns, dur);
    it->second.durations_ns.push_back(dur);
  }

  // The collective groups, longest total first, and the communication kernels in the order they ran.
  void write_comms() {
    std::vector<std::pair<CommGroup, std::int32_t>> ordered;
    for (auto& [k, g] : comms_) ordered.push_back(std::move(g));
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& b) { return a.first.total_ns > b.first.total_ns; });
    std::vector<std::int32_t> index_of(ordered.size());  // creation order -> index in r.comms
    for (std::size_t i = 0; i < ordered.size(); ++i) {
      index_of[static_cast<std::size_t>(ordered[i].second)] = static_cast<std::int32_t>(i);
      r_.comms.push_back(std::move(ordered[i].first));
    }
    for (const auto& [ai, created] : sequence_) {
      const GpuActivity& a = trace_.activities[ai];
      r_.comm_sequence.push_back({a.start_ns, a.end_ns, index_of[static_cast<std::size_t>(created)], static_cast<std::int32_t>(ai)});
    }
    std::stable_sort(r_.comm_sequence.begin(), r_.comm_sequence.end(),
                     [](const CommKernel& a, const CommKernel& b) { return std::tie(a.start_ns, a.end_ns) < std::tie(b.start_ns, b.end_ns); });
  }

  const RankTrace& trace_;
  RankReport& r_;
  // Kernels per shaped op: an op that launched several (cub's init and scan kernels of a sort, the
  // three kernels of FlashAttention-2's backward) is priced as one by the model, so none of its
  // kernels is priced alone; they count as kernels without shapes.
  std::vector<std::int32_t> kernels_of_;
  std::map<GemmKey, GemmGroup> gemms_;
  std::map<CommKey, std::pair<CommGroup, std::int32_t>> comms_;  // group, order of creation
  std::vector<std::pair<std::size_t, std::int32_t>> sequence_;   // (activity index, comm group's creation order)
  // Kernels that are neither GEMM nor communication, and copies: by name (and class).
  std::map<std::pair<std::uint32_t, ActivityClass>, KernelGroup> others_;
  std::map<ShapedKey, ShapedGroup> shaped_;
};

void list_kernels(const RankTrace& trace, RankReport& r) {
  KernelListing listing(trace, r);
  listing.note_all();
  listing.write();
}

}  // namespace

RankReport analyze(const RankTrace& trace) {
  RankReport r;
  r.file = trace.file;
  r.format = trace.format;
  r.part = trace.part;
  r.skipped = trace.skipped;
  std::vector<const GpuActivity*> all;
  all.reserve(trace.activities.size());
  for (const GpuActivity& a : trace.activities) all.push_back(&a);
  try {
    r.figures = measure(all);
    if (!trace.steps.empty()) r.steps = step_figures(trace, all);
  } catch (const InputError& e) {
    // A sum past int64 (OverlapFigures::operator+=): name the file it came from.
    if (!e.file().empty()) throw;
    throw InputError(trace.file, 0, e.key_path(), e.message());
  }
  list_kernels(trace, r);
  return r;
}

}  // namespace overlap::traces
