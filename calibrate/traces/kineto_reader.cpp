// Streaming Kineto JSON reader (calibrate/traces/kineto_reader.hpp).
#include "calibrate/traces/kineto_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <istream>
#include <functional>
#include <limits>
#include <streambuf>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibrate/traces/attention_pricing.hpp"
#include "calibrate/traces/memory_pricing.hpp"
#include "calibrate/traces/op_link.hpp"
#include "calibrate/traces/trace_limits.hpp"
#include "calibrate/traces/trace_stream.hpp"
#include "cost_model/input_error.hpp"

namespace overlap::traces {
namespace {

enum class Parsed : std::uint8_t { ok, not_a_number, out_of_range };

// Microseconds as written ("12.345", "1700000000123.456", "5", "1.5e3") to integer nanoseconds,
// exactly for plain decimals (a double loses nanoseconds at epoch-sized timestamps). The text must
// be a JSON number (RFC 8259 section 6) and nothing else: "12abc" is not a number.
Parsed parse_us_to_ns(const std::string& text, std::int64_t& ns) {
  const auto digit = [&](std::size_t at) { return at < text.size() && text[at] >= '0' && text[at] <= '9'; };
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  // Whole microseconds, accumulated up to kMaxTraceTimeNs / 1000 (beyond it only flagged: no overflow).
  constexpr std::int64_t kMaxWholeUs = kMaxTraceTimeNs / 1000;
  std::int64_t whole = 0;
  bool digits = false, big = false;
  while (digit(i)) {
    if (!big) whole = whole * 10 + (text[i] - '0');
    big = big || whole > kMaxWholeUs;
    ++i;
    digits = true;
  }
  std::int64_t frac_ns = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    int places = 0;
    bool round_up = false;
    while (digit(i)) {
      if (places < 3) {
        frac_ns = frac_ns * 10 + (text[i] - '0');
      } else if (places == 3) {
        round_up = text[i] >= '5';
      }
      ++places;
      ++i;
      digits = true;
    }
    for (int p = places; p < 3; ++p) frac_ns *= 10;
    if (round_up) ++frac_ns;
  }
  if (!digits) return Parsed::not_a_number;
  if (i != text.size()) {
    // Exponent form: rare in traces; read through a double once the text is checked.
    if (text[i] != 'e' && text[i] != 'E') return Parsed::not_a_number;
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (!digit(i)) return Parsed::not_a_number;
    while (digit(i)) ++i;
    if (i != text.size()) return Parsed::not_a_number;
    const double v = std::strtod(text.c_str(), nullptr) * 1000.0;
    if (!(v > -9.2e18 && v < 9.2e18)) return Parsed::out_of_range;
    ns = static_cast<std::int64_t>(v >= 0 ? v + 0.5 : v - 0.5);
    return Parsed::ok;
  }
  if (big) return Parsed::out_of_range;
  ns = whole * 1000 + frac_ns;  // at most kMaxTraceTimeNs + 999: no overflow
  if (negative) ns = -ns;
  return Parsed::ok;
}

enum class Key : std::uint8_t {
  other,
  // top level
  trace_events,
  distributed_info,
  // distributedInfo
  rank,
  world_size,
  backend,
  // event
  ph,
  cat,
  name,
  pid,
  tid,
  ts,
  dur,
  args,
  // args
  device,
  correlation,
  external_id,
  input_dims,
  input_type,
  concrete_inputs,
  collective_name,
  in_nelems,
  out_nelems,
  group_size,
  dtype,
  process_group_name,
  stream,
  wait_on_stream,
  wait_on_event_record,
  grid,
};

struct Event {
  std::string ph, cat, name;
  std::int64_t pid = 0, tid = 0;
  bool has_pid = false;
  std::int64_t ts_ns = 0, dur_ns = 0;
  bool has_ts = false, has_dur = false;  // present and in range
  // Why ts / dur cannot be used: nullptr when valid or missing ("missing" is !has_ and no reason).
  const char* ts_bad = nullptr;
  const char* dur_bad = nullptr;
  // ts + dur within [0, kMaxTraceTimeNs): each is below 2^62, so the sum cannot overflow.
  bool end_ok() const { return has_ts && has_dur && ts_ns + dur_ns < kMaxTraceTimeNs; }
  std::optional<std::int64_t> device, correlation, external_id, in_nelems, out_nelems, group_size;
  std::optional<std::int64_t> stream, wait_on_stream, wait_on_event_record;
  std::optional<std::int64_t> grid_x;  // args.grid[0]
  std::vector<std::vector<std::int64_t>> input_dims;
  std::vector<std::string> input_types;
  std::vector<std::string> concrete_inputs;
  std::string collective, dtype, process_group;
  bool has_dims = false;

  void clear() {
    ph.clear();
    cat.clear();
    name.clear();
    has_pid = has_ts = has_dur = has_dims = false;
    ts_bad = dur_bad = nullptr;
    pid = tid = ts_ns = dur_ns = 0;
    device.reset();
    correlation.reset();
    external_id.reset();
    in_nelems.reset();
    out_nelems.reset();
    group_size.reset();
    stream.reset();
    wait_on_stream.reset();
    wait_on_event_record.reset();
    grid_x.reset();
    input_dims.clear();
    input_types.clear();
    concrete_inputs.clear();
    collective.clear();
    dtype.clear();
    process_group.clear();
  }
};

// CPU ops whose Input Dims describe a GEMM's operands (see trace_analysis.cpp gemm_shape()).
bool is_gemm_op(const std::string& name) {
  static const char* kOps[] = {"aten::mm",    "aten::addmm",  "aten::bmm",       "aten::baddbmm",
                               "aten::matmul", "aten::linear", "aten::_scaled_mm", "aten::addmv",
                               "aten::mv"};
  for (const char* op : kOps)
    if (name == op) return true;
  return false;
}

class Handler : public nlohmann::json_sax<nlohmann::json> {
 public:
  Handler(RankTrace& trace, const std::string& step_prefix, const KernelClassifier& kernels, bool strict)
      : trace_(trace), names_(trace.names), step_prefix_(step_prefix), kernels_(kernels), strict_(strict) {
    keys_.resize(16, Key::other);
  }

  bool saw_trace_events = false;
  bool root_is_object = false;
  std::string parse_message;
  std::int64_t events = 0;
  std::int64_t kernel_events = 0;  // cat "kernel" (copies aside)
  std::int64_t hip_runtime_events = 0;  // runtime calls named hip*: a trace taken on AMD GPUs (ROCm)
  // distributedInfo's rank or world_size that is not an integer in range (refused after the parse).
  std::string distributed_error;
  // A cap of trace_limits.hpp reached while reading (the parse stops).
  std::string limit_error;

  bool null() override { return not_a_value("null"); }
  bool boolean(bool b) override { return not_a_value(b ? "true" : "false"); }
  bool number_integer(number_integer_t v) override { return integer(static_cast<std::int64_t>(v), nullptr); }
  bool number_unsigned(number_unsigned_t v) override {
    const auto clipped = v > static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max())
                             ? std::numeric_limits<std::int64_t>::max()
                             : static_cast<std::int64_t>(v);
    return integer(clipped, nullptr);
  }
  bool number_float(number_float_t v, const string_t& text) override {
    const Key k = current_key();
    if (in_event() && depth_ == 3 && (k == Key::ts || k == Key::dur)) {
      time_text(k, text);
      return true;
    }
    if (depth_ == 2 && in_distributed_ && (k == Key::rank || k == Key::world_size)) {
      bad_distributed(k, text);
      return true;
    }
    const double r = v >= 0 ? v + 0.5 : v - 0.5;
    if (!(r > -9.2e18 && r < 9.2e18)) return true;
    return integer(static_cast<std::int64_t>(r), &text);
  }
  bool string(string_t& s) override {
    if (depth_ == 3 && in_event()) {
      switch (current_key()) {
        case Key::ph: ev_.ph = s; break;
        case Key::cat: ev_.cat = s; break;
        case Key::name: ev_.name = s; break;
        case Key::pid: ev_.has_pid = parse_int(s, ev_.pid); break;
        case Key::tid: ev_.tid = thread_key(s); break;
        case Key::ts:
        case Key::dur: time_text(current_key(), s); break;
        default: break;
      }
    } else if (depth_ == 4 && in_event() && in_args_) {
      switch (current_key()) {
        case Key::collective_name: ev_.collective = s; break;
        case Key::dtype: ev_.dtype = s; break;
        case Key::process_group_name: ev_.process_group = s; break;
        case Key::device: {
          std::int64_t v = 0;
          if (parse_int(s, v)) ev_.device = v;
          break;
        }
        default: break;
      }
    } else if (depth_ == 5 && in_event() && in_args_ && keys_[4] == Key::input_type) {
      ev_.input_types.push_back(s);
    } else if (depth_ == 5 && in_event() && in_args_ && keys_[4] == Key::concrete_inputs) {
      ev_.concrete_inputs.push_back(s);
    } else if (depth_ == 2 && in_distributed_) {
      if (current_key() == Key::backend) trace_.backend = s;
      else if (current_key() == Key::rank || current_key() == Key::world_size) set_rank(current_key(), s);
    }
    return true;
  }
  bool binary(binary_t&) override { return true; }

  bool start_object(std::size_t) override {
    not_a_value("an object");
    ++depth_;
    if (depth_ == 1) root_is_object = true;
    if (depth_ == 2 && keys_[1] == Key::distributed_info) in_distributed_ = true;
    if (depth_ == 3 && in_events_array_) {
      ev_.clear();
      in_event_obj_ = true;
    }
    if (depth_ == 4 && in_event() && keys_[3] == Key::args) in_args_ = true;
    return true;
  }
  bool end_object() override {
    if (depth_ == 3 && in_event()) {
      finish_event();
      in_event_obj_ = false;
      if (!limit_error.empty()) return false;
    }
    if (depth_ == 4) in_args_ = false;
    if (depth_ == 2) in_distributed_ = false;
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    not_a_value("an array");
    ++depth_;
    if (depth_ == 2 && keys_[1] == Key::trace_events) {
      in_events_array_ = true;
      saw_trace_events = true;
    }
    if (depth_ == 5 && in_event() && in_args_ && keys_[4] == Key::input_dims) ev_.has_dims = true;
    if (depth_ == 6 && in_event() && in_args_ && keys_[4] == Key::input_dims) ev_.input_dims.emplace_back();
    return true;
  }
  bool end_array() override {
    if (depth_ == 2) in_events_array_ = false;
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ < static_cast<int>(keys_.size())) keys_[depth_] = classify(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    parse_message = ex.what();
    return false;
  }

 private:
  bool in_event() const { return in_event_obj_; }
  Key current_key() const { return depth_ < static_cast<int>(keys_.size()) ? keys_[depth_] : Key::other; }

  Key classify(const std::string& k) const {
    switch (depth_) {
      case 1:
        if (k == "traceEvents") return Key::trace_events;
        if (k == "distributedInfo") return Key::distributed_info;
        return Key::other;
      case 2:
        if (!in_distributed_) return Key::other;
        if (k == "rank") return Key::rank;
        if (k == "world_size") return Key::world_size;
        if (k == "backend") return Key::backend;
        return Key::other;
      case 3:
        // Every event has these keys: compare by length first (a few million events, ten keys each).
        if (!in_event()) return Key::other;
        switch (k.size()) {
          case 2: return k == "ph" ? Key::ph : k == "ts" ? Key::ts : Key::other;
          case 3:
            return k == "cat"   ? Key::cat
                   : k == "pid" ? Key::pid
                   : k == "tid" ? Key::tid
                   : k == "dur" ? Key::dur
                                : Key::other;
          case 4: return k == "name" ? Key::name : k == "args" ? Key::args : Key::other;
          default: return Key::other;
        }
      case 4:
        if (!in_args_) return Key::other;
        switch (k.size()) {
          case 4: return k == "grid" ? Key::grid : Key::other;
          case 5: return k == "dtype" ? Key::dtype : Key::other;
          case 6: return k == "device" ? Key::device : k == "stream" ? Key::stream : Key::other;
          case 10:
            if (k == "Input Dims" || k == "Input dims") return Key::input_dims;
            if (k == "Input type") return Key::input_type;
            return k == "Group size" ? Key::group_size : Key::other;
          case 11: return k == "correlation" ? Key::correlation : k == "External id" || k == "external id" ? Key::external_id : Key::other;
          case 13: return k == "In msg nelems" ? Key::in_nelems : Key::other;
          case 14: return k == "Out msg nelems" ? Key::out_nelems : k == "wait_on_stream" ? Key::wait_on_stream : Key::other;
          case 15: return k == "Collective name" ? Key::collective_name : k == "Concrete Inputs" ? Key::concrete_inputs : Key::other;
          case 18: return k == "Process Group Name" ? Key::process_group_name : Key::other;
          case 33: return k == "wait_on_cuda_event_record_corr_id" ? Key::wait_on_event_record : Key::other;
          default: return Key::other;
        }
      default: return Key::other;
    }
  }

  static bool parse_int(const std::string& s, std::int64_t& v) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return false;
    v = x;
    return true;
  }
  // rank in [0, kMaxTraceWorldSize), world_size in [1, kMaxTraceWorldSize]: an integer, or a string
  // of one; anything else is recorded and the file refused (a rank read as another would mix ranks).
  void set_rank(Key k, const std::string& text) {
    std::int64_t v = 0;
    if (!parse_int(text, v)) return bad_distributed(k, "\"" + text + "\"");
    set_rank(k, v, text);
  }
  void set_rank(Key k, std::int64_t v, const std::string& text) {
    const std::int64_t lo = k == Key::rank ? 0 : 1;
    const std::int64_t hi = k == Key::rank ? kMaxTraceWorldSize - 1 : kMaxTraceWorldSize;
    if (v < lo || v > hi) return bad_distributed(k, text);
    (k == Key::rank ? trace_.rank : trace_.world_size) = static_cast<int>(v);
  }
  void bad_distributed(Key k, const std::string& text) {
    if (!distributed_error.empty()) return;
    const bool rank = k == Key::rank;
    distributed_error = fmt::format("{}: must be an integer from {} to {} (got {})", rank ? "rank" : "world_size",
                                    rank ? 0 : 1, rank ? kMaxTraceWorldSize - 1 : kMaxTraceWorldSize,
                                    text.size() > 40 ? text.substr(0, 40) + "..." : text);
  }

  // A value that is no number where ts, dur, rank or world_size is expected.
  bool not_a_value(const char* what) {
    const Key k = current_key();
    if (depth_ == 3 && in_event() && (k == Key::ts || k == Key::dur)) {
      (k == Key::ts ? ev_.ts_bad : ev_.dur_bad) = "not a number";
      (k == Key::ts ? ev_.has_ts : ev_.has_dur) = false;
    } else if (depth_ == 2 && in_distributed_ && (k == Key::rank || k == Key::world_size)) {
      bad_distributed(k, what);
    }
    return true;
  }

  void time_text(Key k, const std::string& text) {
    std::int64_t ns = 0;
    switch (parse_us_to_ns(text, ns)) {
      case Parsed::ok: set_time(k, ns); break;
      case Parsed::not_a_number: set_time_bad(k, "not a number"); break;
      case Parsed::out_of_range: set_time_bad(k, "out of range"); break;
    }
  }
  void set_time_bad(Key k, const char* why) {
    (k == Key::ts ? ev_.ts_bad : ev_.dur_bad) = why;
    (k == Key::ts ? ev_.has_ts : ev_.has_dur) = false;
  }
  // ts in [0, kMaxTraceTimeNs); dur in [0, kMaxTraceTimeNs) (their sum is checked by end_ok()).
  void set_time(Key k, std::int64_t ns) {
    if (k == Key::ts) {
      if (ns < 0 || ns >= kMaxTraceTimeNs) return set_time_bad(k, "out of range");
      ev_.ts_ns = ns;
      ev_.has_ts = true;
      ev_.ts_bad = nullptr;
    } else {
      if (ns < 0) return set_time_bad(k, "negative");
      if (ns >= kMaxTraceTimeNs) return set_time_bad(k, "out of range");
      ev_.dur_ns = ns;
      ev_.has_dur = true;
      ev_.dur_bad = nullptr;
    }
  }

  bool scalar_done() { return true; }

  bool integer(std::int64_t v, const std::string* text) {
    if (depth_ == 3 && in_event()) {
      switch (current_key()) {
        case Key::pid:
          ev_.pid = v;
          ev_.has_pid = true;
          break;
        case Key::tid: ev_.tid = v; break;
        case Key::ts:
        case Key::dur:
          if (v > std::numeric_limits<std::int64_t>::max() / 1000 || v < -std::numeric_limits<std::int64_t>::max() / 1000)
            set_time_bad(current_key(), v < 0 && current_key() == Key::dur ? "negative" : "out of range");
          else
            set_time(current_key(), v * 1000);
          break;
        default: break;
      }
    } else if (depth_ == 4 && in_event() && in_args_) {
      switch (current_key()) {
        case Key::device: ev_.device = v; break;
        case Key::correlation: ev_.correlation = v; break;
        case Key::external_id: ev_.external_id = v; break;
        case Key::in_nelems: ev_.in_nelems = v; break;
        case Key::out_nelems: ev_.out_nelems = v; break;
        case Key::group_size: ev_.group_size = v; break;
        case Key::stream: ev_.stream = v; break;
        case Key::wait_on_stream: ev_.wait_on_stream = v; break;
        case Key::wait_on_event_record: ev_.wait_on_event_record = v; break;
        default: break;
      }
    } else if (depth_ == 5 && in_event() && in_args_ && keys_[4] == Key::grid) {
      if (!ev_.grid_x) ev_.grid_x = v;  // "grid": [x, y, z]: the first
    } else if (depth_ == 6 && in_event() && in_args_ && keys_[4] == Key::input_dims && !ev_.input_dims.empty()) {
      ev_.input_dims.back().push_back(v);
    } else if (depth_ == 2 && in_distributed_) {
      if (current_key() == Key::rank || current_key() == Key::world_size)
        set_rank(current_key(), v, text ? *text : std::to_string(v));
    }
    return true;
  }

  bool has_comm_args() const { return !ev_.collective.empty() || ev_.in_nelems || ev_.out_nelems || ev_.group_size; }

  std::int32_t add_comm_op() {
    CommOp op;
    op.collective = names_.intern(ev_.collective);
    op.dtype = names_.intern(ev_.dtype);
    op.process_group = names_.intern(ev_.process_group);
    op.in_nelems = ev_.in_nelems.value_or(-1);
    op.out_nelems = ev_.out_nelems.value_or(-1);
    op.group_size = ev_.group_size.value_or(-1);
    trace_.comm_ops.push_back(op);
    return static_cast<std::int32_t>(trace_.comm_ops.size() - 1);
  }

  std::int32_t add_gemm_op() {
    OpInfo info;
    info.name = ev_.name;
    info.input_dims = std::move(ev_.input_dims);
    info.input_types = std::move(ev_.input_types);
    GemmOp op;
    op.name = names_.intern(ev_.name);
    if (const auto shape = gemm_shape(info)) {
      op.batch = shape->batch;
      op.m = shape->m;
      op.n = shape->n;
      op.k = shape->k;
      op.dtype = names_.intern(shape->dtype);
    } else {
      op.dtype = names_.intern("");
    }
    trace_.gemm_ops.push_back(op);
    return static_cast<std::int32_t>(trace_.gemm_ops.size() - 1);
  }

  // Another op with shapes: what prices the attention or memory-bound kernel it launches (its
  // dtype in `dtype`); nullopt when it gives neither (aten::view's bytes are 0, an op of unknown
  // dtypes, an attention op without its causal flag: not guessed, and not priced by its bytes).
  // Moves the event's dims, types and concrete inputs.
  std::optional<ShapedOp> shaped_of(std::string& dtype) {
    OpInfo info;
    info.name = ev_.name;
    info.input_dims = std::move(ev_.input_dims);
    info.input_types = std::move(ev_.input_types);
    info.concrete_inputs = std::move(ev_.concrete_inputs);
    ShapedOp op;
    if (const auto a = attention_shape(info, attention_causal(info))) {
      op.batch = a->batch;
      op.heads = a->heads;
      op.seq_q = a->seq_q;
      op.seq_kv = a->seq_kv;
      op.head_dim = a->head_dim;
      op.causal = a->causal;
      op.backward = a->pass == AttentionPass::backward;
      dtype = a->dtype;
    } else if (is_attention_op(info.name)) {
      return std::nullopt;
    } else if (const auto b = memory_bound_bytes(info); b && *b > 0) {
      op.bytes = *b;
      dtype = info.input_types.empty() ? std::string() : info.input_types.front();
    } else {
      return std::nullopt;
    }
    return op;
  }

  std::int32_t add_shaped_op() {
    std::string dtype;
    auto op = shaped_of(dtype);
    if (!op) return -1;
    op->name = names_.intern(ev_.name);
    op->dtype = names_.intern(dtype);
    trace_.shaped_ops.push_back(*op);
    return static_cast<std::int32_t>(trace_.shaped_ops.size() - 1);
  }

  void finish_event() {
    if (link_pass_) {
      collect_for_linking();
      return;
    }
    ++events;
    if (ev_.ph != "X") return;
    const std::string& cat = ev_.cat;
    const bool kernel = cat == "kernel" || cat == "Kernel";
    const bool memory = cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Memcpy" || cat == "Memset";
    const bool launch = cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" || cat == "Driver";
    const bool cpu = cat == "cpu_op" || cat == "user_annotation" || cat == "Operator" || cat == "python_function";
    // Kineto's CUPTI synchronisation records (libkineto output_json.cpp, CUDA_SYNC activities): on
    // the GPU's row, args stream, correlation and, for a stream wait, wait_on_stream and
    // wait_on_cuda_event_record_corr_id. Kept for the replay only; a record it cannot use is left out.
    if (cat == "cuda_sync") {
      if (ev_.has_ts) note_sync(true);
      return;
    }
    if (!kernel && !memory && !launch && !cpu) return;
    const bool step = cpu && !step_prefix_.empty() && ev_.name.compare(0, step_prefix_.size(), step_prefix_) == 0 &&
                      cat != "python_function";
    const char* what = kernel ? "kernel" : memory ? "copy" : launch ? "launch" : step ? "step" : "op";
    // Each event read as written or skipped and counted (strict: refused). A kernel, a copy and a step
    // need both times; a launch its ts; an op its ts, and its dur when it has one.
    if (!ev_.has_ts) return skip(what, fmt::format("ts {}", ev_.ts_bad ? ev_.ts_bad : "missing"), "ts");
    const bool needs_dur = kernel || memory || step || ev_.dur_bad;
    if (needs_dur && !ev_.has_dur) return skip(what, fmt::format("dur {}", ev_.dur_bad ? ev_.dur_bad : "missing"), "dur");
    if (ev_.has_dur && !ev_.end_ok()) return skip(what, "end (ts + dur) out of range", "dur");
    if (kernel || memory) return add_gpu_activity(what, kernel, memory);
    if (launch) {
      if (ev_.name.compare(0, 3, "hip") == 0) ++hip_runtime_events;
      if (ev_.correlation) {
        trace_.launches.emplace_back(*ev_.correlation, ev_.ts_ns);
        trace_.launch_threads.push_back(thread_of(ev_.pid, ev_.tid));
      }
      note_sync(false);
      return;
    }
    if (cpu) {
      if (step) {
        trace_.steps.push_back({ev_.name, ev_.ts_ns, ev_.ts_ns + ev_.dur_ns});
        return;
      }
      // The GEMM and collective ops' ranges on their threads (for kernels whose External id names
      // no op), marked gemm_ops index i as 3i, comm_ops index j as 3j + 1, shaped_ops index k as
      // 3k + 2; the other ops' ranges
      // are read by a second pass only when a kernel needs them (collect_for_linking).
      std::int32_t op = -1;
      if (has_comm_args()) {
        const std::int32_t j = add_comm_op();
        op = 3 * j + 1;
        if (ev_.external_id) trace_.comm_by_external_id.emplace_back(*ev_.external_id, j);
      } else if (ev_.has_dims && is_gemm_op(ev_.name)) {
        const std::int32_t i = add_gemm_op();
        op = 3 * i;
        if (ev_.external_id) trace_.gemm_by_external_id.emplace_back(*ev_.external_id, i);
      } else if (ev_.has_dims) {
        if (const std::int32_t k = add_shaped_op(); k >= 0) {
          op = 3 * k + 2;
          if (ev_.external_id) trace_.shaped_by_external_id.emplace_back(*ev_.external_id, k);
        }
      }
      if (op >= 0 && is_op_range(cat)) op_ranges_.push_back({thread_of(ev_.pid, ev_.tid), ev_.ts_ns, ev_.ts_ns + ev_.dur_ns, op});
    }
  }

  // A kernel or a copy on the GPU's rows, its family classified once per distinct name.
  void add_gpu_activity(const char* what, bool kernel, bool memory) {
    const std::int64_t device = ev_.device ? *ev_.device : ev_.pid;
    if (device < INT32_MIN || device > INT32_MAX)
      return skip(what, "device out of range", ev_.device ? "args.device" : "pid");
    if (static_cast<std::int64_t>(trace_.activities.size()) >= kMaxTraceActivities) {
      limit_error = fmt::format("more than {} GPU activities (kernels and copies) in one file: refused "
                                "(docs/reference/limits.md)",
                                kMaxTraceActivities);
      return;
    }
    if (kernel) ++kernel_events;
    GpuActivity a;
    a.start_ns = ev_.ts_ns;
    a.end_ns = ev_.ts_ns + ev_.dur_ns;
    a.name = names_.intern(ev_.name);
    // Classified once per distinct name: a trace repeats a few hundred kernel names millions of times.
    if (a.name >= families_.size()) families_.resize(a.name + 1);
    if (!families_[a.name])
      families_[a.name] = memory ? kernels_.classify_copy(ev_.name) : kernels_.classify(ev_.name);
    a.device = static_cast<std::int32_t>(device);
    a.external_id = ev_.external_id.value_or(-1);
    a.correlation = ev_.correlation.value_or(-1);
    // The stream as args.stream says, else the row Kineto writes it on (tid); -1 when neither is an int32.
    const std::int64_t stream = ev_.stream ? *ev_.stream : ev_.tid;
    a.stream = stream >= 0 && stream <= INT32_MAX ? static_cast<std::int32_t>(stream) : -1;
    if (ev_.grid_x && *ev_.grid_x > 0 && *ev_.grid_x <= INT32_MAX) a.grid_x = static_cast<std::int32_t>(*ev_.grid_x);
    a.kind = families_[a.name]->kind;
    a.library = families_[a.name]->library;
    a.cls = activity_class(*families_[a.name]);
    if (a.cls == ActivityClass::communication && has_comm_args()) {
      a.op = add_comm_op();
      a.link = OpLink::comm;
    }
    trace_.activities.push_back(a);
  }

  // A synchronisation for the replay: a runtime call by name (cudaStreamWaitEvent, cudaEventRecord,
  // cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize), or a cuda_sync record
  // ("Stream Wait Event", "Stream Sync", "Context Sync", "Event Sync").
  void note_sync(bool record) {
    std::optional<SyncKind> kind;
    const std::string& n = ev_.name;
    // HIP's calls (a ROCm trace) are CUDA's under their hip names.
    if (n == "cudaStreamWaitEvent" || n == "hipStreamWaitEvent" || n == "Stream Wait Event") kind = SyncKind::stream_wait_event;
    else if (n == "cudaEventRecord" || n == "cudaEventRecordWithFlags" || n == "hipEventRecord" || n == "hipEventRecordWithFlags")
      kind = SyncKind::event_record;
    else if (n == "cudaStreamSynchronize" || n == "hipStreamSynchronize" || n == "Stream Sync") kind = SyncKind::stream_sync;
    else if (n == "cudaDeviceSynchronize" || n == "hipDeviceSynchronize" || n == "Context Sync") kind = SyncKind::device_sync;
    else if (n == "cudaEventSynchronize" || n == "hipEventSynchronize" || n == "Event Sync") kind = SyncKind::event_sync;
    if (!kind) return;
    SyncCall c;
    c.kind = *kind;
    c.start_ns = ev_.ts_ns;
    c.end_ns = ev_.end_ok() ? ev_.ts_ns + ev_.dur_ns : ev_.ts_ns;
    c.correlation = ev_.correlation.value_or(-1);
    if (!record) c.thread = thread_of(ev_.pid, ev_.tid);
    const auto int32_of = [](const std::optional<std::int64_t>& v) {
      return v && *v >= 0 && *v <= INT32_MAX ? static_cast<std::int32_t>(*v) : -1;
    };
    c.stream = int32_of(record && !ev_.stream ? std::optional<std::int64_t>(ev_.tid) : ev_.stream);
    c.wait_on_stream = int32_of(ev_.wait_on_stream);
    c.event_record_correlation = ev_.wait_on_event_record.value_or(-1);
    trace_.syncs.push_back(c);
  }

  void skip(const char* what, const std::string& why, const char* field) {
    skip_event(trace_, strict_, what, why, fmt::format("traceEvents[{}].{}", events - 1, field));
  }

  bool is_op_range(const std::string& cat) const {
    return (cat == "cpu_op" || cat == "Operator") && ev_.end_ok() && ev_.dur_ns > 0 &&
           (step_prefix_.empty() || ev_.name.compare(0, step_prefix_.size(), step_prefix_) != 0);
  }

  // The second pass: the launches of the kernels link_by_id() left (thread, time, External id) and
  // the ranges of the ops that are neither GEMM nor collective (an aten::copy_ inside an aten::addmm
  // holds the bias copy's launch, not the GEMM's).
  void collect_for_linking() {
    if (ev_.ph != "X" || !ev_.has_ts) return;
    const std::string& cat = ev_.cat;
    if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" || cat == "Driver") {
      if (ev_.correlation && std::binary_search(needed_.begin(), needed_.end(), *ev_.correlation))
        launch_ops_.push_back({thread_of(ev_.pid, ev_.tid), ev_.ts_ns, *ev_.correlation, ev_.external_id.value_or(-1)});
    } else if (std::string dtype; is_op_range(cat) && !has_comm_args() && !(ev_.has_dims && is_gemm_op(ev_.name)) &&
                                   !(ev_.has_dims && shaped_of(dtype))) {
      op_ranges_.push_back({thread_of(ev_.pid, ev_.tid), ev_.ts_ns, ev_.ts_ns + ev_.dur_ns, -1});
    }
  }

 public:
  // Each kernel's op (GpuActivity::op, link), once every event is read:
  //  1. the kernel's own collective args (already linked);
  //  2. its "External id": the launching op's id in every layout since PyTorch 1.13, which writes
  //     kernels' External ids apart from their correlation ids;
  // and in a trace of an older layout (every kernel's External id is its correlation id, or no
  // kernel has one), from a second pass over the file:
  //  3. the External id of its runtime launch (same correlation id), when that is not the
  //     correlation id too;
  //  4. else the innermost op range on the launching thread that holds the launch
  //     (calibrate/traces/op_link.hpp);
  //  5. a kernel whose launch is not in the trace: its External id, whatever it is.
  // Step 2 in a trace of today's layout (some kernel's External id differs from its correlation
  // id: there, a kernel whose two ids are equal is a coincidence of two counters, and its External
  // id is still its op's). In a trace of the older layout (every kernel's External id equals its
  // correlation id, or no kernel has one) no kernel is linked here: returns whether any is left
  // for steps 3 to 5, which need the second pass over the file.
  bool link_by_id() {
    std::sort(trace_.gemm_by_external_id.begin(), trace_.gemm_by_external_id.end());
    std::sort(trace_.comm_by_external_id.begin(), trace_.comm_by_external_id.end());
    std::sort(trace_.shaped_by_external_id.begin(), trace_.shaped_by_external_id.end());
    const bool older = std::none_of(trace_.activities.begin(), trace_.activities.end(), [](const GpuActivity& a) {
      return a.external_id >= 0 && a.correlation >= 0 && a.external_id != a.correlation;
    });
    for (GpuActivity& a : trace_.activities) {
      if (a.link != OpLink::none) continue;
      if ((!older || a.correlation < 0) && a.external_id >= 0) {
        // A kernel with no correlation id has its External id and nothing else: Kineto's roctracer
        // back end (AMD, libkineto RoctracerActivity_inl.h) writes a kernel's args as its op's
        // External id alone.
        by_id(a, a.external_id);
      } else if (older && a.correlation >= 0) {
        needed_.push_back(a.correlation);
      }
    }
    std::sort(needed_.begin(), needed_.end());
    needed_.erase(std::unique(needed_.begin(), needed_.end()), needed_.end());
    return !needed_.empty();
  }

  void begin_link_pass() {
    link_pass_ = true;
    depth_ = 0;
    in_events_array_ = in_event_obj_ = in_args_ = in_distributed_ = false;
  }

  // Steps 3, 4 and 5 for the kernels link_by_id() left, after the second pass.
  void link_by_thread() {
    std::sort(launch_ops_.begin(), launch_ops_.end(),
              [](const Launch& x, const Launch& y) { return x.correlation < y.correlation; });
    const auto launch_of = [&](std::int64_t correlation) -> const Launch* {
      const auto it = std::lower_bound(launch_ops_.begin(), launch_ops_.end(), correlation,
                                       [](const Launch& l, std::int64_t c) { return l.correlation < c; });
      return it != launch_ops_.end() && it->correlation == correlation ? &*it : nullptr;
    };
    std::vector<GpuActivity*> by_thread;
    std::vector<LaunchAt> points;
    for (GpuActivity& a : trace_.activities) {
      if (a.link != OpLink::none || a.correlation < 0 ||
          !std::binary_search(needed_.begin(), needed_.end(), a.correlation))
        continue;
      const Launch* l = launch_of(a.correlation);
      if (l && l->external_id >= 0 && l->external_id != a.correlation) {
        by_id(a, l->external_id);
      } else if (l) {
        by_thread.push_back(&a);
        points.push_back({l->thread, l->ts_ns, a.correlation});
      } else if (a.external_id >= 0) {
        by_id(a, a.external_id);  // no launch recorded: the External id is all there is
      }
    }
    if (by_thread.empty()) return;
    const auto found = innermost_ops(std::move(op_ranges_), std::move(points));
    for (GpuActivity* a : by_thread) {
      const auto it = std::lower_bound(found.begin(), found.end(), std::make_pair(a->correlation, std::int32_t{INT32_MIN}));
      if (it == found.end() || it->first != a->correlation) continue;
      const std::int32_t op = it->second / 3;
      if (it->second % 3 == 2) {
        link_shaped(*a, op);
      } else {
        a->op = op;
        a->link = it->second % 3 ? OpLink::comm : OpLink::gemm;
      }
    }
  }

 private:
  void by_id(GpuActivity& a, std::int64_t id) const {
    const auto find = [](const std::vector<std::pair<std::int64_t, std::int32_t>>& index, std::int64_t key) {
      const auto it = std::lower_bound(index.begin(), index.end(), std::make_pair(key, std::int32_t{INT32_MIN}));
      return it != index.end() && it->first == key ? it->second : -1;
    };
    const std::int32_t c = find(trace_.comm_by_external_id, id), g = find(trace_.gemm_by_external_id, id);
    if (c >= 0 && (a.cls == ActivityClass::communication || g < 0)) {
      a.op = c;
      a.link = OpLink::comm;
    } else if (g >= 0) {
      a.op = g;
      a.link = OpLink::gemm;
    } else {
      link_shaped(a, find(trace_.shaped_by_external_id, id));
    }
  }

  // An attention kernel to its op's attention shape, a memory-bound one to its op's bytes; any
  // other pairing (a GEMM's kernel inside an aten::copy_) stays unlinked.
  void link_shaped(GpuActivity& a, std::int32_t k) const {
    if (k < 0 || (a.kind != KernelKind::attention && a.kind != KernelKind::memory_bound)) return;
    const bool attention = trace_.shaped_ops[static_cast<std::size_t>(k)].batch > 0;
    if (attention != (a.kind == KernelKind::attention)) return;
    a.op = k;
    a.link = OpLink::shaped;
  }

  struct Launch {
    std::int64_t thread, ts_ns, correlation, external_id;
  };
  // (pid, tid) as one key; tid folded to 32 bits.
  static std::int64_t thread_of(std::int64_t pid, std::int64_t tid) {
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(pid) << 32) ^ (static_cast<std::uint64_t>(tid) & 0xffffffffu));
  }
  // A "tid" written as text ("stream 7", "python thread"): its digits when it is a number, else a hash.
  static std::int64_t thread_key(const std::string& s) {
    std::int64_t v = 0;
    if (parse_int(s, v)) return v;
    return static_cast<std::int64_t>(std::hash<std::string>{}(s) & 0x7fffffff);
  }

  RankTrace& trace_;
  NameTable names_;
  std::string step_prefix_;
  const KernelClassifier& kernels_;
  bool strict_ = false;
  std::vector<Key> keys_;
  std::vector<std::optional<KernelFamily>> families_;  // per name id, once classified
  std::vector<Launch> launch_ops_;
  std::vector<OpRange> op_ranges_;
  std::vector<std::int64_t> needed_;  // correlation ids of the kernels left for the second pass
  bool link_pass_ = false;
  int depth_ = 0;
  bool in_events_array_ = false, in_event_obj_ = false, in_args_ = false, in_distributed_ = false;
  Event ev_;
};

}  // namespace

RankTrace read_kineto_json(const std::string& path, const std::string& step_prefix, const KernelClassifier& kernels,
                           bool strict) {
  RankTrace trace;
  trace.file = path;
  trace.format = "kineto";
  TraceStreamBuf buf(path);
  std::istream in(&buf);
  Handler handler(trace, step_prefix, kernels, strict);
  const bool ok = nlohmann::json::sax_parse(in, &handler, nlohmann::json::input_format_t::json, true);
  if (!buf.error().empty()) throw InputError(path, 0, "", buf.error());
  if (!handler.limit_error.empty()) throw InputError(path, 0, "traceEvents", handler.limit_error);
  if (!ok) {
    std::string msg = handler.parse_message;
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 3, column 7: ...".
    const auto at = msg.find("parse error");
    if (at != std::string::npos) msg = msg.substr(at);
    // The "last read" excerpt is the file's raw bytes: keep the message printable.
    for (char& c : msg)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    throw InputError(path, 0, "", "not valid JSON (truncated?): " + msg);
  }
  if (!handler.distributed_error.empty()) {
    const std::string key = handler.distributed_error.substr(0, handler.distributed_error.find(':'));
    throw InputError(path, 0, "distributedInfo." + key, handler.distributed_error.substr(key.size() + 2));
  }
  if (handler.root_is_object && handler.saw_trace_events && handler.link_by_id()) {
    // A second pass over the file for the kernels whose External ids name no op (older layouts):
    // their launches and the ops around them, kept only when needed.
    TraceStreamBuf again(path);
    std::istream in2(&again);
    handler.begin_link_pass();
    if (nlohmann::json::sax_parse(in2, &handler, nlohmann::json::input_format_t::json, true) && again.error().empty())
      handler.link_by_thread();
  }
  if (!handler.root_is_object || !handler.saw_trace_events)
    throw InputError(path, 0, "traceEvents", "no traceEvents array: not a Kineto / Chrome trace");
  if (handler.kernel_events == 0)
    throw InputError(path, 0, "traceEvents",
                     fmt::format("no GPU kernels among {} events{} (no \"X\" event with cat \"kernel\"): record with "
                                 "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]{}",
                                 handler.events,
                                 handler.hip_runtime_events ? fmt::format(", {} of them HIP runtime calls: a ROCm trace",
                                                                          handler.hip_runtime_events)
                                                            : std::string(),
                                 handler.hip_runtime_events ? " (PyTorch's name for the GPU on ROCm too)" : ""));
  return trace;
}

}  // namespace overlap::traces
