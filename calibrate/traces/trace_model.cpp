// Kernel classification and format dispatch for calibrate/traces/trace_model.hpp.
#include "calibrate/traces/trace_model.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "calibrate/traces/kineto_reader.hpp"
#include "calibrate/traces/nsys_reader.hpp"
#include "calibrate/traces/trace_limits.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/text.hpp"

namespace overlap::traces {

std::uint32_t NameTable::intern(const std::string& name) {
  const auto it = index_.find(name);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.push_back(name);
  index_.emplace(name, id);
  return id;
}

namespace {

bool contains(const std::string& haystack, const char* needle) { return haystack.find(needle) != std::string::npos; }

}  // namespace

ActivityClass activity_class(const KernelFamily& family) {
  switch (family.kind) {
    case KernelKind::communication: return ActivityClass::communication;
    case KernelKind::copy: return ActivityClass::memory;
    default: return ActivityClass::compute;
  }
}

std::string collective_from_kernel_name(const std::string& name) {
  std::string n = lowercase(name);
  n.erase(std::remove(n.begin(), n.end(), '_'), n.end());
  // Longest names first: "reducescatter" contains "reduce", "allreduce" contains "reduce".
  static const std::pair<const char*, const char*> kNames[] = {
      {"allreduce", "all_reduce"}, {"reducescatter", "reduce_scatter"}, {"allgather", "all_gather"},
      {"alltoall", "all_to_all"},  {"sendrecv", "send_recv"},           {"broadcast", "broadcast"},
      {"reduce", "reduce"},        {"send", "send"},                    {"recv", "recv"}};
  for (const auto& [word, canonical] : kNames)
    if (contains(n, word)) return canonical;
  return "";
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
        // Rows: the product of the leading dims (bounded, so a corrupt dim cannot overflow it).
        s.m = 1;
        for (std::size_t i = 0; i + 1 < d[0].size(); ++i) {
          if (d[0][i] <= 0 || s.m > (std::int64_t{1} << 40) / d[0][i]) return std::nullopt;
          s.m *= d[0][i];
        }
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

void skip_event(RankTrace& trace, bool strict, const std::string& what, const std::string& why, const std::string& key) {
  if (strict)
    throw InputError(trace.file, 0, key,
                     what + ": " + why + " (--strict refuses a trace with an event it cannot read as written)");
  ++trace.skipped[what + ": " + why];
}

RankTrace read_trace(const std::string& path, const std::string& step_prefix, const KernelClassifier& kernels, bool strict) {
  std::vector<RankTrace> all = read_traces(path, step_prefix, kernels, strict);
  if (all.size() != 1)
    throw InputError(path, 0, "CUPTI_ACTIVITY_KIND_KERNEL.globalPid",
                     std::to_string(all.size()) + " processes in one export: read it with read_traces");
  return std::move(all.front());
}

std::vector<RankTrace> read_traces(const std::string& path, const std::string& step_prefix,
                                   const KernelClassifier& kernels, bool strict) {
  std::FILE* f = open_trace_file(path);  // a regular file within the caps, or refused before reading
  unsigned char head[16] = {};
  const std::size_t got = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (got == 0) throw InputError(path, 0, "", "empty file: not a Kineto JSON trace nor an Nsight Systems SQLite export");
  const auto one = [&] {
    std::vector<RankTrace> v;
    v.push_back(read_kineto_json(path, step_prefix, kernels, strict));
    return v;
  };
  if (got >= 16 && std::memcmp(head, "SQLite format 3", 16) == 0) return read_nsys_sqlite(path, step_prefix, kernels, strict);
  if (got >= 2 && head[0] == 0x1f && head[1] == 0x8b) return one();
  std::size_t i = 0;
  while (i < got && std::isspace(head[i])) ++i;
  if (i < got && head[i] == '{') return one();
  if (i == got) return one();  // leading whitespace only: the reader says more
  const std::string ext = path.size() > 9 ? path.substr(path.size() - 9) : "";
  if (ext == ".nsys-rep" || (path.size() > 6 && path.substr(path.size() - 6) == ".qdrep"))
    throw InputError(path, 0, "", "an Nsight Systems report, not its export: run `nsys export --type sqlite` on it and "
                                  "give the .sqlite file");
  throw InputError(path, 0, "", "not a trace: neither a Kineto JSON trace (plain or gzip; a JSON object with "
                                "traceEvents) nor an Nsight Systems SQLite export");
}

}  // namespace overlap::traces
