// Collectives and the expert all-to-all across nodes against published figures (docs/guide/collective.md
// "Across nodes" and "DeepEP against its published tables"): DeepEP's own tables (deepseek-ai/DeepEP,
// docs/legacy.md "Performance": H800, NVLink about 160 GB/s, one ConnectX-7 400 Gb/s NIC per GPU, 7168
// hidden, top-8, FP8 dispatch, BF16 combine) and the multi-node nccl-tests figures published with
// their setting. Each row is predicted by the cost model on a shipped hardware profile
// (scenarios/hardware/) or, for DeepEP's H800 (no shipped profile), on the rates the profiles' sources
// give; the setting is in the row's config. Figures are absolute (us, GB/s), so the rows are not in the
// dimensionless median; the targets of docs/guide/collective.md (median |error| <= 10 % at 1 MiB and
// above, <= 25 % below) are each row's tolerance.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"
#include "cost_model/deepep.hpp"
#include "cost_model/hardware_profile.hpp"
#include "cost_model/profile_loader.hpp"
#include "tools/papers.hpp"

namespace overlap::tools::papers {

namespace {

constexpr const char* kDeepEp = "deepep-tables";
constexpr const char* kNcclTests290 = "nccl-tests-issue-290";
constexpr const char* kNcclTests119 = "nccl-tests-issue-119";
constexpr const char* kNccl1244 = "nccl-issue-1244";

// The targets: 10 % at 1 MiB and above, 25 % below.
double tolerance_for(double bytes) { return bytes >= 1024.0 * 1024.0 ? 10 : 25; }

RowSpec absolute(const char* source, std::string location, std::string figure, std::string config, std::string unit,
                 double published, std::string published_text, double bytes) {
  RowSpec s = row_spec(source, std::move(location), std::move(figure), std::move(config), published,
                       std::move(published_text));
  s.unit = std::move(unit);
  s.ratio = false;
  s.tolerance_pct = tolerance_for(bytes);
  return s;
}

// DeepEP's tables against cost_model/deepep.hpp. Rates not fitted: one NDR NIC at 0.94 of 50 GB/s
// (NVIDIA/nccl-tests issue 290), H800 NVLink 200 GB/s one way at the ring efficiency 0.82 (facts.md);
// the fixed cost kDeepEpFixedCostUs is the EP 8 low-latency dispatch less its NVLink time, so that
// row is not shown (it would match by construction).
std::vector<PaperRow> deepep_rows() {
  std::vector<PaperRow> rows;
  const DeepEpRates rates{50 * 0.94, 200 * 0.82, kDeepEpFixedCostUs};
  const std::int64_t hidden = 7168;
  const double fp8 = deepep_fp8_token_bytes(hidden);
  const double bf16 = deepep_bf16_token_bytes(hidden);
  struct Ll {
    int ep;
    double dispatch_us, combine_us;
  };
  for (const Ll& r : {Ll{8, 77, 114}, Ll{16, 118, 195}, Ll{32, 155, 273}, Ll{64, 173, 314}, Ll{128, 192, 369},
                      Ll{256, 194, 360}}) {
    // DeepEP's test: 128 tokens a GPU, 288 experts (256 from EP 64, which the GPUs divide), top-8; the
    // dispatch message carries a 16-byte header beside the FP8 token.
    const DeepEpLayout l{r.ep, 8, r.ep <= 32 ? 288 : 256, 8, 0};
    const std::string cfg = fmt::format(
        "DeepEP low-latency, H800, EP {}, 128 tokens a GPU, top-8, one CX7 400G NIC a GPU; NIC 47 GB/s, NVLink 164 GB/s, "
        "fixed {} us (from the EP 8 dispatch)",
        r.ep, kDeepEpFixedCostUs);
    const DeepEpPortBytes d = deepep_expected_port_bytes(DeepEpKernel::low_latency, l, 128, fp8 + 16);
    const DeepEpPortBytes c = deepep_expected_port_bytes(DeepEpKernel::low_latency, l, 128, bf16);
    const double per_gpu_dispatch = 128.0 * 8 * (fp8 + 16);
    if (r.ep != 8)
      rows.push_back(judge(absolute(kDeepEp, "docs/legacy.md, section Performance, low-latency kernels", fmt::format("EP {} dispatch latency", r.ep),
                                    cfg, "us", r.dispatch_us, fmt::format("{} us", r.dispatch_us), per_gpu_dispatch),
                           static_cast<double>(deepep_time_ps(d, rates)) / 1e6));
    rows.push_back(judge(absolute(kDeepEp, "docs/legacy.md, section Performance, low-latency kernels", fmt::format("EP {} combine latency", r.ep),
                                  cfg, "us", r.combine_us, fmt::format("{} us", r.combine_us), 128.0 * 8 * bf16),
                         static_cast<double>(deepep_time_ps(c, rates)) / 1e6));
  }
  struct Normal {
    int ep;
    double dispatch_gbps, combine_gbps;
  };
  for (const Normal& r : {Normal{8, 153, 158}, Normal{16, 43, 43}, Normal{32, 58, 57}, Normal{64, 51, 50}}) {
    // 4096 tokens a GPU, 256 experts, top-8, at most 4 nodes a token (min(4, nodes) in DeepEP's test).
    const int nodes = r.ep / 8;
    const DeepEpLayout l{r.ep, 8, 256, 8, std::min(4, nodes)};
    const std::string cfg = fmt::format(
        "DeepEP normal kernels, H800, EP {}, 4096 tokens a GPU, top-8, at most {} nodes a token; NIC 47 GB/s, NVLink "
        "164 GB/s",
        r.ep, std::min(4, nodes));
    for (auto [name, bytes, published] :
         {std::tuple{"dispatch", fp8, r.dispatch_gbps}, std::tuple{"combine", bf16, r.combine_gbps}}) {
      const DeepEpPortBytes p = deepep_expected_port_bytes(DeepEpKernel::normal, l, 4096, bytes);
      const double seconds = static_cast<double>(deepep_time_ps(p, rates)) / 1e12;
      // DeepEP's "bottleneck bandwidth": one node, the NVLink bytes a GPU receives (its own tokens
      // counted); across nodes, the RDMA bytes its tokens take to every node they reach (its own counted).
      const double logical = nodes == 1 ? p.nvlink_recv * 8.0 / 7.0 : p.rdma_send / (1.0 - 1.0 / nodes);
      RowSpec s = absolute(kDeepEp, "docs/legacy.md, section Performance, normal kernels",
                           fmt::format("EP {} {} bottleneck bandwidth ({})", r.ep, name, nodes == 1 ? "NVLink" : "RDMA"),
                           cfg, "GB/s", published, fmt::format("{} GB/s", published), 4096.0 * bytes);
      if (r.ep <= 16) {
        s.cause =
            "NVLink forwarding binds here: it runs on the 24 SMs DeepEP gives the normal kernels, a copy rate the "
            "model does not have (it uses the link's 164 GB/s); docs/guide/collective.md";
        s.cause_is_ours = true;
      }
      rows.push_back(judge(s, logical / seconds / 1e9));
    }
  }
  return rows;
}

// nccl-tests' bus bandwidth of an all-reduce of `bytes` on `n` ranks (algbw = S / time, x 2(n-1)/n).
double all_reduce_busbw(const CollectivePlan& plan, Bytes bytes, int n) {
  return static_cast<double>(bytes) / (static_cast<double>(plan.time_ps) * 1e-3) * 2.0 * (n - 1) / n;
}

std::vector<PaperRow> nccl_tests_rows(const std::string& hardware_dir) {
  std::vector<PaperRow> rows;
  constexpr Bytes kGiB = Bytes{1} << 30;
  {
    // NVIDIA/nccl-tests issue 290 (NVIDIA's answer): 46-48 GB/s per NDR NIC with NCCL_ALGO=RING on two
    // 8x H100 nodes with 8 ConnectX-7 each, so 368-384 GB/s busbw for the node's 8; middle 376.
    const HardwareProfile hw = load_profile("h100-2node-ib400", hardware_dir);
    const Bytes s = 4 * kGiB;
    const CollectivePlan plan = plan_collective(hw, CollectivePrimitive::all_reduce, s, 16, "network",
                                                CollectiveOverrides{NcclAlgorithm::Ring, NcclProtocol::Simple});
    rows.push_back(judge(
        absolute(kNcclTests290, "NVIDIA's comment of 2025-03-03", "all-reduce busbw, 2 nodes, NCCL_ALGO=RING",
                 "h100-2node-ib400: 2 x 8 H100 SXM, 8x CX7 NDR 400G a node, Ring/Simple forced, 4 GiB", "GB/s", 376,
                 "46-48 GB/s per NIC x 8 NICs = 368-384 (middle 376)", static_cast<double>(s)),
        all_reduce_busbw(plan, s, 16)));
  }
  {
    // NVIDIA/nccl-tests issue 119 (2022): 3 servers of 8x A100-SXM4-40GB, 4 HDR 200 Gb/s NICs each,
    // all_reduce_perf up to 128 MB over 24 ranks, peak busbw "about 96 GB/s"; NCCL version not given.
    HardwareProfile hw = load_profile("a100-4node-hdr200-rail", hardware_dir);
    hw.fabric.num_gpus = 24;
    hw.fabric.nics_per_node = 4;
    hw.fabric.nodes.clear();
    hw.fabric.edges.clear();
    expand_topology(hw.fabric);
    const Bytes s = Bytes{128} << 20;
    const CollectivePlan plan = plan_collective(hw, CollectivePrimitive::all_reduce, s, 24, "network");
    RowSpec spec = absolute(kNcclTests119, "the reporter's comment", "all-reduce peak busbw, 3 nodes",
                            "a100-4node-hdr200-rail as 3 nodes, 4 NICs a node (24 ranks), NCCL's choice, 128 MiB",
                            "GB/s", 96, "about 96 GB/s", static_cast<double>(s));
    spec.cause = "at 128 MiB the model's Ring/LL128 latency still weighs; its bandwidth limit, 4 x 25 x 0.94 = 94 GB/s, "
                 "is within 2 %";
    spec.cause_is_ours = true;
    rows.push_back(judge(spec, all_reduce_busbw(plan, s, 24)));
  }
  {
    // NVIDIA/nccl issue 1244: 2 x 8 H20, 8 CX7 NDR a node, NCCL 2.21.5, NCCL_ALGO=NVLSTree: 46-48 us
    // from 4 B to 512 B. The shipped H100 2-node profile carries the same NCCL constants and NICs.
    const HardwareProfile hw = load_profile("h100-2node-ib400", hardware_dir);
    const Bytes s = 512;
    const CollectivePlan plan = plan_collective(hw, CollectivePrimitive::all_reduce, s, 16, "network",
                                                CollectiveOverrides{NcclAlgorithm::NVLSTree, NcclProtocol::Simple});
    RowSpec spec = absolute(kNccl1244, "Table in the description", "all-reduce time at 512 B, 2 nodes, NVLSTree",
                            "h100-2node-ib400 (2 x 8, 8x NDR a node), NVLSTree forced, 512 B", "us", 47,
                            "46-48 us from 4 B to 512 B (middle 47)", static_cast<double>(s));
    spec.cause = "NCCL's published NVLSTree latency constants (25 + 2 x 20.9 us) overestimate this cluster's floor";
    spec.cause_is_ours = true;
    rows.push_back(judge(spec, static_cast<double>(plan.time_ps) / 1e6));
  }
  return rows;
}

}  // namespace

std::vector<PaperRow> collective_rows(ScenarioRunner& runner) {
  std::vector<PaperRow> rows = deepep_rows();
  std::vector<PaperRow> nccl = nccl_tests_rows(runner.source_dir() + "/scenarios/hardware");
  rows.insert(rows.end(), nccl.begin(), nccl.end());
  return rows;
}

}  // namespace overlap::tools::papers
