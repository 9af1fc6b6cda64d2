// Kernel families by the kernel's own name (calibrate/traces/kernel_kind.hpp): the corpus of
// tests/data/trace/kernel_names.tsv, the own-name parse, and a user's --comm-kernel /
// --compute-kernel patterns through `overlap-sim trace`.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/kernel_kind.hpp"
#include "calibrate/traces/trace_model.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"

using namespace overlap::traces;

namespace {

const std::string kData = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/";

struct Entry {
  std::string kind, library, signature;
  int line = 0;
};

std::vector<Entry> corpus() {
  std::ifstream in(kData + "kernel_names.tsv");
  REQUIRE(in);
  std::vector<Entry> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    REQUIRE(t2 != std::string::npos);
    out.push_back({line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), line.substr(t2 + 1), n});
  }
  return out;
}

nlohmann::json trace_json(std::vector<std::string> args) {
  args.insert(args.begin(), "trace");
  args.insert(args.end(), {"--format", "json"});
  const auto r = overlap::test::cli(args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("kernel families: every name of the corpus gets its one kind and library", "[trace][kernel_kind]") {
  const auto entries = corpus();
  std::set<std::string> kinds, libraries;
  for (const Entry& e : entries) {
    const KernelFamily f = builtin_kernel_family(e.signature);
    INFO("kernel_names.tsv line " << e.line << ": " << e.signature);
    CHECK(kind_name(f.kind) == e.kind);
    CHECK(library_name(f.library) == e.library);
    kinds.insert(e.kind);
    if (!e.library.empty()) libraries.insert(e.library);
  }
  // The corpus covers every built-in family and every library recognised by name.
  CHECK(kinds == std::set<std::string>{"attention", "collective", "copy", "gemm", "grouped_gemm", "memory_bound", "unknown"});
  CHECK(libraries == std::set<std::string>{"deepep", "flux", "nccl", "nvshmem", "symmetric_memory", "userbuffers"});
  CHECK(entries.size() >= 50);
}

TEST_CASE("kernel families: the own name is read past return type, template arguments and launchers", "[trace][kernel_kind]") {
  // FlashAttention 3 runs behind two launchers; its template arguments name cutlass and GEMM shapes.
  const KernelName fa3 = kernel_own_name(
      "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, "
      "cute::tuple<cute::C<1> >, cutlass::bfloat16_t>, flash::CollectiveEpilogueFwd<cutlass::bfloat16_t> > > >"
      "(flash::FlashAttnFwdSm90<void>::Params)");
  CHECK(fa3.scope == "flash");
  CHECK(fa3.identifier == "FlashAttnFwdSm90");
  // (anonymous namespace) is a scope, not the parameter list.
  const KernelName softmax = kernel_own_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)");
  CHECK(softmax.identifier == "cunn_SoftMaxForward");
  CHECK(softmax.scope == "at::native::anonymous");
  // A kernel named just "kernel" is named by its scope.
  CHECK(kernel_own_name("void gemvx::kernel<int, float>(cublasGemvParamsEx<int>)").identifier == "gemvx");
  // CUTLASS 3's grouped GEMM: GemmUniversal over a GroupProblemShape; the plain one is a GEMM.
  CHECK(kernel_own_name("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<int> > >(P)")
            .first_argument == "cutlass::gemm::GroupProblemShape<int>");
  // Composable Kernel's launcher: block counts and a gfx target tag before the kernel it runs.
  const KernelName ck = kernel_own_name("void ck_tile::kentry<ck_tile::gfx950_t, 2, ck_tile::FmhaFwdKernel<P<1>, E> >(K)");
  CHECK(ck.scope == "ck_tile");
  CHECK(ck.identifier == "FmhaFwdKernel");
  CHECK(kernel_own_name("void ck_tile::kentry<256, 1, ck_tile::FmhaBwdDQDKDVKernel<P> >(K)").identifier == "FmhaBwdDQDKDVKernel");
  // A name left mangled is read for its nested name (Itanium C++ ABI <nested-name>), or its unscoped one.
  const KernelName mangled = kernel_own_name("_ZN5aiter27mxfp4_quant_moe_sort_kernelIDF16bN4opus5fp4_tELi256ELi32EEEvPT0_PhPKT_");
  CHECK(mangled.scope == "aiter");
  CHECK(mangled.identifier == "mxfp4_quant_moe_sort_kernel");
  CHECK(kernel_own_name("_Z9my_kernelPf").identifier == "my_kernel");
  CHECK(kernel_own_name("_ZN5aiter99tooshort").identifier == "_ZN5aiter99tooshort");  // a length past the end: as written
  // A name with no signature around it is its own identifier.
  CHECK(kernel_own_name("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN").identifier == "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN");
}

TEST_CASE("kernel families: copies, and a user's patterns ahead of the built-in families", "[trace][kernel_kind]") {
  const KernelClassifier builtin;
  CHECK(builtin.classify_copy("Memcpy PtoP (Device -> Device)") == KernelFamily{KernelKind::communication, CommLibrary::peer_copy});
  CHECK(builtin.classify_copy("Memcpy DtoD (Device -> Device)") == KernelFamily{KernelKind::copy, CommLibrary::none});
  CHECK(activity_class(builtin.classify_copy("Memcpy HtoD (Pinned -> Device)")) == ActivityClass::memory);
  const KernelClassifier user({"my_a2a", "PtoP"}, {"ncclDevKernel_AllGather", "my_a2a_pack"});
  CHECK(user.classify("void my_a2a_pack(int*)") == KernelFamily{KernelKind::communication, CommLibrary::user});  // comm first
  CHECK(user.classify("ncclDevKernel_AllGather_RING_LL") == KernelFamily{KernelKind::compute, CommLibrary::none});
  CHECK(user.classify("ncclDevKernel_AllReduce_Sum_bf16_RING_LL").library == CommLibrary::nccl);
  CHECK(user.classify_copy("Memcpy PtoP (Device -> Device)").library == CommLibrary::user);
}

TEST_CASE("trace --comm-kernel / --compute-kernel move a kernel between the exposed-communication sums", "[trace][kernel_kind]") {
  // rank0.json: compute GEMM [100, 150), GELU [160, 180), nvjet [200, 230); NCCL all-reduce
  // [130, 170), all-gather [210, 220) (tests/trace/test_trace.cpp works out 10 us exposed).
  // The GELU as communication: comm [130, 180) + [210, 220) = 60; compute [100, 150) + [200, 230) = 80;
  // hidden [130, 150) + [210, 220) = 30, so 30 exposed.
  const auto comm = trace_json({kData + "rank0.json", "--comm-kernel", "GeluCUDAKernel"});
  const auto& f = comm["ranks"][0]["figures"];
  CHECK(f["communication_ns"] == 60000);
  CHECK(f["compute_ns"] == 80000);
  CHECK(f["exposed_communication_ns"] == 30000);
  bool user = false;
  for (const auto& g : comm["ranks"][0]["comms"]) user = user || g["library"] == "user";
  CHECK(user);
  // The all-gather as compute: comm [130, 170) = 40; compute [100, 150) + [160, 180) + [200, 230) = 100;
  // hidden [130, 150) + [160, 170) = 30, so 10 exposed.
  const auto compute = trace_json({kData + "rank0.json", "--compute-kernel", "ncclDevKernel_AllGather"});
  CHECK(compute["ranks"][0]["figures"]["communication_ns"] == 40000);
  CHECK(compute["ranks"][0]["figures"]["compute_ns"] == 100000);
  CHECK(compute["ranks"][0]["figures"]["exposed_communication_ns"] == 10000);
  // A pattern that is no regular expression, or an empty one: a usage error naming the flag.
  for (const auto& [flag, pattern] : {std::pair{"--comm-kernel", "nccl[("}, std::pair{"--compute-kernel", ""}}) {
    const auto r = overlap::test::cli({"trace", kData + "rank0.json", flag, pattern});
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(flag) != std::string::npos);
  }
}

TEST_CASE("trace: unknown kernels are listed by time, and named with a pattern", "[trace][kernel_kind]") {
  // In the DeepEP fixture every kernel has a family; a made-up one is unknown until named.
  const std::string path = overlap::test::binary_dir().string() + "/trace_test_tmp_unknown.json";
  {
    std::ofstream out(path);
    out << R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "my_custom_kernel_v2", "pid": 0, "tid": 7, "ts": 0, "dur": 30, "args": {"device": 0}},
      {"ph": "X", "cat": "kernel", "name": "other_mystery", "pid": 0, "tid": 7, "ts": 40, "dur": 50, "args": {"device": 0}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 8, "ts": 0, "dur": 10, "args": {"device": 0}}]})";
  }
  const auto table = overlap::test::cli({"trace", path});
  REQUIRE(table.rc == 0);
  const auto at = table.out.find("Unknown kernels");
  REQUIRE(at != std::string::npos);
  // Longest total first.
  CHECK(table.out.find("other_mystery", at) < table.out.find("my_custom_kernel_v2", at));
  const auto named = overlap::test::cli({"trace", path, "--compute-kernel", "mystery|custom"});
  REQUIRE(named.rc == 0);
  CHECK(named.out.find("Unknown kernels") == std::string::npos);
}
