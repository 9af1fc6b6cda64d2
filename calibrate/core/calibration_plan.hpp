#pragma once
// What a calibration run measures: the GEMM shape grid, the SM counts of the green-context sweep,
// the transfer sizes, the CTA counts of the SM copy kernel, and the nccl-tests bus-bandwidth
// factors. Plain data, shared by the CUDA driver (which runs it) and the tests (which check it),
// so the plan can be read and changed without a GPU. Sized so that a whole single-GPU run of one
// H100 stays well under the 10 minutes of device time a calibration is allowed.
#include <cstdint>
#include <string>
#include <vector>

namespace overlap::calibrate {

struct GemmConfig {
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype = "bf16";  // bf16 | fp16 | fp8 (fp8: e4m3 inputs, bf16 output)
};

// The whole-GPU cuBLASLt grid: bf16 over M, N, K in {1024, 4096, 8192}; fp16 and fp8 over the
// square shapes; plus the GEMMs of the scheme sweep (calibrate/configs), so their profiles exist.
std::vector<GemmConfig> gemm_grid();

// Shapes timed on k SMs (green contexts) and the k values: multiples of `min_partition` (8 on
// Hopper, read from the device) up to sm_count, with sm_count itself last.
std::vector<GemmConfig> gemm_sm_shapes();
std::vector<int> sm_partition_counts(int sm_count, int min_partition);

// The wave-profile sweep: N and K fixed, M growing in steps of 128 rows so the tile count crosses
// several multiples of the SM count.
std::vector<GemmConfig> gemm_wave_shapes(int sm_count);

// A GEMM whose 128x128, 256x128, 128x256 and 256x256 tile counts are all whole multiples of
// sm_count (M = 256 a, N = 256 b with a * b = sm_count, a <= b the most square factor pair), so its
// duration divided by its tile-equivalents is the 128x128x1024 tile time with no partial wave.
GemmConfig gemm_tile_shape(int sm_count, std::int64_t k);

// gemm_tile_us: time one SM spends on one 128x128 output tile over K = 1024, from a whole-GPU
// duration: duration * sm_count / (m n k / (128 * 128 * 1024)).
double gemm_tile_us_from(double duration_us, std::int64_t m, std::int64_t n, std::int64_t k, int sm_count);

// The training step's GEMMs (gemm_backward): every linear of one Llama-3-70B layer at TP 8 + SP over
// 8192 tokens (scenarios/llama3-70b-tp8-train-step.yaml), each as the step runs it: the forward in
// layout nn, its dgrad (M x K x N of the forward's M x N x K) in nt, its wgrad (K x N x M) in tn; and
// every dgrad and wgrad shape again in nn, so what the layout costs is told apart from the shape.
struct TrainingGemm {
  GemmConfig shape;
  std::string layout;  // nn | nt | tn (kernels/gemm/cublaslt_gemm.hpp OperandLayout)
  std::string role;    // "<linear>.<forward|dgrad|wgrad>"
};
std::vector<TrainingGemm> training_gemms();

// One rank's expert GEMMs of a MoE layer (grouped_gemm): one bf16 GEMM of rows[e] x n x k per local
// expert e with rows (an expert with none has no GEMM), run as one grouped cuBLAS call and as one
// cuBLASLt GEMM per expert. The cases are the shipped MoE scenarios' gate+up and down projections per
// rank (Qwen3-235B EP 8, DeepSeek-V3 EP 64, Mixtral-8x7B EP 4), with uniform and Zipf-skewed rows, and
// a decode-sized batch where most experts get a handful of rows.
struct GroupedGemmCase {
  std::string name;
  std::int64_t n = 0, k = 0;
  std::vector<std::int64_t> rows;  // per local expert
};
std::vector<GroupedGemmCase> grouped_gemm_cases();

// `total` rows over `groups` experts in Zipf(s) proportions (expert e's share 1 / (e + 1)^s; s = 0
// is uniform), the expected counts rounded by largest remainder (ties to the lower expert): the
// counts sum to `total` and never increase with e. Throws std::invalid_argument for total < 0,
// groups < 1 or s < 0.
std::vector<std::int64_t> zipf_rows(std::int64_t total, int groups, double s);

// Transfer sizes: 1 KiB .. 1 GiB, doubling (21 sizes).
std::vector<std::int64_t> transfer_sizes();
// SM copy kernel CTA counts (k <= sm_count), and the sizes each is timed at.
std::vector<int> sm_copy_ctas(int sm_count);
std::vector<std::int64_t> sm_copy_sizes();
// CTAs of the copy kernel that runs beside the interference GEMM.
std::vector<int> interference_ctas(int sm_count);

// nccl-tests' bus-bandwidth factor (src/*.cu; facts.md "nccl-tests bus bandwidth"): all_reduce
// 2(n-1)/n, reduce_scatter / all_gather / all_to_all (n-1)/n. Throws std::invalid_argument for an
// unknown primitive or ranks < 1.
double busbw_factor(const std::string& primitive, int ranks);

// `<gpu>-<host>` with every character outside [a-z0-9._-] lowered or replaced by '-', runs of '-'
// collapsed ("NVIDIA H100 80GB HBM3", "node-7" -> "nvidia-h100-80gb-hbm3-node-7").
std::string results_dir_name(const std::string& gpu_name, const std::string& host);

}  // namespace overlap::calibrate
