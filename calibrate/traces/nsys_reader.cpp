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
#include "calibrate/traces/trace_limits.hpp"
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
    // The file is the user's, not ours: no SQL functions with side effects from its schema
    // (SQLite "Defense Against The Dark Arts", trusted_schema and defensive mode), and every query
    // bounded in virtual-machine steps (kMaxSqliteSteps, trace_limits.hpp).
    sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_progress_handler(db_, kSqliteStepGrain, &Db::on_progress, this);
    // No string or blob longer than a JSON token may be (kMaxJsonTokenBytes): a name is KiBs.
    sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, static_cast<int>(kMaxJsonTokenBytes));
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // The columns of `table` when the file has a real table of that name (sqlite_master type
  // 'table', not virtual); empty when it has none. A view, or a virtual table, named like an
  // export's table is refused: what it computes is the file's choice (a view over a recursive CTE
  // never ends).
  std::set<std::string> columns(const std::string& table) {
    std::string type, sql;
    query("SELECT type, COALESCE(sql, '') FROM sqlite_master WHERE name = '" + table + "' COLLATE NOCASE", [&](sqlite3_stmt* s) {
      type = text_of(s, 0);
      sql = text_of(s, 1);
    });
    if (type.empty()) return {};
    std::string head = sql.substr(0, 64);
    for (char& c : head) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (type != "table" || head.find("VIRTUAL") != std::string::npos)
      throw InputError(path_, 0, table,
                       fmt::format("is {} in this file, not a table: an Nsight Systems export's tables are plain tables; "
                                   "refused (its query is the file's own and may not end)",
                                   type == "table" ? "a virtual table" : "a " + type));
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
    steps_ = 0;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
      throw InputError(path_, 0, "", fmt::format("not a readable Nsight Systems export ({})", sqlite3_errmsg(db_)));
    // Finalized on every path out: a row callback may throw (a skipped row under --strict).
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> guard(stmt, sqlite3_finalize);
    int rc;
    std::int64_t rows = 0;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      if (++rows > kMaxTraceRows)
        throw InputError(path_, 0, "",
                         fmt::format("more than {} rows in one table: refused (docs/reference/limits.md)", kMaxTraceRows));
      row(stmt);
    }
    if (rc == SQLITE_INTERRUPT)
      throw InputError(path_, 0, "",
                       fmt::format("a query ran past {} SQLite steps: refused (docs/reference/limits.md)", kMaxSqliteSteps));
    if (rc != SQLITE_DONE)
      throw InputError(path_, 0, "", fmt::format("reading the SQLite file failed ({})", sqlite3_errmsg(db_)));
  }

 private:
  static int on_progress(void* self) {
    Db* db = static_cast<Db*>(self);
    db->steps_ += kSqliteStepGrain;
    return db->steps_ > kMaxSqliteSteps ? 1 : 0;
  }
  static std::string text_of(sqlite3_stmt* s, int col) {
    const unsigned char* t = sqlite3_column_text(s, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  std::int64_t steps_ = 0;
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

// An integer column as written: "" and the value, or why it cannot be used ("start not an integer").
// NULL reads as `null_value` when one is allowed.
const char* integer_of(sqlite3_stmt* s, int col, std::int64_t& v, std::optional<std::int64_t> null_value = std::nullopt) {
  switch (sqlite3_column_type(s, col)) {
    case SQLITE_INTEGER: v = sqlite3_column_int64(s, col); return "";
    case SQLITE_NULL:
      if (!null_value) return "missing (NULL)";
      v = *null_value;
      return "";
    default: return "not an integer";
  }
}

// A row's [start, end] times: integers, start in [0, kMaxTraceTimeNs), end from start to below
// kMaxTraceTimeNs. Returns why not ("" when they are), with the column it is about.
std::string interval_of(sqlite3_stmt* s, int start_col, int end_col, std::int64_t& start, std::int64_t& end,
                        std::string& column) {
  column = "start";
  if (const char* why = integer_of(s, start_col, start); *why) return fmt::format("start {}", why);
  if (start < 0 || start >= kMaxTraceTimeNs) return "start out of range";
  column = "end";
  if (const char* why = integer_of(s, end_col, end); *why) return fmt::format("end {}", why);
  if (end < start) return "end before start";
  if (end >= kMaxTraceTimeNs) return "end out of range";
  return "";
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
  const auto fail = [&] { return OpInfo{op.name, {}, {}, "", {}, {}, {}, "", "", {}}; };
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
                                        const KernelClassifier& kernels, bool strict) {
  check_trace_file(path);  // a regular file within the cap: SQLite would open a FIFO and block
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
  struct Part {
    RankTrace trace;
    std::unique_ptr<NameTable> names;
    std::int64_t process = -1;
    std::int32_t first_device = INT32_MAX;
    std::set<std::int32_t> devices;
  };
  std::map<std::int64_t, Part> parts;  // process key (-1: not recorded)
  const auto part = [&](std::int64_t process) -> Part& {
    auto [it, fresh] = parts.try_emplace(process);
    if (fresh) {
      it->second.trace.file = path;
      it->second.trace.format = "nsys";
      it->second.process = process;
      it->second.names = std::make_unique<NameTable>(it->second.trace.names);
    }
    return it->second;
  };
  // Rows skipped (RankTrace::skipped), by process: given to that process's rank at the end, or to
  // the first rank when the process is not one (a row whose own process id is unusable).
  std::map<std::int64_t, std::map<std::string, std::int64_t>> skipped;
  RankTrace strict_view;  // names the file in skip_event's refusal
  strict_view.file = path;
  const auto skip = [&](std::int64_t process, const std::string& what, const std::string& why, const std::string& key) {
    skip_event(strict_view, strict, what, why, key);
    ++skipped[process][what + ": " + why];
  };
  // A row's process (its globalPid / globalTid / 0x1000000; -1 when not recorded); false when the
  // column holds something other than an integer.
  const auto process_of = [](sqlite3_stmt* s, int col, std::int64_t& process) {
    std::int64_t id = 0;
    if (*integer_of(s, col, id, -1)) return false;
    process = id < 0 ? -1 : id / 0x1000000;
    return true;
  };
  std::int64_t activities = 0;
  const auto count_activity = [&] {
    if (++activities > kMaxTraceActivities)
      throw InputError(path, 0, "",
                       fmt::format("more than {} GPU activities (kernels and copies) in one file: refused "
                                   "(docs/reference/limits.md)",
                                   kMaxTraceActivities));
  };
  db.query(fmt::format("SELECT k.start, k.end, k.deviceId, k.correlationId, s.value, {}, {} FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                       "LEFT JOIN StringIds s ON s.id = k.{} ORDER BY k.start, k.end, k.deviceId, k.correlationId",
                       by_process ? "k.globalPid" : "NULL", kernel_cols.count("streamId") ? "k.streamId" : "NULL", name_col),
           [&](sqlite3_stmt* s) {
             const std::string table = "CUPTI_ACTIVITY_KIND_KERNEL.";
             std::int64_t process = -1;
             if (!process_of(s, 5, process)) return skip(-1, "kernel", "globalPid not an integer", table + "globalPid");
             GpuActivity a;
             std::string column;
             if (const std::string why = interval_of(s, 0, 1, a.start_ns, a.end_ns, column); !why.empty())
               return skip(process, "kernel", why, table + column);
             std::int64_t device = 0;
             if (const char* why = integer_of(s, 2, device); *why)
               return skip(process, "kernel", std::string("deviceId ") + why, table + "deviceId");
             if (device < 0 || device > INT32_MAX) return skip(process, "kernel", "deviceId out of range", table + "deviceId");
             if (const char* why = integer_of(s, 3, a.correlation, -1); *why)
               return skip(process, "kernel", std::string("correlationId ") + why, table + "correlationId");
             count_activity();
             a.device = static_cast<std::int32_t>(device);
             // The stream, for the replay: -1 when not recorded or not an int32 (the figures do not use it).
             if (std::int64_t stream = -1; !*integer_of(s, 6, stream, -1) && stream >= 0 && stream <= INT32_MAX)
               a.stream = static_cast<std::int32_t>(stream);
             const std::string name = text_of(s, 4);
             Part& p = part(process);
             a.name = p.names->intern(name.empty() ? "(unnamed kernel)" : name);
             const KernelFamily family = kernels.classify(name);
             a.kind = family.kind;
             a.library = family.library;
             a.cls = activity_class(family);
             p.trace.activities.push_back(a);
             p.first_device = std::min(p.first_device, a.device);
             p.devices.insert(a.device);
           });
  if (parts.empty()) {
    if (!skipped.empty()) {
      std::string why;
      for (const auto& [reason, n] : skipped.begin()->second) why += fmt::format("{}{} {}", why.empty() ? "" : ", ", reason, n);
      throw InputError(path, 0, "CUPTI_ACTIVITY_KIND_KERNEL", "no GPU kernel readable as written (skipped: " + why + ")");
    }
    throw InputError(path, 0, "CUPTI_ACTIVITY_KIND_KERNEL", "no GPU kernels: the table is empty");
  }
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
    const char* what = memcpy ? "copy" : "memset";
    // copyKind 10 is CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: a copy between two GPUs, communication.
    const bool kinds = memcpy && cols.count("copyKind");
    db.query(fmt::format("SELECT start, end, deviceId, {}, {} FROM {} ORDER BY start, end, deviceId",
                         cols.count("globalPid") ? "globalPid" : "NULL", kinds ? "copyKind" : "NULL", table),
             [&](sqlite3_stmt* s) {
               const std::string key = std::string(table) + ".";
               std::int64_t process = -1;
               if (!process_of(s, 3, process)) return skip(-1, what, "globalPid not an integer", key + "globalPid");
               Part* p = known(process);
               if (!p) return;
               GpuActivity a;
               std::string column;
               if (const std::string why = interval_of(s, 0, 1, a.start_ns, a.end_ns, column); !why.empty())
                 return skip(p->process, what, why, key + column);
               std::int64_t device = 0;
               if (const char* why = integer_of(s, 2, device); *why)
                 return skip(p->process, what, std::string("deviceId ") + why, key + "deviceId");
               if (device < 0 || device > INT32_MAX) return skip(p->process, what, "deviceId out of range", key + "deviceId");
               count_activity();
               a.device = static_cast<std::int32_t>(device);
               const bool peer = kinds && sqlite3_column_type(s, 4) == SQLITE_INTEGER && sqlite3_column_int64(s, 4) == 10;
               const std::string label = !memcpy ? "[memset]" : peer ? "[memcpy PtoP]" : "[memcpy]";
               a.name = p->names->intern(label);
               const KernelFamily family = kernels.classify_copy(label);
               a.kind = family.kind;
               a.library = family.library;
               a.cls = activity_class(family);
               p->trace.activities.push_back(a);
             });
  }
  // A runtime call's (launch's) start and correlation id, as written: false (skipped, counted) when
  // either is unusable.
  const auto launch_of = [&](sqlite3_stmt* s, int start_col, int correlation_col, Part& p, std::int64_t& start,
                             std::int64_t& correlation) {
    const std::string key = "CUPTI_ACTIVITY_KIND_RUNTIME.";
    if (const char* why = integer_of(s, start_col, start); *why) {
      skip(p.process, "launch", std::string("start ") + why, key + "start");
      return false;
    }
    if (start < 0 || start >= kMaxTraceTimeNs) {
      skip(p.process, "launch", "start out of range", key + "start");
      return false;
    }
    if (const char* why = integer_of(s, correlation_col, correlation); *why) {
      skip(p.process, "launch", std::string("correlationId ") + why, key + "correlationId");
      return false;
    }
    return true;
  };
  const auto runtime_cols = db.columns("CUPTI_ACTIVITY_KIND_RUNTIME");
  if (runtime_cols.count("start") && runtime_cols.count("correlationId"))
    db.query(fmt::format("SELECT correlationId, start, {} FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                         runtime_cols.count("globalTid") ? "globalTid" : "NULL"),
             [&](sqlite3_stmt* s) {
               std::int64_t process = -1;
               if (!process_of(s, 2, process))
                 return skip(-1, "launch", "globalTid not an integer", "CUPTI_ACTIVITY_KIND_RUNTIME.globalTid");
               Part* p = known(process);
               std::int64_t start = 0, correlation = 0;
               if (p && launch_of(s, 1, 0, *p, start, correlation)) {
                 p->trace.launches.emplace_back(correlation, start);
                 std::int64_t thread = -1;
                 p->trace.launch_threads.push_back(*integer_of(s, 2, thread, -1) ? -1 : thread);
               }
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
    db.query(fmt::format("SELECT n.start, n.end, {}, {} FROM NVTX_EVENTS n{} ORDER BY n.start", text,
                         nvtx_cols.count("globalTid") ? "n.globalTid" : "NULL", join),
             [&](sqlite3_stmt* s) {
               std::int64_t process = -1;
               if (!process_of(s, 3, process)) return skip(-1, "nvtx", "globalTid not an integer", "NVTX_EVENTS.globalTid");
               Part* p = known(process);
               if (!p) return;
               // A mark (an instant: end NULL) is no range; nor is an empty one.
               if (sqlite3_column_type(s, 1) == SQLITE_NULL && sqlite3_column_type(s, 0) == SQLITE_INTEGER) return;
               std::int64_t start = 0, end = 0;
               std::string column;
               if (const std::string why = interval_of(s, 0, 1, start, end, column); !why.empty())
                 return skip(p->process, "nvtx", why, "NVTX_EVENTS." + column);
               if (end == start) return;
               const std::string name = text_of(s, 2);
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
    // The innermost range open on the launching thread (calibrate/traces/op_link.hpp). The runtime
    // rows were checked (and counted when skipped) above: the unusable ones are left out quietly.
    std::map<Part*, std::vector<LaunchAt>> launches_by_part;
    db.query("SELECT start, correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid IS NOT NULL",
             [&](sqlite3_stmt* s) {
               std::int64_t tid = 0, start = 0, correlation = 0;
               if (*integer_of(s, 2, tid) || *integer_of(s, 0, start) || *integer_of(s, 1, correlation)) return;
               if (start < 0 || start >= kMaxTraceTimeNs) return;
               if (Part* p = known(tid / 0x1000000)) launches_by_part[p].push_back({tid, start, correlation});
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
  for (auto& [process, reasons] : skipped) {
    const auto it = parts.find(process);
    RankTrace& t = it != parts.end() ? it->second.trace : order.front()->trace;
    for (const auto& [reason, n] : reasons) t.skipped[reason] += n;
  }
  std::vector<RankTrace> out;
  out.reserve(order.size());
  for (Part* p : order) {
    if (parts.size() > 1) {
      std::string gpus;
      for (std::int32_t d : p->devices) gpus += (gpus.empty() ? "" : ",") + std::to_string(d);
      p->trace.part = fmt::format("pid {}, GPU{} {}", p->process % 0x1000000, p->devices.size() > 1 ? "s" : "", gpus);
    }
    out.push_back(std::move(p->trace));
  }
  return out;
}

}  // namespace overlap::traces
