// Nsight Systems SQLite reader (calibrate/traces/nsys_reader.hpp).
#include "calibrate/traces/nsys_reader.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "calibrate/traces/op_link.hpp"
#include "cost_model/input_error.hpp"

namespace overlap::traces {
namespace {

class Db {
 public:
  explicit Db(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      throw InputError(path, 0, "", "cannot open as SQLite: " + msg);
    }
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> out;
    query("PRAGMA table_info(" + table + ")", [&](sqlite3_stmt* s) {
      const unsigned char* name = sqlite3_column_text(s, 1);
      if (name) out.insert(reinterpret_cast<const char*>(name));
    });
    return out;
  }

  template <class Row>
  void query(const std::string& sql, Row&& row) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
      throw InputError(path_, 0, "", fmt::format("not a readable Nsight Systems export ({})", sqlite3_errmsg(db_)));
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) row(stmt);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE)
      throw InputError(path_, 0, "", fmt::format("reading the SQLite file failed ({})", sqlite3_errmsg(db_)));
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

void require(const std::string& path, const std::set<std::string>& have, const std::string& table,
             std::initializer_list<const char*> cols) {
  for (const char* c : cols)
    if (!have.count(c))
      throw InputError(path, 0, table + "." + c, "column missing from the Nsight Systems export");
}

std::string text_of(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? reinterpret_cast<const char*>(t) : "";
}


// "aten::mm, seq = 12, op_id = 3, sizes = [[4096, 8192], [8192, 2048]], input_op_ids = [...]": the
// range PyTorch's NVTX profiler (torch.autograd.profiler.emit_nvtx(record_shapes=True)) pushes for
// an op (torch/csrc/profiler getNvtxStr: the name, ", seq = N" when the op has a sequence number,
// ", op_id = N" in newer versions, ", sizes = " + the inputs' sizes, [] for a non-tensor input).
// Returns the op with its input dims; no sizes: the op without dims.
OpInfo parse_pytorch_nvtx(const std::string& text) {
  OpInfo op;
  op.name = text.substr(0, text.find(", "));
  const std::string mark = ", sizes = [";
  const std::size_t at = text.find(mark);
  if (at == std::string::npos) return op;
  std::size_t i = at + mark.size();
  std::vector<std::vector<std::int64_t>> dims;
  const auto fail = [&] { return OpInfo{op.name, {}, {}, "", {}, {}, {}, "", ""}; };
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i < text.size() && text[i] == ']') {
      op.input_dims = std::move(dims);
      return op;
    }
    if (i >= text.size() || text[i] != '[') return fail();
    ++i;
    std::vector<std::int64_t> d;
    while (i < text.size() && text[i] != ']') {
      while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
      if (i < text.size() && text[i] == ']') break;
      std::size_t used = 0;
      try {
        d.push_back(std::stoll(text.substr(i, 24), &used));
      } catch (const std::exception&) {
        return fail();
      }
      i += used;
    }
    if (i >= text.size()) return fail();
    ++i;  // ']'
    dims.push_back(std::move(d));
  }
  return fail();
}

// The operand type cuBLAS / CUTLASS write into a GEMM kernel's name (sm90_xmma_gemm_bf16bf16_...,
// ..._f16_s161616gemm_f16_..., ..._e4m3..., ampere_sgemm_...), as PyTorch names the dtype; "" when
// the name says none or more than one. An NVTX range has sizes but no dtypes.
std::string dtype_from_kernel_name(const std::string& kernel) {
  std::string n = kernel;
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool bf16 = n.find("bf16") != std::string::npos;
  const bool fp8 = n.find("e4m3") != std::string::npos || n.find("e5m2") != std::string::npos;
  std::string rest = n;
  for (std::size_t p; (p = rest.find("bf16")) != std::string::npos;) rest.erase(p, 4);
  const bool f16 = rest.find("f16") != std::string::npos || rest.find("half") != std::string::npos;
  const bool f32 = n.find("sgemm") != std::string::npos || n.find("tf32") != std::string::npos;
  const int kinds = int(bf16) + int(fp8) + int(f16) + int(f32);
  if (kinds != 1) return "";
  return bf16 ? "BFloat16" : fp8 ? "Float8_e4m3fn" : f16 ? "Half" : "Float";
}

}  // namespace

std::vector<RankTrace> read_nsys_sqlite(const std::string& path, const std::string& step_prefix,
                                        const KernelClassifier& kernels) {
  Db db(path);
  const auto string_cols = db.columns("StringIds");
  const auto kernel_cols = db.columns("CUPTI_ACTIVITY_KIND_KERNEL");
  if (kernel_cols.empty())
    throw InputError(path, 0, "CUPTI_ACTIVITY_KIND_KERNEL",
                     "no GPU kernels: the export has no CUPTI_ACTIVITY_KIND_KERNEL table (record with nsys profile "
                     "--trace=cuda,nvtx)");
  if (string_cols.empty()) throw InputError(path, 0, "StringIds", "table missing from the Nsight Systems export");
  require(path, string_cols, "StringIds", {"id", "value"});
  require(path, kernel_cols, "CUPTI_ACTIVITY_KIND_KERNEL", {"start", "end", "deviceId", "correlationId"});
  // The demangled name: the short one is only the function's base name ("Kernel2" for a CUTLASS
  // template), too little to tell a GEMM from other kernels.
  const char* name_col = kernel_cols.count("demangledName") ? "demangledName"
                         : kernel_cols.count("shortName")   ? "shortName"
                                                            : nullptr;
  if (!name_col)
    throw InputError(path, 0, "CUPTI_ACTIVITY_KIND_KERNEL.demangledName", "column missing (nor shortName)");

  // One rank per process: globalPid (kernels, copies) and globalTid (runtime calls, NVTX ranges)
  // carry the process id above their low 24 bits (the export documentation's "globalTid / 0x1000000
  // % 0x1000000 = PID"); CUDA correlation ids are unique only within a process.
  const bool by_process = kernel_cols.count("globalPid") > 0;
  const auto process_of = [](sqlite3_stmt* s, int col) -> std::int64_t {
    return sqlite3_column_type(s, col) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, col) / 0x1000000;
  };
  struct Part {
    RankTrace trace;
    std::unique_ptr<NameTable> names;
    std::int32_t first_device = INT32_MAX;
    std::set<std::int32_t> devices;
  };
  std::map<std::int64_t, Part> parts;  // process key (-1: not recorded)
  const auto part = [&](std::int64_t process) -> Part& {
    auto [it, fresh] = parts.try_emplace(process);
    if (fresh) {
      it->second.trace.file = path;
      it->second.trace.format = "nsys";
      it->second.names = std::make_unique<NameTable>(it->second.trace.names);
    }
    return it->second;
  };
  db.query(fmt::format("SELECT k.start, k.end, k.deviceId, k.correlationId, s.value, {} FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                       "LEFT JOIN StringIds s ON s.id = k.{} ORDER BY k.start, k.end, k.deviceId, k.correlationId",
                       by_process ? "k.globalPid" : "NULL", name_col),
           [&](sqlite3_stmt* s) {
             GpuActivity a;
             a.start_ns = sqlite3_column_int64(s, 0);
             a.end_ns = sqlite3_column_int64(s, 1);
             a.device = sqlite3_column_int(s, 2);
             a.correlation = sqlite3_column_int64(s, 3);
             const std::string name = text_of(s, 4);
             if (a.end_ns < a.start_ns) return;
             Part& p = part(process_of(s, 5));
             a.name = p.names->intern(name.empty() ? "(unnamed kernel)" : name);
             const KernelFamily family = kernels.classify(name);
             a.kind = family.kind;
             a.library = family.library;
             a.cls = activity_class(family);
             p.trace.activities.push_back(a);
             p.first_device = std::min(p.first_device, a.device);
             p.devices.insert(a.device);
           });
  if (parts.empty()) throw InputError(path, 0, "CUPTI_ACTIVITY_KIND_KERNEL", "no GPU kernels: the table is empty");
  // Rows of a process that launched no kernel go nowhere (it is no rank).
  const auto known = [&](std::int64_t process) -> Part* {
    const auto it = parts.find(parts.size() == 1 ? parts.begin()->first : process);
    return it == parts.end() ? nullptr : &it->second;
  };
  for (const char* table : {"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    const auto cols = db.columns(table);
    if (cols.empty()) continue;
    require(path, cols, table, {"start", "end", "deviceId"});
    const bool memcpy = std::string(table) == "CUPTI_ACTIVITY_KIND_MEMCPY";
    // copyKind 10 is CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: a copy between two GPUs, communication.
    const bool kinds = memcpy && cols.count("copyKind");
    db.query(fmt::format("SELECT start, end, deviceId, {}, {} FROM {} ORDER BY start, end, deviceId",
                         cols.count("globalPid") ? "globalPid" : "NULL", kinds ? "copyKind" : "NULL", table),
             [&](sqlite3_stmt* s) {
               Part* p = known(process_of(s, 3));
               if (!p) return;
               GpuActivity a;
               a.start_ns = sqlite3_column_int64(s, 0);
               a.end_ns = sqlite3_column_int64(s, 1);
               a.device = sqlite3_column_int(s, 2);
               const bool peer = kinds && sqlite3_column_type(s, 4) != SQLITE_NULL && sqlite3_column_int(s, 4) == 10;
               const std::string label = !memcpy ? "[memset]" : peer ? "[memcpy PtoP]" : "[memcpy]";
               a.name = p->names->intern(label);
               const KernelFamily family = kernels.classify_copy(label);
               a.kind = family.kind;
               a.library = family.library;
               a.cls = activity_class(family);
               if (a.end_ns >= a.start_ns) p->trace.activities.push_back(a);
             });
  }
  const auto runtime_cols = db.columns("CUPTI_ACTIVITY_KIND_RUNTIME");
  if (runtime_cols.count("start") && runtime_cols.count("correlationId"))
    db.query(fmt::format("SELECT correlationId, start, {} FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                         runtime_cols.count("globalTid") ? "globalTid" : "NULL"),
             [&](sqlite3_stmt* s) {
               if (Part* p = known(process_of(s, 2)))
                 p->trace.launches.emplace_back(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1));
             });
  // NVTX ranges: steps (PREFIX<n>) and, for GEMM shapes, the ranges PyTorch's NVTX profiler pushes
  // per op. A kernel's op is the innermost range open on the launching thread when the launch
  // (CUPTI_ACTIVITY_KIND_RUNTIME, same globalTid) started; joined to the kernel through
  // correlationId, as the Kineto reader joins through External id.
  const auto nvtx_cols = db.columns("NVTX_EVENTS");
  const bool has_text = nvtx_cols.count("text") > 0, has_text_id = nvtx_cols.count("textId") > 0;
  const bool join_ops = nvtx_cols.count("globalTid") && runtime_cols.count("globalTid");
  // Per process: its threads' op ranges (op: index into the part's gemm_ops; -1: not a GEMM op).
  std::map<Part*, std::vector<OpRange>> ranges_by_part;
  if (nvtx_cols.count("start") && nvtx_cols.count("end") && (has_text || has_text_id)) {
    const std::string text = has_text && has_text_id ? "COALESCE(n.text, s.value)" : has_text ? "n.text" : "s.value";
    const std::string join = has_text_id ? " LEFT JOIN StringIds s ON s.id = n.textId" : "";
    db.query(fmt::format("SELECT n.start, n.end, {}, {} FROM NVTX_EVENTS n{} WHERE n.end > n.start ORDER BY n.start", text,
                         nvtx_cols.count("globalTid") ? "n.globalTid" : "NULL", join),
             [&](sqlite3_stmt* s) {
               Part* p = known(process_of(s, 3));
               if (!p) return;
               const std::string name = text_of(s, 2);
               const std::int64_t start = sqlite3_column_int64(s, 0), end = sqlite3_column_int64(s, 1);
               if (!step_prefix.empty() && name.compare(0, step_prefix.size(), step_prefix) == 0)
                 p->trace.steps.push_back({name, start, end});
               if (!join_ops || sqlite3_column_type(s, 3) == SQLITE_NULL) return;
               OpRange r{sqlite3_column_int64(s, 3), start, end, -1};
               if (name.find(", sizes = [") != std::string::npos) {
                 const OpInfo op = parse_pytorch_nvtx(name);
                 if (const auto shape = gemm_shape(op)) {
                   GemmOp g;
                   g.batch = shape->batch;
                   g.m = shape->m;
                   g.n = shape->n;
                   g.k = shape->k;
                   g.name = p->names->intern(op.name);
                   g.dtype = p->names->intern("");
                   r.op = static_cast<std::int32_t>(p->trace.gemm_ops.size());
                   p->trace.gemm_ops.push_back(g);
                 }
               }
               ranges_by_part[p].push_back(r);
             });
  }
  if (join_ops && !ranges_by_part.empty()) {
    // The innermost range open on the launching thread (calibrate/traces/op_link.hpp).
    std::map<Part*, std::vector<LaunchAt>> launches_by_part;
    db.query("SELECT start, correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid IS NOT NULL",
             [&](sqlite3_stmt* s) {
               const std::int64_t tid = sqlite3_column_int64(s, 2);
               if (Part* p = known(tid / 0x1000000))
                 launches_by_part[p].push_back({tid, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)});
             });
    for (auto& [p, ranges] : ranges_by_part) {
      auto it = launches_by_part.find(p);
      if (it == launches_by_part.end()) continue;
      p->trace.gemm_by_external_id = innermost_ops(std::move(ranges), std::move(it->second));
    }
    // The GEMM op of the launch with the kernel's correlation id; its dtype the one the kernel's
    // name says.
    for (auto& [process, p] : parts) {
      auto& index = p.trace.gemm_by_external_id;
      std::sort(index.begin(), index.end());
      for (GpuActivity& a : p.trace.activities) {
        if (a.cls != ActivityClass::compute || a.correlation < 0) continue;
        const auto at = std::lower_bound(index.begin(), index.end(), std::make_pair(a.correlation, std::int32_t{INT32_MIN}));
        if (at == index.end() || at->first != a.correlation) continue;
        a.op = at->second;
        a.link = OpLink::gemm;
        GemmOp& op = p.trace.gemm_ops[static_cast<std::size_t>(at->second)];
        if (p.trace.names[op.dtype].empty() && (a.kind == KernelKind::gemm || a.kind == KernelKind::unknown)) op.dtype = p.names->intern(dtype_from_kernel_name(p.trace.names[a.name]));
      }
    }
  }
  std::vector<Part*> order;
  for (auto& [process, p] : parts) order.push_back(&p);
  // Ranks in the order of the GPU each process used first (one process per GPU: its local rank).
  std::stable_sort(order.begin(), order.end(), [](const Part* a, const Part* b) { return a->first_device < b->first_device; });
  std::vector<RankTrace> out;
  for (Part* p : order) {
    if (parts.size() > 1) {
      std::string gpus;
      for (std::int32_t d : p->devices) gpus += (gpus.empty() ? "" : ",") + std::to_string(d);
      const std::int64_t process = [&] {
        for (auto& [k, v] : parts)
          if (&v == p) return k;
        return std::int64_t{-1};
      }();
      p->trace.part = fmt::format("pid {}, GPU{} {}", process % 0x1000000, p->devices.size() > 1 ? "s" : "", gpus);
    }
    out.push_back(std::move(p->trace));
  }
  return out;
}

}  // namespace overlap::traces
