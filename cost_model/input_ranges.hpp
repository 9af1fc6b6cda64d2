#pragma once
// The valid range of every physical quantity a user can type (profile, scenario, --set, scheme
// parameters): ONE table, so the loaders, the messages and the README's "Bad input" section agree.
// A value outside its range is an InputError naming the file:line (or --set), the key and the
// limit. The limits are physical (no GPU has 5000 SMs or 10 PB/s links) or guard what the simulator
// can count (int64 picoseconds and bytes, cost_model/units.hpp) and afford (a node of a million
// GPUs takes minutes and gigabytes to build). Listed with their reasons in README.md "Bad input"
// and docs/reference/inputs.md "Ranges". A hardware-profile key names its range in its row of
// cost_model/profile_schema.hpp.
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace overlap {

struct InputRange {
  std::string_view quantity;  // what it is, for the README table
  // The key paths outside the hardware profile that use it (README); a profile key names its range
  // in its row of cost_model/profile_schema.hpp.
  std::string_view keys;
  double min = 0;
  double max = 0;
  std::string_view unit;  // "" for counts
  std::string_view why;   // the reason for the limits (README; short)
  bool integer = false;
};

namespace ranges {

// GPU (hardware.gpu.*)
inline constexpr InputRange sm_count{"SM count", "", 1, 4096, "SMs",
                                     "the engine addresses SMs in 12 bits; the largest GPUs have a few hundred", true};
inline constexpr InputRange ctas_per_sm{"GEMM CTAs per SM", "", 1, 64, "CTAs",
                                        "an SM holds at most 32 resident CTAs (Hopper)", true};
inline constexpr InputRange clock_mhz{"clock", "", 0, 1e5, "MHz", "0 = not given; GPUs clock near 2 GHz"};
inline constexpr InputRange peak_tflops{"peak TFLOP/s", "", 1e-3, 1e5, "TFLOP/s",
                                        "GB200 FP8 is about 5,000; below 1 GFLOP/s a GEMM leaves int64 ps"};
inline constexpr InputRange bandwidth_gbps{"bandwidth", "",
                                           1e-3, 1e6, "GB/s",
                                           "HBM3e is 8,000 GB/s; below 1 MB/s a transfer of a few GB leaves int64 ps"};
inline constexpr InputRange copy_engines{"copy engines", "", 1, 64, "copy engines",
                                         "every GPU has at least one; copy-engine schemes need one", true};
inline constexpr InputRange latency_us{"latency / duration", "workload.allreduce_us",
                                       0, 1e6, "us", "one second per step is far beyond any real kernel or link"};
inline constexpr InputRange factor{"model factor", "", 0, 100, "",
                                   "a multiplier on a time or rate"};
inline constexpr InputRange l2_bytes{"L2 capacity", "", 0, 68719476736.0, "bytes",
                                     "0 = not given; H100 has 50 MiB, B200 126 MiB", true};
inline constexpr InputRange hbm_bytes{"HBM capacity", "", 0, 1099511627776.0, "bytes",
                                      "0 = not given; H100 SXM has 80 GiB, H200 141 GiB, MI300X 192 GiB", true};
// One 128x128x1024 tile on one SM: below 0.1 ns the rate is > 4e5 TFLOP/s per SM, above 1 s it is
// slower than a CPU.
inline constexpr InputRange gemm_tile_us{"GEMM tile time", "", 1e-4, 1e6, "us",
                                         "0 = derive from peak_tflops; else one 128x128x1024 tile on one SM"};
inline constexpr InputRange l2_reuse{"L2 reuse", "", 1, 1e4, "",
                                     "every operand byte is read at least once"};
inline constexpr InputRange full_rate_sms{"GEMM full-rate SMs", "", 0, 4096, "SMs",
                                          "0 = not modelled; else SMs of one physical GPU"};
inline constexpr InputRange channels{"channels", "", 1, 4096,
                                     "channels", "a channel holds an SM (at most gpu.sm_count)", true};

// Fabric (hardware.fabric.*)
inline constexpr InputRange num_gpus{"GPU count", "", 1, 65536, "GPUs",
                                     "a node of 65,536 GPUs builds in about a second; a million takes minutes and GB",
                                     true};
inline constexpr InputRange gpus_per_group{"GPUs per node / NUMA node", "",
                                           0, 65536, "GPUs", "0 = not given; at most fabric.num_gpus", true};
inline constexpr InputRange nics_per_node{"NICs per node", "", 0, 65536, "NICs",
                                          "0 = one per GPU; must divide fabric.gpus_per_node", true};
inline constexpr InputRange nodes_per_leaf{"nodes per leaf switch", "", 0, 65536, "nodes",
                                        "0 = one switch tier; a 64-port leaf holds at most 64 nodes of a rail", true};
inline constexpr InputRange fabric_nodes{"explicit fabric nodes / edges", "", 1, 1'000'000,
                                         "entries", "keeps the fabric small enough to build in seconds", true};

// Curves and measured GEMMs (hardware.curves.*, hardware.gemm_profiles[])
inline constexpr InputRange curve_bytes{"curve message size", "", 1, 1099511627776.0, "bytes",
                                        "1 TiB: larger than any GPU memory", true};
inline constexpr InputRange curve_us{"curve time", "", 0, 1e6, "us",
                                     "one second per collective is far beyond any measurement"};
inline constexpr InputRange curve_points{"curve points", "", 1, 10000, "points",
                                         "nccl-tests prints about 30 sizes", true};
inline constexpr InputRange tile{"GEMM tile edge", "", 1, 4096, "elements",
                                 "CUTLASS tiles are 64..256", true};

// Workload (workload.*)
inline constexpr InputRange tp{"tensor-parallel ranks", "workload.tp", 1, 65536, "ranks",
                               "at most fabric.num_gpus", true};
inline constexpr InputRange gemm_dim{"GEMM dimension", "workload.m, n, k", 1, 16777216,
                                     "elements", "2^24: sizes stay far inside int64 bytes; LLM dimensions are < 2^18",
                                     true};
inline constexpr InputRange tokens{"tokens", "workload.tokens, workload.seq, workload.batch x workload.seq", 1,
                                   16777216, "tokens", "2^24 tokens per layer: 16x Llama-3's largest global batch",
                                   true};
inline constexpr InputRange batch{"batch", "workload.batch", 1, 1048576, "sequences",
                                  "2^20; batch x seq is also limited to 2^24 tokens", true};
inline constexpr InputRange width{"model width", "workload.d_model, workload.d_ffn, workload.head_dim", 1, 1048576, "elements",
                                  "2^20: the largest published models are < 2^17 wide", true};
inline constexpr InputRange heads{"attention heads", "workload.heads, workload.kv_heads", 1, 65536, "heads",
                                  "kv_heads may also be 0 (= heads)", true};
inline constexpr InputRange vocab{"vocabulary", "workload.vocab", 0, 16777216, "tokens",
                                  "2^24: published vocabularies are < 2^18; 0 = no embedding or output layer", true};
inline constexpr InputRange dropout{"dropout probability", "workload.dropout", 0, 0.9, "",
                                    "Megatron-LM's --hidden-dropout: GPT-3 0.1, Llama 0"};
inline constexpr InputRange layers{"layers", "workload.layers", 1, 1024, "layers",
                                   "the largest published models have about 128; each layer adds graph nodes", true};
inline constexpr InputRange dp{"data-parallel replicas", "workload.parallel.dp", 1, 65536, "replicas",
                               "dp x tp is at most fabric.num_gpus", true};
inline constexpr InputRange bucket_mb{"gradient bucket", "workload.parallel.bucket_mb", 0.001, 1048576, "MiB",
                                      "PyTorch DDP's default is 25; below 1 KiB every weight is a bucket of its own"};
inline constexpr InputRange prefetch{"FSDP prefetch", "workload.parallel.prefetch", 0, 1024, "layers",
                                     "layers gathered ahead; at most the model's layers matter", true};
// Pipeline and context parallelism (workload.parallel.*, docs/guide/pipeline.md).
inline constexpr InputRange pp{"pipeline stages", "workload.parallel.pp", 1, 1024, "stages",
                               "must divide the layers; tp x cp x pp x dp is at most fabric.num_gpus", true};
inline constexpr InputRange vpp{"model chunks per stage", "workload.parallel.vpp", 1, 1024, "chunks",
                                "interleaved schedule only; must divide layers / pp", true};
inline constexpr InputRange micro_batches{"micro-batches per step", "workload.parallel.micro_batches", 1, 65536,
                                          "micro-batches", "at least pp for 1f1b and interleaved (a multiple of pp)", true};
inline constexpr InputRange stage_layers{"layers of the first or last pipeline stage",
                                         "workload.parallel.first_stage_layers, workload.parallel.last_stage_layers", 1,
                                         1024, "layers", "the rest must split evenly over the other stages (and by vpp)",
                                         true};
inline constexpr InputRange cp{"context-parallel ranks", "workload.parallel.cp", 1, 65536, "ranks",
                               "2 cp must divide the sequence (causal load balancing)", true};
// The moe workload (docs/guide/moe.md).
inline constexpr InputRange experts{"experts", "workload.experts, workload.top_k", 1, 65536, "experts",
                                    "DeepSeek-V3 has 256 routed experts; the routing is EP x experts counts", true};
inline constexpr InputRange shared_experts{"shared experts", "workload.shared_experts", 0, 1024, "experts",
                                           "DeepSeek-V3 has 1", true};
inline constexpr InputRange max_nodes{"nodes a token reaches", "workload.max_nodes", 1, 65536, "nodes",
                                   "DeepSeek-V3 sends a token to at most 4 nodes; at most the EP group's nodes", true};
inline constexpr InputRange seed{"seed", "workload.seed", 0, 9007199254740992.0, "", "2^53: exact in JSON", true};

// Scheme parameters (schemes[].params.*, --param)
inline constexpr InputRange chunks{"integer scheme knob (chunks, streams, SMs, wave sizes)",
                                   "schemes.N.params.<int knob>, --param", -1, 1048576, "",
                                   "-1 = the scheme's documented default; 2^20: each chunk adds graph nodes", true};

inline constexpr std::array kAll = {&sm_count, &ctas_per_sm,   &clock_mhz, &peak_tflops, &bandwidth_gbps,
                                    &copy_engines, &latency_us, &gemm_tile_us, &factor,    &l2_reuse,    &l2_bytes,    &hbm_bytes,   &full_rate_sms,    &channels,
                                    &num_gpus,  &gpus_per_group, &nics_per_node, &nodes_per_leaf, &fabric_nodes, &curve_bytes, &curve_us,
                                    &curve_points, &tile,       &tp,        &gemm_dim,    &tokens,
                                    &batch,     &width,         &vocab,     &dropout,   &heads,     &layers,      &dp,          &bucket_mb,
                                    &prefetch,  &pp,           &vpp,       &micro_batches, &stage_layers, &cp,
                                    &experts,       &shared_experts, &max_nodes, &seed, &chunks};

}  // namespace ranges

// "[1, 4096] SMs"
std::string range_text(const InputRange& r);
// nullopt when `value` lies in the range (and is whole for an integer range), else the complaint,
// e.g. "must be in [1, 4096] SMs (got 5000): the engine addresses SMs in 12 bits; ...".
std::optional<std::string> range_violation(const InputRange& r, double value, const std::string& got_text = "");

}  // namespace overlap
