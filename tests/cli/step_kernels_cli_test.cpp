// The kernels of a dense transformer's training step in a run (cost_model/step_kernels.hpp issued by
// sim/schemes/training_step.cpp): the output layer in the model FLOPs, the loss's all-reduces, what each
// fusion costs, the job figures, and the keys refused where they do not apply (file, line, key).
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

namespace {

using overlap::test::cli;
using overlap::test::CliResult;
using overlap::test::gemm_collective_scenario;
using overlap::test::TempDir;
using overlap::test::write_text;

// Llama-3-70B (vocabulary 128256 from its config.json) cut to two layers and 1024 tokens, one scheme.
const std::string kKernelStep =
    "hardware: h100-sxm-8x-nvswitch\n"                                                  // 1
    "workload:\n"                                                                       // 2
    "  {kind: transformer, tp: 8, model: llama3-70b, layers: 2, batch: 1, seq: 1024,\n"  // 3
    "   dtype: bf16, pass: step, recompute: selective}\n"                               // 4
    "schemes: [no_overlap]\n";                                                          // 5

bool mentions(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

nlohmann::json step_run_json(const std::string& path, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"run", path, "--format", "json"};
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  const CliResult r = cli(args);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out).at("results").at(0);
}

// All-reduces (one entry per call) of `bytes` in a result's per-collective list.
int all_reduce_calls(const nlohmann::json& result, std::int64_t bytes) {
  int calls = 0;
  for (const nlohmann::json& c : result.at("collectives"))
    if (c.at("primitive") == "all_reduce" && c.at("bytes") == bytes) ++calls;
  return calls;
}

}  // namespace

TEST_CASE("a step's model FLOPs include the output layer's GEMM: forward once, backward twice", "[step_kernels][cli]") {
  TempDir dir("step-kernels");
  const std::string path = (dir.path / "step.yaml").string();
  write_text(path, kKernelStep);
  const double with = step_run_json(path, {}).at("step").at("model_flops").get<double>();
  const double without = step_run_json(path, {"workload.vocab=0"}).at("step").at("model_flops").get<double>();
  // tokens x vocab / tp x d_model, 2 FLOPs each, 3 passes: exact in doubles (all factors are small integers).
  CHECK(with - without == Approx(3.0 * 2.0 * 1024 * (128256 / 8) * 8192).epsilon(1e-12));
}

TEST_CASE("the loss all-reduces one fp32 per token: the max, then the sums (unfused: two, fused: one)", "[step_kernels][cli]") {
  TempDir dir("step-kernels");
  const std::string path = (dir.path / "step.yaml").string();
  write_text(path, kKernelStep);
  CHECK(all_reduce_calls(step_run_json(path, {}), 1024 * 4) == 2);
  CHECK(all_reduce_calls(step_run_json(path, {"workload.fused_elementwise=none"}), 1024 * 4) == 3);
  // The gradient norm: one fp32 over the TP group.
  CHECK(all_reduce_calls(step_run_json(path, {}), 4) == 1);
  CHECK(all_reduce_calls(step_run_json(path, {"workload.vocab=0"}), 1024 * 4) == 0);
}

TEST_CASE("unfused kernels make the step longer than TE's, compile's shortest", "[step_kernels][cli]") {
  TempDir dir("step-kernels");
  const std::string path = (dir.path / "step.yaml").string();
  write_text(path, kKernelStep);
  const nlohmann::json none = step_run_json(path, {"workload.fused_elementwise=none"});
  const nlohmann::json te = step_run_json(path, {});
  const nlohmann::json compile = step_run_json(path, {"workload.fused_elementwise=compile"});
  CHECK(none.at("compute_only_us").get<double>() > te.at("compute_only_us").get<double>());
  CHECK(te.at("compute_only_us").get<double>() > compile.at("compute_only_us").get<double>());
  // The model's FLOPs do not depend on how its elementwise kernels are fused.
  CHECK(none.at("step").at("model_flops") == te.at("step").at("model_flops"));
}

TEST_CASE("the job figures are printed under a step, their breakdown adding up", "[step_kernels][cli]") {
  TempDir dir("step-kernels");
  const std::string path = (dir.path / "step.yaml").string();
  write_text(path, kKernelStep);
  const CliResult r = cli({"run", path});
  REQUIRE(r.rc == 0);
  CHECK(mentions(r.out, "job figures per GPU"));
  CHECK(mentions(r.out, "HFU (%)"));
  // A forward pass has no job figures (nor step kernels).
  const CliResult fwd = cli({"run", path, "--set", "workload.pass=forward", "--set", "workload.recompute=none"});
  REQUIRE(fwd.rc == 0);
  CHECK_FALSE(mentions(fwd.out, "job figures"));
}

TEST_CASE("the step-kernel keys are refused where they do not apply, naming file, line and key", "[step_kernels][cli]") {
  TempDir dir("step-kernels");
  const std::string forward = (dir.path / "forward.yaml").string();
  write_text(forward,
             "hardware: h100-sxm-8x-nvswitch\n"                                     // 1
             "workload:\n"                                                          // 2
             "  kind: transformer\n"                                                // 3
             "  tp: 8\n"                                                            // 4
             "  model: llama3-70b\n"                                                // 5
             "  layers: 2\n"                                                        // 6
             "  batch: 1\n"                                                         // 7
             "  seq: 1024\n"                                                        // 8
             "  fused_elementwise: compile\n"                                       // 9
             "schemes: [no_overlap]\n");                                            // 10
  const CliResult r = cli({"run", forward});
  CHECK(r.rc == 2);
  CHECK(mentions(r.err, "forward.yaml:9: workload.fused_elementwise"));
  CHECK(mentions(r.err, "pass: forward"));
  // A single layer workload.
  const std::string mlp = (dir.path / "mlp.yaml").string();
  std::string text = gemm_collective_scenario("reduce_scatter");
  text.insert(text.rfind("schemes:"), "  dropout: 0.1\n");
  write_text(mlp, text + "  - no_overlap\n");
  const CliResult m = cli({"run", mlp});
  CHECK(m.rc == 2);
  CHECK(mentions(m.err, "workload.dropout"));
  CHECK(mentions(m.err, "this workload is gemm_collective"));
  // FP8 scaling on a bf16 run, an unknown fusion.
  const std::string step = (dir.path / "step.yaml").string();
  write_text(step, kKernelStep);
  const CliResult s = cli({"run", step, "--set", "workload.fp8_scaling=rowwise"});
  CHECK(s.rc == 2);
  CHECK(mentions(s.err, "workload.fp8_scaling: scales FP8 GEMM inputs; this workload's dtype is bf16"));
  const CliResult u = cli({"run", step, "--set", "workload.fused_elementwise=apex"});
  CHECK(u.rc == 2);
  CHECK(mentions(u.err, "unknown fused_elementwise 'apex' (known: none, te, compile)"));
}
