// A transformer step's memory per GPU in the CLI (sim/step_memory.hpp): the run report's block and its
// JSON, the warning row above the profile's HBM, `run --fit-only` (the block alone, or a refusal naming
// the scenario file, its workload line and the keys that decide it), and gpu.hbm_bytes checked like
// every other profile key.
#include <cstdint>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/memory_model.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

namespace {

using namespace overlap::test;  // cli, CliResult, TempDir, write_text

const std::string kTrainStep = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/llama3-70b-tp8-train-step.yaml";
const std::string kFsdpStep = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/llama3-70b-tp8xdp2-fsdp-step.yaml";

// Llama-3-70B cut to two layers and 1024 tokens with one scheme: a step the engine runs quickly.
const std::string kSmallStep =
    "hardware: h100-sxm-8x-nvswitch\n"                                                  // 1
    "workload:\n"                                                                       // 2
    "  {kind: transformer, tp: 8, model: llama3-70b, layers: 2, batch: 1, seq: 1024,\n"  // 3
    "   dtype: bf16, pass: step, recompute: selective}\n"                               // 4
    "schemes: [no_overlap]\n";                                                          // 5

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("run --fit-only refuses the 70B TP 8 step on one node, naming the file, line and keys", "[memory][cli]") {
  const CliResult r = cli({"run", kTrainStep, "--fit-only"});
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  // The scenario's `workload:` key is on line 18; the message names the capacity's key and what decides the peak.
  CHECK(contains(r.err, "llama3-70b-tp8-train-step.yaml:18: workload:"));
  CHECK(contains(r.err, "does not fit"));
  CHECK(contains(r.err, "hardware.gpu.hbm_bytes"));
  CHECK(contains(r.err, "workload.tp = 8"));
  CHECK(contains(r.err, "workload.recompute = selective"));
  CHECK(contains(r.err, "workload.parallel.fsdp = none"));
}

TEST_CASE("run --fit-only prints the block of a step that fits, and simulates nothing", "[memory][cli]") {
  // TP 8 x FSDP 32 on the 64-node profile: the states shrink 32-fold and the step fits.
  const CliResult r = cli({"run", kFsdpStep, "--fit-only", "--hardware", "h100-64node-ib400-rail", "--set",
                           "workload.parallel.dp=32", "--format", "json"});
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& m = j.at("memory_per_gpu");
  CHECK(m.at("fits") == true);
  CHECK(m.at("hbm_bytes") == (std::int64_t{80} << 30));
  // The peak is the sum of its parts (cost_model/memory_model.hpp step_memory).
  CHECK(m.at("peak_bytes").get<std::int64_t>() ==
        m.at("params_bytes").get<std::int64_t>() + m.at("grads_bytes").get<std::int64_t>() +
            m.at("optimizer_bytes").get<std::int64_t>() + m.at("activations_bytes").get<std::int64_t>() +
            m.at("buffers_bytes").get<std::int64_t>() + m.at("transient_bytes").get<std::int64_t>());
  // ZeRO-3 over 32: every state is the 32nd part of the TP shard's: 80 layers' 8,557,690,880 parameters,
  // the untied embedding and output layer's 2 x 128256 / 8 x 8192 = 262,668,288 (the step runs them:
  // vocab_size from the config) and the final norm's 8,192: 8,820,367,360 = 32 x 275,636,480.
  CHECK(m.at("params_per_gpu") == 8'820'367'360);
  CHECK(m.at("params_bytes") == std::int64_t{2} * 275'636'480);
  CHECK(m.at("grads_bytes") == std::int64_t{4} * 275'636'480);
  CHECK(m.at("optimizer_bytes") == std::int64_t{12} * 275'636'480);
  CHECK_FALSE(j.contains("results"));  // nothing simulated
  const CliResult table = cli({"run", kFsdpStep, "--fit-only", "--hardware", "h100-64node-ib400-rail", "--set",
                               "workload.parallel.dp=32"});
  CHECK(table.rc == 0);
  CHECK(contains(table.out, "memory per GPU"));
  CHECK_FALSE(contains(table.out, "WARNING"));
}

TEST_CASE("run --fit-only: no capacity, or a workload the memory model does not cover, is refused", "[memory][cli]") {
  const CliResult none = cli({"run", kTrainStep, "--fit-only", "--set", "hardware.gpu.hbm_bytes=0"});
  CHECK(none.rc == 2);
  CHECK(contains(none.err, "hardware.gpu.hbm_bytes"));
  // A forward pass has no step to fit.
  const CliResult forward = cli({"run", kTrainStep, "--fit-only", "--set", "workload.pass=forward", "--set",
                                 "workload.recompute=none"});
  CHECK(forward.rc == 2);
  CHECK(contains(forward.err, "--fit-only"));
  const CliResult csv = cli({"run", kTrainStep, "--fit-only", "--format", "csv"});
  CHECK(csv.rc == 2);
}

TEST_CASE("gpu.hbm_bytes is checked like every profile key", "[memory][cli]") {
  for (const char* bad : {"-1", "1.5", "abc", "1e300"}) {
    const CliResult r = cli({"run", kTrainStep, "--fit-only", "--set", std::string("hardware.gpu.hbm_bytes=") + bad});
    CAPTURE(bad, r.err);
    CHECK(r.rc == 2);
    CHECK(contains(r.err, "hardware.gpu.hbm_bytes"));
  }
}

TEST_CASE("a step's report carries its memory per GPU; a warning row above the HBM", "[memory][cli]") {
  TempDir dir("step-memory");
  const std::string path = (dir.path / "step.yaml").string();
  write_text(path, kSmallStep);
  const CliResult table = cli({"run", path});
  REQUIRE(table.rc == 0);
  CHECK(contains(table.out, "memory per GPU"));
  CHECK_FALSE(contains(table.out, "WARNING"));
  const CliResult json = cli({"run", path, "--format", "json"});
  REQUIRE(json.rc == 0);
  const nlohmann::json m = nlohmann::json::parse(json.out).at("memory_per_gpu");
  // Two layers' stored activations with selective recomputation, TP 8 + SP (memory_model_test checks the form).
  overlap::memory::LayerShape l;
  l.seq = 1024;
  l.micro_batch = 1;
  l.d_model = 8192;
  l.heads = 64;
  l.kv_heads = 8;
  l.d_ffn = 28672;
  l.gated = true;
  l.dropout = false;
  l.attention = overlap::memory::CoreAttention::flash;
  CHECK(m.at("activations_bytes") ==
        2 * overlap::memory::stored_activation_bytes_per_layer(l, {8, true}, overlap::memory::RecomputePolicy::selective));
  CHECK(m.at("fits") == true);
  // 1 GiB of HBM: the same step no longer fits; the report says so and still reports.
  const CliResult small = cli({"run", path, "--set", "hardware.gpu.hbm_bytes=1073741824"});
  CHECK(small.rc == 0);
  CHECK(contains(small.out, "WARNING: the peak"));
  // A forward pass has no memory block (its report is as it was).
  const CliResult forward = cli({"run", path, "--set", "workload.pass=forward", "--set", "workload.recompute=none"});
  CHECK(forward.rc == 0);
  CHECK_FALSE(contains(forward.out, "memory per GPU"));
}
