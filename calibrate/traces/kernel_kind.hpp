#pragma once
// Kernel families, recognised on the kernel's own name.
//
// A profiler records a kernel's demangled signature: return type, qualified name, template
// arguments and parameter list ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<..., cutlass::
// bfloat16_t, ...>>(Flash_fwd_params)"). The template arguments name the types a kernel is built
// from (CUTLASS, cute, gemm policies), not what the kernel does, so the family is read from the
// kernel's own name: its unqualified identifier (flash_fwd_kernel) and its namespace (flash). A
// launcher template whose identifier says nothing (cutlass::Kernel, cutlass::Kernel2,
// cutlass::device_kernel, FlashAttention 3's enable_sm90_or_later, Composable Kernel's ck_tile::kentry)
// is looked through to its first template argument that is a type, which is the kernel it runs. A
// name left mangled (_ZN5aiter...) is read for its nested name first.
//
// Families, first match wins:
//   communication  by library: NCCL / RCCL (nccl* names: RCCL keeps NCCL's, ncclDevKernel_Generic,
//                  ncclKernel_AllReduce_RING_LL_Sum_bf16), DeepEP (namespace deep_ep: intranode /
//                  internode / internode_ll dispatch, combine, notify_dispatch, cached_notify, ...;
//                  not its layout kernels), NVSHMEM (nvshmem* names), TE userbuffers (userbuffers*,
//                  kuserbuffers*), FLUX (namespace flux, except its fused GEMM kernels, which are
//                  GEMMs), PyTorch symmetric memory (namespaces symmetric_memory, intra_node_comm),
//                  peer copies (a copy whose kind is PtoP);
//   attention      FlashAttention 2 / 3 and FlashInfer (flash*), cuDNN SDPA (sdpa), TE fused
//                  attention (fused_attn), xFormers / PyTorch memory-efficient attention and
//                  Composable Kernel / aiter on AMD (fmha*: ck_tile::FmhaFwdKernel, aiter::fmha_fwd_*),
//                  names with attention / attn, the words mha / mqa / gqa / mla (aiter::mla_dec_*);
//   grouped_gemm   CUTLASS GemmGrouped, GemmUniversal over a GroupProblemShape (CUTLASS 3's grouped
//                  GEMM), names with grouped gemm / grouped mm, Triton's fused_moe, a MoE kernel that
//                  is a GEMM (ck_tile::MoeFlatmmKernel) and aiter's fmoe_*;
//   gemm           cuBLAS / cuBLASLt / CUTLASS names (gemm, gemv, xmma, nvjet, sgemm, s16816gemm, ...;
//                  not fbgemm, which is a library's name), Inductor's matmul templates (triton_tem
//                  with mm / addmm / bmm); on AMD Tensile's kernels as rocBLAS and hipBLASLt run them
//                  (Cijk_Ailk_Bljk_..., Custom_Cijk_...), Composable Kernel's (kernel_gemm_xdl_*,
//                  FlatmmKernel), the skinny wvSplitK;
//   memory_bound   elementwise, norms, reductions (split-K reduce too), softmax, copies, casts,
//                  embeddings, permutes, gathers, optimizers, Inductor's pointwise / reduction
//                  kernels (triton_poi / triton_red / triton_per), sorts and scans; on AMD the
//                  runtime's blit kernels (__amd_rocclr_copyBuffer, __amd_rocclr_fillBuffer*);
//   unknown        everything else: listed by time so the user can name it.
// A user's own patterns (--comm-kernel, --compute-kernel: ECMAScript regular expressions searched
// in the whole signature) come before all of these; --comm-kernel first.
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

namespace overlap::traces {

enum class KernelKind : std::uint8_t { unknown, gemm, grouped_gemm, attention, memory_bound, communication, compute, copy };
enum class CommLibrary : std::uint8_t { none, nccl, deepep, nvshmem, userbuffers, flux, symmetric_memory, peer_copy, user };

struct KernelFamily {
  KernelKind kind = KernelKind::unknown;
  CommLibrary library = CommLibrary::none;  // communication only
  bool operator==(const KernelFamily&) const = default;
};

// The parts of a demangled signature that say what the kernel is, launchers looked through:
// "void cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>(Params)" -> scope "flash",
// identifier "FlashAttnFwdSm90", first_argument its first template argument ("" when none).
struct KernelName {
  std::string scope;       // namespaces and enclosing classes, "::"-joined; "" at global scope
  std::string identifier;  // the unqualified name, without template arguments
  std::string first_argument;
};
KernelName kernel_own_name(const std::string& signature);

// The family of a kernel by its signature, without a user's patterns.
KernelFamily builtin_kernel_family(const std::string& signature);

// "gemm", "grouped_gemm", "attention", "memory_bound", "collective" (every communication kernel:
// NCCL's, or a step of another library's collective), "compute" (a user's compute pattern),
// "copy", "unknown".
const char* kind_name(KernelKind kind);
// "nccl", "deepep", "nvshmem", "userbuffers", "flux", "symmetric_memory", "peer_copy", "user"; "" for none.
const char* library_name(CommLibrary library);

// The built-in families with a user's patterns in front.
class KernelClassifier {
 public:
  KernelClassifier() = default;
  // Throws std::regex_error for a pattern that is no regular expression.
  KernelClassifier(const std::vector<std::string>& comm_patterns, const std::vector<std::string>& compute_patterns);
  KernelFamily classify(const std::string& signature) const;
  // A copy (Kineto gpu_memcpy / gpu_memset, nsys MEMCPY / MEMSET) by its name: peer copies
  // ("Memcpy PtoP ...") are communication, the others copies.
  KernelFamily classify_copy(const std::string& name) const;

 private:
  std::vector<std::regex> comm_, compute_;
};

}  // namespace overlap::traces
