#pragma once
// Workloads (design.md "Workloads"). Shapes are written as the whole layer sees them (global batch x
// sequence tokens, model width); builders derive per-rank shapes from the parallelism: TP shards
// weights (column-parallel: N / tp; row-parallel: K / tp) and SP shards activations (tokens / tp).
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cost_model/hardware_profile.hpp"
#include "cost_model/moe_routing.hpp"
#include "cost_model/step_kernels.hpp"
#include "sim/context_parallel.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/workload_kind.hpp"

namespace overlap::sim {

enum class Primitive : std::uint8_t { all_reduce, reduce_scatter, all_gather, all_to_all };
const char* primitive_name(Primitive p);

// One GEMM with a collective after it (all_reduce, reduce_scatter, all_to_all) or an all_gather
// before it (FlashOverlap operator level; CommFuse row/column-parallel projections).
// m, n, k are the GEMM each rank computes (per-rank shape, as FlashOverlap's tables give it).
struct GemmCollective {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::bf16;
  Primitive primitive = Primitive::all_reduce;
  bool rmsnorm_after = false;  // FlashOverlap: the post-reorder cost lands in the following RMSNorm
};

// all-gather -> column-parallel GEMM (d_model -> ffn, gated: 2*ffn) -> activation -> row-parallel
// GEMM (ffn -> d_model) -> reduce-scatter. tokens = batch * seq (global, before SP sharding).
struct MlpTpSp {
  std::int64_t tokens = 0;
  std::int64_t d_model = 0;
  std::int64_t d_ffn = 0;
  bool gated = true;  // SwiGLU: the column-parallel GEMM has 2 * d_ffn outputs
  DType dtype = DType::bf16;
  // false: every rank already holds the whole input, so no all-gather precedes the column-parallel
  // GEMM and only the reduce-scatter is communicated (commfuse-paper Sec. 5 "MLP Layer": the
  // column-parallel projection keeps its conventional design; the experiment measures FuseRS alone).
  bool gather_input = true;
};

// How core attention runs (workload.attention; docs/guide/training.md "Core attention").
//   flash    one tiled kernel over the causal half of the scores, which never leave the SMs
//            (FlashAttention-2, Dao 2023): what every workload runs unless told otherwise.
//   unfused  Megatron-LM's CoreAttention before flash attention (Narayanan et al. SC'21; Korthikanti et
//            al. MLSys'23 Sec. 4.1): Q K^T as one batched GEMM over every s x s score, a fused
//            scale-mask-softmax kernel, dropout on the probabilities, then probabilities x V as a second
//            batched GEMM; every score goes through HBM (sim/schemes/core_attention.hpp).
enum class AttentionImplementation : std::uint8_t { flash, unfused };
const char* attention_implementation_name(AttentionImplementation a);
std::optional<AttentionImplementation> parse_attention_implementation(const std::string& s);

// all-gather -> QKV -> attention -> output projection -> reduce-scatter.
struct AttentionTpSp {
  std::int64_t batch = 0, seq = 0;
  std::int64_t d_model = 0;
  std::int64_t heads = 0, kv_heads = 0;  // kv_heads < heads: GQA
  bool causal = true;
  DType dtype = DType::bf16;
  bool gather_input = true;  // as MlpTpSp::gather_input (commfuse-paper Sec. 5 "Attention Layer")
  // Each head's width; 0 = d_model / heads. Qwen3's MoE models have a wider query/key/value than
  // hidden_size / heads (Qwen3-235B-A22B: 64 x 128 = 8192 against hidden_size 4096).
  std::int64_t head_dim = 0;
  AttentionImplementation implementation = AttentionImplementation::flash;
  bool attention_dropout = false;  // unfused: dropout on the probabilities (Megatron-LM's --attention-dropout)
};

// all-to-all (sequence -> heads) -> attention -> all-to-all (heads -> sequence) (DeepSpeed-Ulysses,
// CommFuse Alg. 5).
struct AttentionUlysses {
  std::int64_t batch = 0, seq = 0;
  std::int64_t d_model = 0;
  std::int64_t heads = 0;
  bool causal = true;
  DType dtype = DType::bf16;
};

// Batch-1 decode over `layers` layers, bound by weight streaming (delayed-tp-blog).
struct DecodeStack {
  int layers = 0;
  std::int64_t d_model = 0;
  std::int64_t d_ffn = 0;
  std::int64_t heads = 0, kv_heads = 0;
  DType dtype = DType::fp8;
  double allreduce_us = -1;  // tau_c: measured all-reduce latency; < 0 = from the collective model
};

// One Mixture-of-Experts layer over an expert-parallel (EP) group (docs/guide/moe.md): router GEMM,
// dispatch all-to-allv, each rank's local experts as grouped GEMMs (gated FFN: gate+up, activation,
// down), combine all-to-allv, shared experts. With expert_tp > 1 every expert's FFN is split over
// expert_tp GPUs (Megatron-core's --expert-tensor-parallel-size, AllToAll dispatcher): the graph's ranks
// are ep x expert_tp, rank = ep_index x expert_tp + etp_index (ETP innermost), and an all-gather /
// reduce-scatter over the ETP group surrounds the expert GEMMs (docs/guide/moe.md "Expert tensor
// parallelism"). Workload::tp holds ep x expert_tp for this kind (the graph's ranks).
// How a MoE layer's dispatch and combine run (workload.all_to_all; docs/guide/moe.md "Dispatch across
// nodes"): NCCL's grouped send/recv (cost_model/all_to_allv.hpp), DeepEP's normal or low-latency kernels
// (cost_model/deepep.hpp) or the hierarchical all-to-all (cost_model/hierarchical_all_to_all.hpp).
enum class MoeAllToAll : std::uint8_t { nccl, deepep, deepep_low_latency, hierarchical };
const char* moe_all_to_all_name(MoeAllToAll a);
std::optional<MoeAllToAll> parse_moe_all_to_all(const std::string& s);

struct Moe {
  int experts = 0;
  int top_k = 0;
  int ep = 0;                        // EP ranks; divides experts
  int expert_tp = 1;                 // GPUs each expert's FFN is split over; divides d_ffn_expert
  std::int64_t d_model = 0;
  std::int64_t d_ffn_expert = 0;     // each expert's (gated) FFN width
  std::int64_t tokens = 0;           // tokens each EP rank routes
  std::optional<double> capacity_factor;  // unset: dropless
  MoeRoutingSpec routing;            // uniform | zipf (seed inside) | histogram (path resolved)
  int shared_experts = 0;            // gated FFNs of d_ffn_expert every rank runs on its own tokens
  DType dtype = DType::bf16;
  std::string file;                  // where it was read (error messages of the histogram)
  int line = 0;
  MoeAllToAll all_to_all = MoeAllToAll::nccl;  // how the dispatch and combine run
  int max_nodes = 0;                 // DeepEP's node-limited routing: a token reaches at most this many nodes (0: any)
};

// Layers composed into a model step (e.g. Llama-3-70B, TP=8): attention + MLP per layer.
// Multi-head latent attention (DeepSeek-V2, Sec. 2.1.2-2.1.3; DeepSeek-V3, Sec. 2.1.1): queries from a
// q_lora-wide latent (0: a plain query projection, DeepSeek-V2-Lite), keys and values from one kv_lora-wide
// latent, plus a decoupled RoPE part of qk_rope per head (the key's shared by all heads). Shapes per rank:
// sim/workload_shapes.hpp mla_shapes.
struct LatentAttention {
  std::int64_t q_lora = 0;   // q_lora_rank (0: no query compression)
  std::int64_t kv_lora = 0;  // kv_lora_rank
  std::int64_t qk_nope = 0;  // qk_nope_head_dim
  std::int64_t qk_rope = 0;  // qk_rope_head_dim
  std::int64_t v_head = 0;   // v_head_dim
};

struct Transformer {
  std::string model;  // a named configuration ("llama3-8b", "llama3-70b") or "custom"
  int layers = 0;
  std::int64_t batch = 0, seq = 0;
  std::int64_t d_model = 0, d_ffn = 0, heads = 0, kv_heads = 0;
  DType dtype = DType::bf16;
  // A mixture-of-experts model (its config has experts: Mixtral, Qwen3-MoE): every layer from
  // dense_layers on runs the MoE block (router, dispatch, experts, combine, shared experts) as its FFN
  // instead of the dense MLP (docs/guide/moe.md "MoE layers in a transformer"). The EP group is folded
  // onto the TP group (ep = tp: Megatron-core's MoE parallel folding), and each rank routes its
  // sequence-parallel shard (moe->tokens = batch x seq / tp), as Megatron-core requires sequence
  // parallelism when expert and tensor parallelism are combined.
  std::optional<Moe> moe = {};
  int dense_layers = 0;  // DeepSeek's first_k_dense_replace: the leading layers keep the dense MLP
  // DeepSeek's attention (its config has kv_lora_rank): MLA instead of grouped-query attention (heads
  // from `heads`, kv_heads unused). Only a MoE transformer runs it (sim/schemes/moe_transformer.cpp).
  std::optional<LatentAttention> mla = {};
  // Each head's width, 0 = d_model / heads (AttentionTpSp::head_dim; Qwen3-MoE's head_dim). Last, so
  // the positional initialisations of the fields above stay as they were.
  std::int64_t head_dim = 0;
  // The vocabulary (the model config's vocab_size, or workload.vocab); 0: no embedding or output layer.
  // A pipeline job's first stage holds the embedding and its last the output layer (sim/step_memory.hpp).
  std::int64_t vocab = 0;
  // The memory-bound kernels of a dense transformer's training step (cost_model/step_kernels.hpp):
  // workload.fused_elementwise, workload.fp8_scaling (FP8 runs) and workload.dropout (> 0: dropout
  // kernels after each block). Other workloads refuse the keys. step_kernels: whether the step runs
  // them at all; the scenario loader sets it for a dense transformer with pass: step (a Workload built
  // in code keeps the layers' GEMMs, attention and collectives alone unless it asks for them).
  bool step_kernels = false;
  step::Fusion fusion = step::Fusion::te;
  step::Fp8Scaling fp8_scaling = step::Fp8Scaling::tensorwise;
  double dropout = 0;
  // workload.attention: a dense transformer's training step only (the scenario loader refuses it
  // elsewhere). Unfused runs its dropout on the probabilities when `dropout` > 0 (Megatron-LM's
  // --attention-dropout, whose default equals --hidden-dropout's 0.1).
  AttentionImplementation attention = AttentionImplementation::flash;
};

// What part of a training step a layer workload runs (docs/guide/training.md). forward is what every
// workload ran before training steps existed; step = the forward then the backward of the same layers.
enum class Pass : std::uint8_t { forward, backward, step };
const char* pass_name(Pass p);
std::optional<Pass> parse_pass(const std::string& s);

// Activation recomputation, Megatron-LM's --recompute-granularity (Korthikanti et al., "Reducing
// Activation Recomputation in Large Transformer Models", Sec. 5): selective redoes core attention
// inside the backward (Megatron-core's default recompute module core_attn); full redoes each layer's
// whole forward, its collectives included, before the layer's backward.
enum class Recompute : std::uint8_t { none, selective, full };
const char* recompute_name(Recompute r);
std::optional<Recompute> parse_recompute(const std::string& s);

// Data-parallel sharding as Megatron-LM and PyTorch FSDP users name it (ZeRO, Rajbhandari et al.,
// Sec. 5 and the communication analysis of Sec. 7): none = DDP (gradient all-reduce per bucket);
// zero1 / zero2 = gradients reduce-scattered per bucket and parameters all-gathered before the forward
// (the same bytes for both: they differ in memory only); zero3 = FSDP: parameters all-gathered before
// every layer's forward and again before its backward, gradients reduce-scattered per layer.
enum class Sharding : std::uint8_t { none, zero1, zero2, zero3 };
const char* sharding_name(Sharding s);
std::optional<Sharding> parse_sharding(const std::string& s);

struct DataParallel {
  int dp = 1;                      // data-parallel replicas of the TP group
  Sharding fsdp = Sharding::none;
  double bucket_mb = 25;           // gradient bucket (PyTorch DDP bucket_cap_mb default 25); none/zero1/zero2
  int prefetch = 1;                // zero3: layers whose parameters are gathered ahead (FSDP2 default 1)
  DType grad_dtype = DType::fp32;  // gradients reduced in fp32 (Megatron-LM's default main_grad)
  // Layers whose gradients the one DDP bucket reduces after the backward (0: the workload's own). Not
  // a key: layer composition (sim/layer_composition.hpp) runs a few layers of a step whose bucket holds
  // the whole model, and each of those runs reduces the whole model's gradients, as the deep step does.
  int gradient_layers = 0;
};

// Pipeline and context parallelism of a transformer training job (docs/guide/pipeline.md): the
// workload's layers cut into pp stages (vpp model chunks each, interleaved), micro_batches micro-batches
// of the workload's batch per step run by `schedule`; the sequence split over cp ranks. Megatron-LM's
// rank order: TP innermost, then CP, DP, and PP outermost.
struct JobParallel {
  int pp = 1;
  int vpp = 1;
  int micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int cp = 1;
  ContextParallel cp_algorithm = ContextParallel::ring;
  // Layers of the first and last stages (0: layers / pp); the rest split evenly (sim/pipeline_layers.hpp).
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  // Is the workload a job of stages or context-parallel ranks (run through sim/pipeline_step)?
  bool active() const { return pp > 1 || cp > 1 || micro_batches > 1; }
};

struct Training {
  Pass pass = Pass::forward;
  Recompute recompute = Recompute::none;
  DataParallel parallel;
  JobParallel job = {};
};

struct Workload {
  WorkloadKind kind = WorkloadKind::gemm_collective;  // names the alternative `shape` holds (validate_workload)
  int tp = 1;  // ranks in the tensor/sequence-parallel group (moe: Moe::ep x Moe::expert_tp)
  std::variant<GemmCollective, MlpTpSp, AttentionTpSp, AttentionUlysses, DecodeStack, Transformer, Moe> shape;
  Training training = {};  // pass, recomputation and data parallelism; the default is a forward pass alone
};

// Does the workload run a backward (pass backward or step)?
bool has_backward(const Workload& w);
// Is it (part of) a training step: a backward, or data-parallel traffic (ZeRO's parameter gathers run
// in a forward pass too)? Only schemes with a backward form (SchemeInfo::backward) run those.
bool is_training_step(const Workload& w);
// Does it have MoE layers (kind moe, or a transformer of a mixture-of-experts model)? Only the schemes
// built for MoE layers run those (sim/schemes/registry.cpp).
bool has_moe_layers(const Workload& w);

}  // namespace overlap::sim
