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

// One rank per process: globalPid (kernels, copies) and globalTid (runtime calls, NVTX ranges)
// carry the process id above their low 24 bits (the export documentation's "globalTid / 0x1000000
// % 0x1000000 = PID"); CUDA correlation ids are unique only within a process.
struct Part {
  RankTrace trace;
  std::unique_ptr<NameTable> names;
  std::int64_t process = -1;
  std::int32_t first_device = INT32_MAX;
  std::set<std::int32_t> devices;
};

// A row's process (its globalPid / globalTid / 0x1000000; -1 when not recorded); false when the
// column holds something other than an integer.
bool process_of(sqlite3_stmt* s, int col, std::int64_t& process) {
  std::int64_t id = 0;
  if (*integer_of(s, col, id, -1)) return false;
  process = id < 0 ? -1 : id / 0x1000000;
  return true;
}

// The reading of one export, table by table: the kernels decide the ranks (processes), the other
// tables' rows join them.
class NsysReader {
 public:
  NsysReader(const std::string& path, const std::string& step_prefix, const KernelClassifier& kernels, bool strict)
      : path_(path), step_prefix_(step_prefix), kernels_(kernels), strict_(strict), db_(path) {
    strict_view_.file = path;  // names the file in skip_event's refusal
  }

  std::vector<RankTrace> read() {
    const auto kernel_cols = required_kernel_columns();
    read_kernels(kernel_cols);
    refuse_no_kernels();
    for (const char* table : {"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) read_copies(table);
    const auto runtime_cols = db_.columns("CUPTI_ACTIVITY_KIND_RUNTIME");
    if (runtime_cols.count("start") && runtime_cols.count("correlationId")) read_launches(runtime_cols);
    read_nvtx_and_gemm_ops(runtime_cols);
    return ranks();
  }

 private:
  // The kernel table's columns, after checking the tables and columns every export must have.
  std::set<std::string> required_kernel_columns() {
    const auto string_cols = db_.columns("StringIds");
    const auto kernel_cols = db_.columns("CUPTI_ACTIVITY_KIND_KERNEL");
    if (kernel_cols.empty())
      throw InputError(path_, 0, "CUPTI_ACTIVITY_KIND_KERNEL",
                       "no GPU kernels: the export has no CUPTI_ACTIVITY_KIND_KERNEL table (record with nsys profile "
                       "--trace=cuda,nvtx)");
    if (string_cols.empty()) throw InputError(path_, 0, "StringIds", "table missing from the Nsight Systems export");
    require(path_, string_cols, "StringIds", {"id", "value"});
    require(path_, kernel_cols, "CUPTI_ACTIVITY_KIND_KERNEL", {"start", "end", "deviceId", "correlationId"});
    return kernel_cols;
  }

  Part& part(std::int64_t process) {
    auto [it, fresh] = parts_.try_emplace(process);
    if (fresh) {
      it->second.trace.file = path_;
      it->second.trace.format = "nsys";
      it->second.process = process;
      it->second.names = std::make_unique<NameTable>(it->second.trace.names);
    }
    return it->second;
  }

  // The rank a row of another table joins; rows of a process that launched no kernel go nowhere
  // (it is no rank).
  Part* known(std::int64_t process) {
    const auto it = parts_.find(parts_.size() == 1 ? parts_.begin()->first : process);
    return it == parts_.end() ? nullptr : &it->second;
  }

  void skip(std::int64_t process, const std::string& what, const std::string& why, const std::string& key) {
    skip_event(strict_view_, strict_, what, why, key);
    ++skipped_[process][what + ": " + why];
  }

  void count_activity() {
    if (++activities_ > kMaxTraceActivities)
      throw InputError(path_, 0, "",
                       fmt::format("more than {} GPU activities (kernels and copies) in one file: refused "
                                   "(docs/reference/limits.md)",
                                   kMaxTraceActivities));
  }

  // A kernel's or a copy's interval and device (columns 0, 1, 2) into `a`: false (skipped, counted)
  // when any is unusable.
  bool activity_times(sqlite3_stmt* s, std::int64_t process, const std::string& what, const std::string& key,
                      GpuActivity& a) {
    std::string column;
    if (const std::string why = interval_of(s, 0, 1, a.start_ns, a.end_ns, column); !why.empty()) {
      skip(process, what, why, key + column);
      return false;
    }
    std::int64_t device = 0;
    if (const char* why = integer_of(s, 2, device); *why) {
      skip(process, what, std::string("deviceId ") + why, key + "deviceId");
      return false;
    }
    if (device < 0 || device > INT32_MAX) {
      skip(process, what, "deviceId out of range", key + "deviceId");
      return false;
    }
    a.device = static_cast<std::int32_t>(device);
    return true;
  }

  static void set_family(GpuActivity& a, const KernelFamily& family) {
    a.kind = family.kind;
    a.library = family.library;
    a.cls = activity_class(family);
  }

  void read_kernels(const std::set<std::string>& kernel_cols) {
    // The demangled name: the short one is only the function's base name ("Kernel2" for a CUTLASS
    // template), too little to tell a GEMM from other kernels.
    const char* name_col = kernel_cols.count("demangledName") ? "demangledName"
                           : kernel_cols.count("shortName")   ? "shortName"
                                                              : nullptr;
    if (!name_col)
      throw InputError(path_, 0, "CUPTI_ACTIVITY_KIND_KERNEL.demangledName", "column missing (nor shortName)");
    const bool by_process = kernel_cols.count("globalPid") > 0;
    db_.query(fmt::format("SELECT k.start, k.end, k.deviceId, k.correlationId, s.value, {}, {}, {} FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                          "LEFT JOIN StringIds s ON s.id = k.{} ORDER BY k.start, k.end, k.deviceId, k.correlationId",
                          by_process ? "k.globalPid" : "NULL", kernel_cols.count("streamId") ? "k.streamId" : "NULL",
                          kernel_cols.count("gridX") ? "k.gridX" : "NULL", name_col),
              [&](sqlite3_stmt* s) { read_kernel_row(s); });
  }

  void read_kernel_row(sqlite3_stmt* s) {
    const std::string table = "CUPTI_ACTIVITY_KIND_KERNEL.";
    std::int64_t process = -1;
    if (!process_of(s, 5, process)) return skip(-1, "kernel", "globalPid not an integer", table + "globalPid");
    GpuActivity a;
    if (!activity_times(s, process, "kernel", table, a)) return;
    if (const char* why = integer_of(s, 3, a.correlation, -1); *why)
      return skip(process, "kernel", std::string("correlationId ") + why, table + "correlationId");
    count_activity();
    // The stream, for the replay: -1 when not recorded or not an int32 (the figures do not use it).
    if (std::int64_t stream = -1; !*integer_of(s, 6, stream, -1) && stream >= 0 && stream <= INT32_MAX)
      a.stream = static_cast<std::int32_t>(stream);
    // The grid's x, for the replay's SM sharing: -1 when not recorded or not a positive int32.
    if (std::int64_t grid = -1; !*integer_of(s, 7, grid, -1) && grid > 0 && grid <= INT32_MAX)
      a.grid_x = static_cast<std::int32_t>(grid);
    const std::string name = text_of(s, 4);
    Part& p = part(process);
    a.name = p.names->intern(name.empty() ? "(unnamed kernel)" : name);
    set_family(a, kernels_.classify(name));
    p.trace.activities.push_back(a);
    p.first_device = std::min(p.first_device, a.device);
    p.devices.insert(a.device);
  }

  void refuse_no_kernels() const {
    if (!parts_.empty()) return;
    if (!skipped_.empty()) {
      std::string why;
      for (const auto& [reason, n] : skipped_.begin()->second) why += fmt::format("{}{} {}", why.empty() ? "" : ", ", reason, n);
      throw InputError(path_, 0, "CUPTI_ACTIVITY_KIND_KERNEL", "no GPU kernel readable as written (skipped: " + why + ")");
    }
    throw InputError(path_, 0, "CUPTI_ACTIVITY_KIND_KERNEL", "no GPU kernels: the table is empty");
  }

  // CUPTI_ACTIVITY_KIND_MEMCPY or _MEMSET, when the export has it.
  void read_copies(const char* table) {
    const auto cols = db_.columns(table);
    if (cols.empty()) return;
    require(path_, cols, table, {"start", "end", "deviceId"});
    const bool memcpy = std::string(table) == "CUPTI_ACTIVITY_KIND_MEMCPY";
    const char* what = memcpy ? "copy" : "memset";
    // copyKind 10 is CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: a copy between two GPUs, communication.
    const bool kinds = memcpy && cols.count("copyKind");
    const std::string key = std::string(table) + ".";
    db_.query(fmt::format("SELECT start, end, deviceId, {}, {} FROM {} ORDER BY start, end, deviceId",
                          cols.count("globalPid") ? "globalPid" : "NULL", kinds ? "copyKind" : "NULL", table),
              [&](sqlite3_stmt* s) {
                std::int64_t process = -1;
                if (!process_of(s, 3, process)) return skip(-1, what, "globalPid not an integer", key + "globalPid");
                Part* p = known(process);
                if (!p) return;
                GpuActivity a;
                if (!activity_times(s, p->process, what, key, a)) return;
                count_activity();
                const bool peer = kinds && sqlite3_column_type(s, 4) == SQLITE_INTEGER && sqlite3_column_int64(s, 4) == 10;
                const std::string label = !memcpy ? "[memset]" : peer ? "[memcpy PtoP]" : "[memcpy]";
                a.name = p->names->intern(label);
                set_family(a, kernels_.classify_copy(label));
                p->trace.activities.push_back(a);
              });
  }

  // A runtime call's (launch's) start and correlation id, as written: false (skipped, counted) when
  // either is unusable.
  bool launch_of(sqlite3_stmt* s, int start_col, int correlation_col, Part& p, std::int64_t& start,
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
  }

  void read_launches(const std::set<std::string>& runtime_cols) {
    db_.query(fmt::format("SELECT correlationId, start, {} FROM CUPTI_ACTIVITY_KIND_RUNTIME",
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
  }

  // NVTX ranges: steps (PREFIX<n>) and, for GEMM shapes, the ranges PyTorch's NVTX profiler pushes
  // per op. A kernel's op is the innermost range open on the launching thread when the launch
  // (CUPTI_ACTIVITY_KIND_RUNTIME, same globalTid) started; joined to the kernel through
  // correlationId, as the Kineto reader joins through External id.
  void read_nvtx_and_gemm_ops(const std::set<std::string>& runtime_cols) {
    const auto nvtx_cols = db_.columns("NVTX_EVENTS");
    const bool has_text = nvtx_cols.count("text") > 0, has_text_id = nvtx_cols.count("textId") > 0;
    const bool join_ops = nvtx_cols.count("globalTid") && runtime_cols.count("globalTid");
    // Per process: its threads' op ranges (op: index into the part's gemm_ops; -1: not a GEMM op).
    std::map<Part*, std::vector<OpRange>> ranges_by_part;
    if (nvtx_cols.count("start") && nvtx_cols.count("end") && (has_text || has_text_id)) {
      const std::string text = has_text && has_text_id ? "COALESCE(n.text, s.value)" : has_text ? "n.text" : "s.value";
      const std::string join = has_text_id ? " LEFT JOIN StringIds s ON s.id = n.textId" : "";
      db_.query(fmt::format("SELECT n.start, n.end, {}, {} FROM NVTX_EVENTS n{} ORDER BY n.start", text,
                            nvtx_cols.count("globalTid") ? "n.globalTid" : "NULL", join),
                [&](sqlite3_stmt* s) { read_nvtx_row(s, join_ops, ranges_by_part); });
    }
    if (join_ops && !ranges_by_part.empty()) {
      link_launches_to_ops(ranges_by_part);
      link_kernels_to_gemm_ops();
    }
  }

  void read_nvtx_row(sqlite3_stmt* s, bool join_ops, std::map<Part*, std::vector<OpRange>>& ranges_by_part) {
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
    if (!step_prefix_.empty() && name.compare(0, step_prefix_.size(), step_prefix_) == 0)
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
  }

  // The innermost range open on the launching thread (calibrate/traces/op_link.hpp). The runtime
  // rows were checked (and counted when skipped) by read_launches: the unusable ones are left out
  // quietly.
  void link_launches_to_ops(std::map<Part*, std::vector<OpRange>>& ranges_by_part) {
    std::map<Part*, std::vector<LaunchAt>> launches_by_part;
    db_.query("SELECT start, correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid IS NOT NULL",
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
  }

  // The GEMM op of the launch with the kernel's correlation id; its dtype the one the kernel's
  // name says.
  void link_kernels_to_gemm_ops() {
    for (auto& [process, p] : parts_) {
      auto& index = p.trace.gemm_by_external_id;
      std::sort(index.begin(), index.end());
      for (GpuActivity& a : p.trace.activities) {
        if (a.cls != ActivityClass::compute || a.correlation < 0) continue;
        const auto at = std::lower_bound(index.begin(), index.end(), std::make_pair(a.correlation, std::int32_t{INT32_MIN}));
        if (at == index.end() || at->first != a.correlation) continue;
        a.op = at->second;
        a.link = OpLink::gemm;
        GemmOp& op = p.trace.gemm_ops[static_cast<std::size_t>(at->second)];
        if (p.trace.names[op.dtype].empty() && (a.kind == KernelKind::gemm || a.kind == KernelKind::unknown))
          op.dtype = p.names->intern(dtype_from_kernel_name(p.trace.names[a.name]));
      }
    }
  }

  // The ranks, in the order of the GPU each process used first (one process per GPU: its local
  // rank); the skipped rows counted on their process's rank, or on the first rank when the process
  // is not one (a row whose own process id is unusable).
  std::vector<RankTrace> ranks() {
    std::vector<Part*> order;
    for (auto& [process, p] : parts_) order.push_back(&p);
    std::stable_sort(order.begin(), order.end(), [](const Part* a, const Part* b) { return a->first_device < b->first_device; });
    for (auto& [process, reasons] : skipped_) {
      const auto it = parts_.find(process);
      RankTrace& t = it != parts_.end() ? it->second.trace : order.front()->trace;
      for (const auto& [reason, n] : reasons) t.skipped[reason] += n;
    }
    std::vector<RankTrace> out;
    out.reserve(order.size());
    for (Part* p : order) {
      if (parts_.size() > 1) {
        std::string gpus;
        for (std::int32_t d : p->devices) gpus += (gpus.empty() ? "" : ",") + std::to_string(d);
        p->trace.part = fmt::format("pid {}, GPU{} {}", p->process % 0x1000000, p->devices.size() > 1 ? "s" : "", gpus);
      }
      out.push_back(std::move(p->trace));
    }
    return out;
  }

  const std::string& path_;
  const std::string& step_prefix_;
  const KernelClassifier& kernels_;
  const bool strict_;
  Db db_;
  std::map<std::int64_t, Part> parts_;  // process key (-1: not recorded)
  // Rows skipped (RankTrace::skipped), by process.
  std::map<std::int64_t, std::map<std::string, std::int64_t>> skipped_;
  RankTrace strict_view_;
  std::int64_t activities_ = 0;
};

}  // namespace

std::vector<RankTrace> read_nsys_sqlite(const std::string& path, const std::string& step_prefix,
                                        const KernelClassifier& kernels, bool strict) {
  check_trace_file(path);  // a regular file within the cap: SQLite would open a FIFO and block
  return NsysReader(path, step_prefix, kernels, strict).read();
}

}  // namespace overlap::traces
