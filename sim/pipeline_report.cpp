// A job's figures in the report and its schedule in the trace (pipeline_report.hpp).
#include "sim/pipeline_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/report.hpp"

namespace overlap::sim {

namespace {

double job_us(Ps ps) { return static_cast<double>(ps) / 1e6; }
std::string job_ms(Ps ps) { return fmt::format("{:.3f}", static_cast<double>(ps) / 1e9); }
std::string job_gib(Bytes b) { return fmt::format("{:.2f}", static_cast<double>(b) / static_cast<double>(Bytes{1} << 30)); }

std::string job_heading(const Workload& w) {
  const JobParallel& j = w.training.job;
  const auto& t = std::get<Transformer>(w.shape);
  std::string cp = j.cp > 1 ? fmt::format(", CP {} ({})", j.cp, context_parallel_name(j.cp_algorithm)) : std::string();
  std::string vpp = j.vpp > 1 ? fmt::format(" x {} chunks", j.vpp) : std::string();
  // Uneven first and last stages (workload.parallel.first_stage_layers, last_stage_layers): each stage's
  // layers; the stage step above runs the largest stage's (stage_workload).
  const std::vector<int> stage_layers = pipeline_stage_layers(w, pipeline_parallel_of(w));
  const int largest = *std::max_element(stage_layers.begin(), stage_layers.end());
  if (j.first_stage_layers > 0 || j.last_stage_layers > 0)
    vpp += fmt::format(" of {} layers", fmt::join(stage_layers, "/"));
  return fmt::format(
      "job: PP {}{} ({} schedule, {} micro-batches a step){}, TP {}, DP {}: {} GPUs. The tables above are one stage's "
      "step of one micro-batch ({} layers, {} tokens per rank{}); the job below composes each stage's passes by the "
      "schedule (docs/guide/pipeline.md). exposed PP = the busiest stage's idle time (bubble) and what the stage-to-"
      "stage send/recv adds to it; exposed CP = context parallelism's transfers not hidden behind attention; "
      "optimizer = the slowest stage's FP8 weight casts and optimizer after the gradient reduction{}; times in ms",
      j.pp, vpp, pipeline_schedule_name(j.schedule), j.micro_batches, cp, w.tp, std::max(1, w.training.parallel.dp),
      std::int64_t{w.tp} * j.cp * j.pp * std::max(1, w.training.parallel.dp), largest, t.batch * t.seq / j.cp,
      j.cp > 1 ? ", before the ring's other steps" : "",
      j.schedule == PipelineSchedule::dualpipe
          ? "; exposed DP holds the all-reduce of each stage's gradients with the GPU holding the other copy of its "
            "two model stages (DualPipe's two parameter copies)"
          : "");
}

char pass_letter(PipelinePass p) {
  switch (p) {
    case PipelinePass::forward: return 'F';
    case PipelinePass::backward: return 'B';
    case PipelinePass::weight: return 'W';
  }
  return '?';
}

}  // namespace

std::string format_pipeline_report(const PipelineReport& report) {
  if (report.results.empty()) return {};
  std::string out = "\n" + wrap_text(job_heading(report.workload), kTableWidth, "  ");
  // Times in ms (the heading says so): the job table keeps to the report's 120 columns.
  const std::vector<std::string> headers = {"scheme",     "step (ms)",  "bubble (%)", "exposed PP", "of it p2p",
                                            "exposed CP", "exposed DP", "optimizer",  "tokens/s"};
  std::vector<std::vector<std::string>> rows;
  for (const PipelineStepResult& r : report.results)
    rows.push_back({r.scheme, job_ms(r.step_ps), fmt::format("{:.1f}", 100.0 * r.bubble_fraction), job_ms(r.bubble_ps),
                    job_ms(r.exposed_p2p_ps), job_ms(r.exposed_cp_ps), job_ms(r.exposed_dp_ps + r.mirror_grad_ps),
                    job_ms(r.optimizer_ps), fmt::format("{:.0f}", r.tokens_per_s)});
  std::vector<std::size_t> width = column_widths(headers, rows);
  std::string align = "<" + std::string(headers.size() - 1, '>');
  out += table_line(headers, width, align);
  for (const auto& row : rows) out += table_line(row, width, align);

  const PipelineStepResult& first = report.results.front();
  out += "\n" + wrap_text(fmt::format("per stage ({}; micro-batch chunks held = activations in flight at the stage's "
                                      "peak; memory = that stage's peak per GPU)",
                                      first.scheme),
                          kTableWidth, "  ");
  const std::vector<std::string> stage_headers = {"stage", "busy (ms)", "idle (ms)", "chunks held", "peak memory (GiB)", "fits"};
  std::vector<std::vector<std::string>> stage_rows;
  for (std::size_t s = 0; s < first.timeline.busy_ps.size(); ++s) {
    const Ps busy = first.timeline.busy_ps[s];
    std::string mem = "-", fits = "-";
    if (s < report.stage_memory.size()) {
      mem = job_gib(report.stage_memory[s].bytes.peak_bytes);
      fits = report.stage_memory[s].hbm_bytes == 0 ? "not given" : report.stage_memory[s].fits() ? "yes" : "NO";
    }
    stage_rows.push_back({std::to_string(s), job_ms(busy), job_ms(first.pipeline_ps - busy),
                          std::to_string(first.timeline.peak_in_flight[s]), mem, fits});
  }
  width = column_widths(stage_headers, stage_rows);
  align = std::string(stage_headers.size(), '>');
  out += table_line(stage_headers, width, align);
  for (const auto& row : stage_rows) out += table_line(row, width, align);
  const auto full = std::find_if(report.stage_memory.begin(), report.stage_memory.end(),
                                 [](const StepMemory& m) { return !m.fits(); });
  if (full != report.stage_memory.end())
    out += wrap_text(fmt::format("WARNING: stage {} needs {} GiB per GPU, above the profile's {} GiB: this job does not "
                                 "fit (`run --fit-only` refuses it)",
                                 std::max(0, full->stage), job_gib(full->bytes.peak_bytes), job_gib(full->hbm_bytes)),
                     kTableWidth, "  ");
  return out;
}

nlohmann::json pipeline_report_json(const PipelineReport& report) {
  const JobParallel& j = report.workload.training.job;
  nlohmann::json out;
  out["pp"] = j.pp;
  out["vpp"] = j.vpp;
  out["micro_batches"] = j.micro_batches;
  out["schedule"] = pipeline_schedule_name(j.schedule);
  out["cp"] = j.cp;
  out["cp_algorithm"] = context_parallel_name(j.cp_algorithm);
  out["definitions"] = job_heading(report.workload);
  nlohmann::json rows = nlohmann::json::array();
  for (const PipelineStepResult& r : report.results) {
    nlohmann::json row;
    row["scheme"] = r.scheme;
    row["step_us"] = job_us(r.step_ps);
    row["pipeline_us"] = job_us(r.pipeline_ps);
    row["bubble_fraction"] = r.bubble_fraction;
    row["exposed_pp_us"] = job_us(r.bubble_ps);
    row["exposed_p2p_us"] = job_us(r.exposed_p2p_ps);
    row["exposed_bubble_us"] = job_us(r.exposed_bubble_ps);
    row["exposed_cp_us"] = job_us(r.exposed_cp_ps);
    row["exposed_dp_us"] = job_us(r.exposed_dp_ps);
    if (j.schedule == PipelineSchedule::dualpipe) row["mirror_grad_us"] = job_us(r.mirror_grad_ps);
    row["optimizer_us"] = job_us(r.optimizer_ps);
    row["tokens_per_s"] = r.tokens_per_s;
    row["chunk_forward_us"] = job_us(r.chunk_forward_ps);
    row["chunk_backward_us"] = job_us(r.chunk_backward_ps);
    row["p2p_bytes"] = r.p2p_bytes;
    row["p2p_us"] = job_us(r.p2p_ps);
    row["cp"] = {{"kv_bytes", r.cp.kv_bytes},
                 {"kv_us", job_us(r.cp.kv_ps)},
                 {"block_forward_us", job_us(r.cp.block_forward_ps)},
                 {"block_backward_us", job_us(r.cp.block_backward_ps)},
                 {"layer_forward_extra_us", job_us(r.cp.forward_extra_ps)},
                 {"layer_backward_extra_us", job_us(r.cp.backward_extra_ps)},
                 {"layer_forward_exposed_us", job_us(r.cp.forward_exposed_ps)},
                 {"layer_backward_exposed_us", job_us(r.cp.backward_exposed_ps)}};
    nlohmann::json stages = nlohmann::json::array();
    for (std::size_t s = 0; s < r.timeline.busy_ps.size(); ++s)
      stages.push_back({{"stage", s},
                        {"busy_us", job_us(r.timeline.busy_ps[s])},
                        {"idle_us", job_us(r.pipeline_ps - r.timeline.busy_ps[s])},
                        {"peak_chunks_in_flight", r.timeline.peak_in_flight[s]}});
    nlohmann::json around = nlohmann::json::array();
    for (std::size_t vs = 0; vs < r.stage_kernels.size(); ++vs)
      around.push_back({{"virtual_stage", vs},
                        {"forward_kernels_us", job_us(r.stage_kernels[vs].forward_ps)},
                        {"backward_kernels_us", job_us(r.stage_kernels[vs].backward_ps)},
                        {"once_per_step_us", job_us(r.stage_kernels[vs].once_per_step_ps)}});
    row["virtual_stage_kernels"] = around;
    row["stages"] = stages;
    rows.push_back(row);
  }
  out["results"] = rows;
  nlohmann::json memory = nlohmann::json::array();
  for (const StepMemory& m : report.stage_memory) memory.push_back(step_memory_json(m));
  out["stage_memory"] = memory;
  return out;
}

nlohmann::json pipeline_trace_events(const PipelineStepResult& result, int pid) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", "pipeline (" + result.scheme + ")"}}}});
  for (std::size_t s = 0; s < result.timeline.stages.size(); ++s) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", s},
                      {"args", {{"name", fmt::format("stage {}", s)}}}});
    for (const PipelineSlot& slot : result.timeline.stages[s]) {
      std::string name = fmt::format("{}{}", pass_letter(slot.work.pass), slot.work.micro_batch);
      if (slot.work.chunk > 0) name += fmt::format(".c{}", slot.work.chunk);
      events.push_back({{"ph", "X"}, {"name", name}, {"cat", "pipeline"}, {"pid", pid}, {"tid", s},
                        {"ts", job_us(slot.start_ps)}, {"dur", job_us(slot.end_ps - slot.start_ps)},
                        {"args", {{"micro_batch", slot.work.micro_batch}, {"chunk", slot.work.chunk}}}});
    }
  }
  return events;
}

}  // namespace overlap::sim
