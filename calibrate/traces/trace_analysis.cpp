// Overlap figures and kernel listings of a trace (calibrate/traces/trace_analysis.hpp).
#include "calibrate/traces/trace_analysis.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace overlap::traces {

std::optional<double> OverlapFigures::overlap() const {
  if (comm_ns <= 0) return std::nullopt;
  return 1.0 - static_cast<double>(exposed_ns) / static_cast<double>(comm_ns);
}

OverlapFigures& OverlapFigures::operator+=(const OverlapFigures& o) {
  compute_ns += o.compute_ns;
  comm_ns += o.comm_ns;
  exposed_ns += o.exposed_ns;
  memory_ns += o.memory_ns;
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

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

int dtype_bytes(const std::string& dtype) {
  const std::string d = lower(dtype);
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
    const std::int64_t comm = length(d.comm);
    f.compute_ns += length(d.compute);
    f.comm_ns += comm;
    f.exposed_ns += comm - intersection(d.comm, d.compute);
    f.memory_ns += length(d.memory);
    f.span_ns = std::max(f.span_ns, d.last - d.first);
  }
  return f;
}

std::optional<GemmShape> gemm_shape(const OpInfo& op) {
  const auto& d = op.input_dims;
  const auto type_of = [&](std::size_t i) { return i < op.input_types.size() ? op.input_types[i] : std::string(); };
  GemmShape s;
  // A [M,K] x B [K,N], operands at positions a and b.
  const auto two_d = [&](std::size_t a, std::size_t b) -> std::optional<GemmShape> {
    if (d.size() <= std::max(a, b) || d[a].size() != 2 || d[b].size() != 2 || d[a][1] != d[b][0]) return std::nullopt;
    s.m = d[a][0];
    s.k = d[a][1];
    s.n = d[b][1];
    s.dtype = type_of(a);
    return s;
  };
  const auto batched = [&](std::size_t a, std::size_t b) -> std::optional<GemmShape> {
    if (d.size() <= std::max(a, b) || d[a].size() != 3 || d[b].size() != 3 || d[a][0] != d[b][0] || d[a][2] != d[b][1])
      return std::nullopt;
    s.batch = d[a][0];
    s.m = d[a][1];
    s.k = d[a][2];
    s.n = d[b][2];
    s.dtype = type_of(a);
    return s;
  };
  std::optional<GemmShape> out;
  if (op.name == "aten::mm" || op.name == "aten::_scaled_mm") out = two_d(0, 1);
  else if (op.name == "aten::addmm") out = two_d(1, 2);
  else if (op.name == "aten::bmm") out = batched(0, 1);
  else if (op.name == "aten::baddbmm") out = batched(1, 2);
  else if (op.name == "aten::linear" || op.name == "aten::matmul") {
    // linear: input [..., K] and weight [N, K]; matmul: [..., K] x [K, N], or batched 3-D x 3-D.
    if (d.size() >= 2 && !d[0].empty() && d[1].size() == 2) {
      const bool linear = op.name == "aten::linear";
      const std::int64_t k = d[0].back();
      const std::int64_t wk = linear ? d[1][1] : d[1][0];
      if (k == wk) {
        s.m = 1;
        for (std::size_t i = 0; i + 1 < d[0].size(); ++i) s.m *= d[0][i];
        s.k = k;
        s.n = linear ? d[1][0] : d[1][1];
        s.dtype = type_of(0);
        out = s;
      }
    } else if (op.name == "aten::matmul") {
      out = batched(0, 1);
    }
  } else if (op.name == "aten::mv" || op.name == "aten::addmv") {
    const std::size_t a = op.name == "aten::mv" ? 0 : 1;
    if (d.size() > a + 1 && d[a].size() == 2 && d[a + 1].size() == 1 && d[a][1] == d[a + 1][0]) {
      s.m = d[a][0];
      s.k = d[a][1];
      s.n = 1;
      s.dtype = type_of(a);
      out = s;
    }
  }
  if (out && (out->m <= 0 || out->n <= 0 || out->k <= 0 || out->batch <= 0)) return std::nullopt;
  return out;
}

RankReport analyze(const RankTrace& trace) {
  RankReport r;
  r.file = trace.file;
  r.format = trace.format;
  std::vector<const GpuActivity*> all;
  all.reserve(trace.activities.size());
  for (const GpuActivity& a : trace.activities) all.push_back(&a);
  r.figures = measure(all);

  // Steps: an activity belongs to the step during which the CPU launched it (its launch's time
  // through the correlation id; its own start when the launch was not recorded), so a kernel that
  // runs after its step's CPU range ended (the GPU lags the CPU) still counts for that step.
  if (!trace.steps.empty()) {
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
    for (std::size_t i = 0; i < steps.size(); ++i) r.steps.push_back({steps[i].name, measure(members[i])});
  }

  // Kernel listings, grouped by what is known of each kernel.
  using GemmKey = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string, bool>;
  std::map<GemmKey, GemmGroup> gemms;
  using CommKey = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t, std::string, std::string>;
  std::map<CommKey, CommGroup> comms;
  for (const GpuActivity& a : trace.activities) {
    if (a.cls == ActivityClass::memory) continue;
    const std::string& kernel = trace.names[a.name];
    const OpInfo* op = nullptr;
    if (a.op >= 0) op = &trace.ops[static_cast<std::size_t>(a.op)];
    else if (a.external_id >= 0) {
      const auto it = trace.op_by_external_id.find(a.external_id);
      if (it != trace.op_by_external_id.end()) op = &trace.ops[static_cast<std::size_t>(it->second)];
    }
    const std::int64_t dur = a.end_ns - a.start_ns;
    if (a.cls == ActivityClass::communication) {
      ++r.comm_kernels;
      CommGroup g;
      g.kernel = kernel;
      g.collective = collective_from_kernel_name(kernel);
      if (op && (!op->collective.empty() || op->in_nelems || op->out_nelems)) {
        if (!op->collective.empty()) {
          const std::string c = collective_from_kernel_name(op->collective);
          g.collective = c.empty() ? op->collective : c;
        }
        if (op->in_nelems || op->out_nelems) g.nelems = std::max(op->in_nelems.value_or(0), op->out_nelems.value_or(0));
        g.group_size = op->group_size;
        g.dtype = op->dtype;
        g.process_group = op->process_group;
        if (g.nelems && dtype_bytes(g.dtype) > 0) g.bytes = *g.nelems * dtype_bytes(g.dtype);
      }
      if (!g.bytes) ++r.comm_size_unknown;
      const CommKey key{g.kernel, g.collective, g.nelems.value_or(-1), g.bytes.value_or(-1), g.group_size.value_or(-1),
                        g.dtype, g.process_group};
      auto [it, fresh] = comms.try_emplace(key, g);
      ++it->second.count;
      it->second.total_ns += dur;
      continue;
    }
    // A kernel launched by a matmul op (aten::mm, ...) is a GEMM whatever its library named it.
    const bool gemm_op = op && op->collective.empty() && !op->in_nelems && !op->out_nelems && !op->input_dims.empty();
    if (!is_gemm_kernel(kernel) && !gemm_op) continue;
    ++r.gemm_kernels;
    GemmGroup g;
    g.kernel = kernel;
    if (op) {
      g.op = op->name;
      g.shape = gemm_shape(*op);
    }
    if (!g.shape) ++r.gemm_shape_unknown;
    const GemmShape s = g.shape.value_or(GemmShape{0, 0, 0, 0, ""});
    const GemmKey key{g.kernel, g.op, s.batch, s.m, s.n, s.k, s.dtype, g.shape.has_value()};
    auto [it, fresh] = gemms.try_emplace(key, g);
    ++it->second.count;
    it->second.total_ns += dur;
  }
  for (auto& [k, g] : gemms) r.gemms.push_back(std::move(g));
  for (auto& [k, g] : comms) r.comms.push_back(std::move(g));
  // Longest total first; the map's key order breaks ties (stable), so the listing is deterministic.
  std::stable_sort(r.gemms.begin(), r.gemms.end(), [](const GemmGroup& a, const GemmGroup& b) { return a.total_ns > b.total_ns; });
  std::stable_sort(r.comms.begin(), r.comms.end(), [](const CommGroup& a, const CommGroup& b) { return a.total_ns > b.total_ns; });
  return r;
}

}  // namespace overlap::traces
