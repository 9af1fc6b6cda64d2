// Nsight Systems SQLite reader (calibrate/traces/nsys_reader.hpp).
#include "calibrate/traces/nsys_reader.hpp"

#include <sqlite3.h>

#include <set>

#include <fmt/format.h>

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

}  // namespace

RankTrace read_nsys_sqlite(const std::string& path, const std::string& step_prefix) {
  RankTrace trace;
  trace.file = path;
  trace.format = "nsys";
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

  NameTable names(trace.names);
  db.query(fmt::format("SELECT k.start, k.end, k.deviceId, k.correlationId, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                       "LEFT JOIN StringIds s ON s.id = k.{} ORDER BY k.start, k.end, k.deviceId, k.correlationId",
                       name_col),
           [&](sqlite3_stmt* s) {
             GpuActivity a;
             a.start_ns = sqlite3_column_int64(s, 0);
             a.end_ns = sqlite3_column_int64(s, 1);
             a.device = sqlite3_column_int(s, 2);
             a.correlation = sqlite3_column_int64(s, 3);
             const std::string name = text_of(s, 4);
             a.name = names.intern(name.empty() ? "(unnamed kernel)" : name);
             a.cls = classify_kernel(name);
             if (a.end_ns >= a.start_ns) trace.activities.push_back(a);
           });
  if (trace.activities.empty())
    throw InputError(path, 0, "CUPTI_ACTIVITY_KIND_KERNEL", "no GPU kernels: the table is empty");
  for (const char* table : {"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    const auto cols = db.columns(table);
    if (cols.empty()) continue;
    require(path, cols, table, {"start", "end", "deviceId"});
    const std::uint32_t name = names.intern(std::string(table) == "CUPTI_ACTIVITY_KIND_MEMCPY" ? "[memcpy]" : "[memset]");
    db.query(fmt::format("SELECT start, end, deviceId FROM {} ORDER BY start, end, deviceId", table), [&](sqlite3_stmt* s) {
      GpuActivity a;
      a.start_ns = sqlite3_column_int64(s, 0);
      a.end_ns = sqlite3_column_int64(s, 1);
      a.device = sqlite3_column_int(s, 2);
      a.name = name;
      a.cls = ActivityClass::memory;
      if (a.end_ns >= a.start_ns) trace.activities.push_back(a);
    });
  }
  const auto runtime_cols = db.columns("CUPTI_ACTIVITY_KIND_RUNTIME");
  if (runtime_cols.count("start") && runtime_cols.count("correlationId"))
    db.query("SELECT correlationId, start FROM CUPTI_ACTIVITY_KIND_RUNTIME",
             [&](sqlite3_stmt* s) { trace.launches.emplace_back(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)); });
  const auto nvtx_cols = db.columns("NVTX_EVENTS");
  if (!step_prefix.empty() && nvtx_cols.count("start") && nvtx_cols.count("end")) {
    const bool has_text = nvtx_cols.count("text") > 0, has_text_id = nvtx_cols.count("textId") > 0;
    if (has_text || has_text_id) {
      const std::string text = has_text && has_text_id ? "COALESCE(n.text, s.value)" : has_text ? "n.text" : "s.value";
      const std::string join = has_text_id ? " LEFT JOIN StringIds s ON s.id = n.textId" : "";
      db.query(fmt::format("SELECT n.start, n.end, {} FROM NVTX_EVENTS n{} WHERE n.end > n.start ORDER BY n.start", text,
                           join),
               [&](sqlite3_stmt* s) {
                 const std::string name = text_of(s, 2);
                 if (name.compare(0, step_prefix.size(), step_prefix) == 0)
                   trace.steps.push_back({name, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)});
               });
    }
  }
  return trace;
}

}  // namespace overlap::traces
