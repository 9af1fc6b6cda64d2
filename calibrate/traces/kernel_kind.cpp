// Kernel families by the kernel's own name (calibrate/traces/kernel_kind.hpp).
#include "calibrate/traces/kernel_kind.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "cost_model/text.hpp"

namespace overlap::traces {
namespace {

bool has(const std::string& haystack, const char* needle) { return haystack.find(needle) != std::string::npos; }

bool has_any(const std::string& haystack, std::initializer_list<const char*> needles) {
  return std::any_of(needles.begin(), needles.end(), [&](const char* n) { return has(haystack, n); });
}

bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The identifier's words: split at non-alphanumerics and where lower case meets upper case
// (splitKreduce -> split, kreduce; FlashAttnFwdSm90 -> flash, attn, fwd, sm90), lower-cased.
std::vector<std::string> words(const std::string& id) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(id[i]);
    if (!std::isalnum(c)) {
      if (!cur.empty()) out.push_back(lowercase(cur));
      cur.clear();
      continue;
    }
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(id[i - 1])) && !cur.empty()) {
      out.push_back(lowercase(cur));
      cur.clear();
    }
    cur += static_cast<char>(c);
  }
  if (!cur.empty()) out.push_back(lowercase(cur));
  return out;
}

bool has_word(const std::vector<std::string>& ws, std::initializer_list<const char*> wanted) {
  for (const std::string& w : ws)
    for (const char* x : wanted)
      if (w == x) return true;
  return false;
}

// Position of the bracket closing the one at `open` ('<' or '('), or npos.
std::size_t closing(const std::string& s, std::size_t open) {
  int angle = 0, paren = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    switch (s[i]) {
      case '<': ++angle; break;
      case '>': --angle; break;
      case '(': ++paren; break;
      case ')': --paren; break;
      default: continue;
    }
    if (angle == 0 && paren == 0) return i;
  }
  return std::string::npos;
}

// Launcher templates whose identifier says nothing of the kernel they run.
bool is_launcher(const std::string& id) {
  static const char* kLaunchers[] = {"Kernel", "Kernel2", "device_kernel", "kentry"};
  for (const char* l : kLaunchers)
    if (id == l) return true;
  return starts(id, "enable_sm");  // FlashAttention 3 / CUTLASS: enable_sm90_or_later<K>, enable_sm80_to_sm89<K>
}

std::string trimmed(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// A name the profiler left mangled (AMD's aiter assembly kernels appear as
// "_ZN5aiter27mxfp4_quant_moe_sort_kernelI...EEvPT0_..."): its nested name, read by the Itanium C++
// ABI's <nested-name> rule (N <length><identifier>... E) or an unscoped <length><identifier>, as
// "aiter::mxfp4_quant_moe_sort_kernel"; template arguments and parameters are dropped. The text
// unchanged when it is not a mangled name.
std::string unmangled_name(const std::string& s) {
  if (s.rfind("_Z", 0) != 0) return s;
  std::size_t i = 2;
  const bool nested = i < s.size() && s[i] == 'N';
  if (nested) ++i;
  std::string out;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    std::size_t len = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) len = len * 10 + static_cast<std::size_t>(s[i++] - '0');
    if (len == 0 || len > s.size() - i) return s;
    if (!out.empty()) out += "::";
    out += s.substr(i, len);
    i += len;
    if (!nested) break;
  }
  return out.empty() ? s : out;
}

KernelName parse_once(std::string s) {
  s = unmangled_name(s);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  // "(anonymous namespace)" is a scope, not a parameter list.
  for (std::size_t p; (p = s.find("(anonymous namespace)")) != std::string::npos;) s.replace(p, 21, "anonymous");
  // The name ends at the parameter list: the first '(' outside template arguments.
  std::size_t end = s.size();
  int angle = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++angle;
    else if (s[i] == '>') angle = std::max(0, angle - 1);
    else if (s[i] == '(' && angle == 0) {
      end = i;
      break;
    }
  }
  s.resize(end);
  // The return type ends at the last space outside template arguments ("void ns::k<a, b>").
  angle = 0;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++angle;
    else if (s[i] == '>') angle = std::max(0, angle - 1);
    else if (s[i] == ' ' && angle == 0) begin = i + 1;
  }
  s = s.substr(begin);
  KernelName k;
  const std::size_t lt = s.find('<');
  std::string qualified = s.substr(0, lt);
  if (lt != std::string::npos) {
    const std::size_t gt = closing(s, lt);
    std::string args = s.substr(lt + 1, gt == std::string::npos ? std::string::npos : gt - lt - 1);
    // The first argument that names a type, the arguments split at ',' outside nested brackets.
    // Composable Kernel's launcher takes its block counts and target first (ck_tile::kentry<256, 1,
    // ck_tile::FmhaBwdDQDKDVKernel<...>>, ck_tile::kentry<ck_tile::gfx950_t, 2, ck_tile::FmhaFwdKernel<...>>):
    // numbers and gfx* target tags are skipped.
    const auto skipped = [](const std::string& arg) {
      if (arg.empty() || std::isdigit(static_cast<unsigned char>(arg[0]))) return true;
      const std::string name = arg.substr(0, arg.find('<'));
      const std::size_t colons = name.rfind("::");
      return name.compare(colons == std::string::npos ? 0 : colons + 2, 3, "gfx") == 0;
    };
    int depth = 0;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= args.size(); ++i) {
      if (i < args.size() && (args[i] == '<' || args[i] == '(')) ++depth;
      else if (i < args.size() && (args[i] == '>' || args[i] == ')')) --depth;
      if (i == args.size() || (args[i] == ',' && depth == 0)) {
        std::string arg = trimmed(args.substr(from, i - from));
        if (k.first_argument.empty()) k.first_argument = arg;  // numbers only: the first of them
        if (!skipped(arg)) {
          k.first_argument = std::move(arg);
          break;
        }
        from = i + 1;
      }
    }
  }
  const std::size_t colons = qualified.rfind("::");
  if (colons == std::string::npos) {
    k.identifier = qualified;
  } else {
    k.scope = qualified.substr(0, colons);
    k.identifier = qualified.substr(colons + 2);
  }
  return k;
}

bool gemm_identifier(const std::string& lid, const std::vector<std::string>& ws) {
  std::string id = lid;
  for (std::size_t p; (p = id.find("fbgemm")) != std::string::npos;) id.erase(p, 6);  // a library, not a GEMM
  if (has_any(id, {"gemm", "gemv", "xmma", "matmul", "flatmm"}) || starts(id, "nvjet")) return true;
  // AMD: Tensile's kernels, which rocBLAS and hipBLASLt run, are named for their index order
  // (Cijk_Ailk_Bljk_BBS_BH_..._MT256x256x64_MI16x16x1_...; hipBLASLt's hand-tuned ones Custom_Cijk_...);
  // the skinny-GEMM kernels rocBLAS and vLLM ship are wvSplitK / wvSpltK.
  if (starts(id, "cijk_") || starts(id, "custom_cijk_") || starts(id, "wvsplitk") || starts(id, "wvspltk")) return true;
  // Inductor's template kernels: triton_tem_fused_mm_0, triton_tem_fused_addmm_1.
  return !ws.empty() && ws[0] == "triton" && has_word(ws, {"tem"}) && has_word(ws, {"mm", "addmm", "bmm", "baddbmm"});
}

}  // namespace

KernelName kernel_own_name(const std::string& signature) {
  KernelName k = parse_once(signature);
  for (int depth = 0; depth < 4 && is_launcher(k.identifier) && !k.first_argument.empty(); ++depth)
    k = parse_once(k.first_argument);
  // A kernel called just "kernel" is named by its scope (cuBLAS' gemvx::kernel<...>).
  if (lowercase(k.identifier) == "kernel" && !k.scope.empty()) {
    const std::size_t colons = k.scope.rfind("::");
    k.identifier = colons == std::string::npos ? k.scope : k.scope.substr(colons + 2);
    k.scope = colons == std::string::npos ? "" : k.scope.substr(0, colons);
  }
  return k;
}

KernelFamily builtin_kernel_family(const std::string& signature) {
  const KernelName k = kernel_own_name(signature);
  const std::string id = lowercase(k.identifier), scope = lowercase(k.scope);
  const std::vector<std::string> ws = words(k.identifier);
  const auto comm = [](CommLibrary l) { return KernelFamily{KernelKind::communication, l}; };
  const auto kind = [](KernelKind x) { return KernelFamily{x, CommLibrary::none}; };

  // ROCm 7.1's profiler records SDMA copies as kernels named for their direction
  // (MEMORY_COPY_DEVICE_TO_DEVICE, ...): copies, as Kineto's gpu_memcpy events are.
  if (starts(k.identifier, "MEMORY_COPY_")) return kind(KernelKind::copy);
  // Communication, by library.
  if (has(id, "nccl") || has(scope, "nccl") || has(id, "rccl")) return comm(CommLibrary::nccl);
  if (has(scope, "deep_ep")) {
    // deep_ep::layout::get_dispatch_layout counts tokens per rank and expert: no data moves.
    if (has(scope, "layout") || has(id, "layout")) return kind(KernelKind::memory_bound);
    return comm(CommLibrary::deepep);
  }
  if (starts(id, "nvshmem") || has(scope, "nvshmem")) return comm(CommLibrary::nvshmem);
  if (has(id, "userbuffers")) return comm(CommLibrary::userbuffers);
  if (has(scope, "symmetric_memory") || has(scope, "intra_node_comm")) return comm(CommLibrary::symmetric_memory);
  if (has(scope, "flux")) {
    // FLUX's fused kernels are GEMMs with the communication inside; its other kernels move data.
    if (gemm_identifier(id, ws)) return kind(KernelKind::gemm);
    return comm(CommLibrary::flux);
  }
  // Attention.
  if (has_any(id, {"flash", "fmha", "sdpa", "attention", "attn"}) || has_any(scope, {"flash", "fused_attn", "fmha"}) ||
      has_word(ws, {"mha", "mqa", "gqa", "mla"}))
    return kind(KernelKind::attention);
  // Grouped GEMMs.
  const std::string first = lowercase(k.first_argument);
  if (has_any(id, {"gemmgrouped", "grouped_gemm", "groupedgemm", "grouped_mm", "group_gemm", "fused_moe"}) ||
      (has(id, "grouped") && gemm_identifier(id, ws)) || (id == "gemmuniversal" && has(first, "groupproblemshape")) ||
      // A MoE layer's expert GEMMs in one launch: Composable Kernel's MoeFlatmmKernel, aiter's fmoe_* kernels.
      (has(id, "moe") && gemm_identifier(id, ws)) || starts(id, "fmoe"))
    return kind(KernelKind::grouped_gemm);
  // GEMMs. The split-K reduction cuBLAS launches beside a GEMM is a reduction, read below.
  if (gemm_identifier(id, ws) && !has(id, "reduce")) return kind(KernelKind::gemm);
  // Memory-bound kernels.
  if (has_any(id, {"elementwise", "elemwise", "pointwise", "norm", "reduce", "reduction", "softmax", "copy", "memcpy",
                   "memset", "embedding", "transpose", "permute", "quantiz", "dropout", "multi_tensor", "gather",
                   "scatter", "concat", "rotary", "topk", "radixsort", "sorting", "histogram", "cumsum", "amax", "fill"}) ||
      has_word(ws, {"cat", "cast", "convert", "index", "sort", "scan", "select", "adam", "adamw", "sgd", "silu", "gelu",
                    "swiglu", "relu", "act", "activation", "bias", "rope", "sum", "mean", "max", "min", "argmax", "where",
                    "clamp", "mul", "add", "pow", "exp", "pad", "split", "stack", "unique", "nonzero", "masked", "zero",
                    "zeros", "ones", "arange", "philox", "normal", "uniform", "pack", "unpack", "compare", "moments"}) ||
      (!ws.empty() && ws[0] == "triton" && has_word(ws, {"poi", "red", "per"})) ||
      scope == "cub" || starts(scope, "cub::") || has(scope, "thrust"))
    return kind(KernelKind::memory_bound);
  return kind(KernelKind::unknown);
}

const char* kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::gemm: return "gemm";
    case KernelKind::grouped_gemm: return "grouped_gemm";
    case KernelKind::attention: return "attention";
    case KernelKind::memory_bound: return "memory_bound";
    case KernelKind::communication: return "collective";
    case KernelKind::compute: return "compute";
    case KernelKind::copy: return "copy";
    case KernelKind::unknown: return "unknown";
  }
  return "unknown";
}

const char* library_name(CommLibrary library) {
  switch (library) {
    case CommLibrary::none: return "";
    case CommLibrary::nccl: return "nccl";
    case CommLibrary::deepep: return "deepep";
    case CommLibrary::nvshmem: return "nvshmem";
    case CommLibrary::userbuffers: return "userbuffers";
    case CommLibrary::flux: return "flux";
    case CommLibrary::symmetric_memory: return "symmetric_memory";
    case CommLibrary::peer_copy: return "peer_copy";
    case CommLibrary::user: return "user";
  }
  return "";
}

KernelClassifier::KernelClassifier(const std::vector<std::string>& comm_patterns,
                                   const std::vector<std::string>& compute_patterns) {
  for (const std::string& p : comm_patterns) comm_.emplace_back(p, std::regex::ECMAScript);
  for (const std::string& p : compute_patterns) compute_.emplace_back(p, std::regex::ECMAScript);
}

KernelFamily KernelClassifier::classify(const std::string& signature) const {
  for (const std::regex& r : comm_)
    if (std::regex_search(signature, r)) return {KernelKind::communication, CommLibrary::user};
  for (const std::regex& r : compute_)
    if (std::regex_search(signature, r)) return {KernelKind::compute, CommLibrary::none};
  return builtin_kernel_family(signature);
}

KernelFamily KernelClassifier::classify_copy(const std::string& name) const {
  for (const std::regex& r : comm_)
    if (std::regex_search(name, r)) return {KernelKind::communication, CommLibrary::user};
  for (const std::regex& r : compute_)
    if (std::regex_search(name, r)) return {KernelKind::copy, CommLibrary::none};
  // Kineto names a copy between two GPUs "Memcpy PtoP (Device -> Device)"; the nsys reader
  // "[memcpy PtoP]" (copyKind 10, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP).
  if (has(name, "PtoP")) return {KernelKind::communication, CommLibrary::peer_copy};
  return {KernelKind::copy, CommLibrary::none};
}

}  // namespace overlap::traces
