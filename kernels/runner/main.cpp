// overlap-bench-schemes: runs a scheme configuration list (calibrate/configs/*.json) with the
// reference kernels and writes DIR/schemes.json (+ the virtual nodes' profiles) for
// `overlap-sim validate` (issue 8).
//
//   overlap-bench-schemes --config FILE [--out DIR] [--only ID,...] [--reps N] [--warmup N]
//                         [--profile-schema 1|2] [--bootstrap-dir DIR]
//
// One GPU (no launcher variables): every run on VIRTUAL RANKS, T green-context partitions of
// floor(SMs / T / 8) x 8 SMs; before the runs of a (T, link) node the runner measures that node
// (its GEMM on one partition, rank-to-rank pulls, its own collectives, launch gaps, shared HBM
// streaming) and writes profile_virtual_t<T>_<link>.yaml from it, so the simulator predicts the
// machine that was measured. Under mpirun (one process per GPU): the runs whose tp equals the
// process count, with NCCL collectives and, for async TP and CommFuse with transport copy_engine,
// copy-engine pulls from peer memory (CUDA IPC; every rank on one host); their profile is the host's
// calibration (../profile.yaml).
// Every run is checked against its reference (relative error printed) before it is timed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/core/measurement.hpp"
#include "calibrate/core/output_file.hpp"
#include "calibrate/core/profile_writer.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "cost_model/input_error.hpp"
#include "kernels/comm/bootstrap.hpp"
#include "kernels/comm/node.hpp"
#include "kernels/common/check.hpp"
#include "kernels/common/host_profile.hpp"
#include "kernels/common/timing.hpp"
#include "kernels/gemm/signal_gemm.hpp"
#include "kernels/ops/ops.hpp"
#include "kernels/schemes/decode_run.hpp"
#include "kernels/schemes/gemm_run.hpp"

namespace {

namespace cal = overlap::calibrate;
namespace cu = overlap::cuda;
using nlohmann::json;

struct Options {
  std::string config, out;
  std::vector<std::string> only;
  int reps = -1, warmup = -1;
  int profile_schema = 2;
  std::string bootstrap_dir = "/tmp/overlap-bench-schemes";
};

// bf16 GEMM inputs accumulate in fp32 and round once (or T times through bf16 partial sums): a
// relative error of a few 1e-3 is expected (device METHOD.md: bf16 between 1e-3 and 1e-2).
constexpr double kTolerance = 2e-2;

void primary() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cu::SmPartitions::make_primary_current(dev);
}

// The root stream waits for every stream of every rank; the primary context is current again.
void join_to(cu::Node& node, cudaStream_t root) {
  node.join_to(root);
  primary();
}

// Times `work` issued on every rank of the node, joined to a root stream (CUDA events on the root).
std::vector<double> time_on_node(cu::Node& node, cudaStream_t root, int warmup, int reps, const std::function<void()>& work) {
  cudaEvent_t start;
  CUDA_CHECK(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  auto v = cu::time_on_stream_us(root, warmup, reps, [&] {
    primary();
    node.barrier(root);
    CUDA_CHECK(cudaEventRecord(start, root));
    node.fork_from(start);
    work();
    join_to(node, root);
  });
  CUDA_CHECK(cudaEventDestroy(start));
  return v;
}

// Device time of `work` on every rank with the host out of the picture: the ranks' streams wait
// behind a sleep kernel on the root stream for `hold_ns` while the host enqueues `work`, so the
// events around it time the GPU alone (the launch benchmark's dependent_gap does the same). The
// host's enqueue time of each call goes to `host_us`.
std::vector<double> time_on_node_queued(cu::Node& node, cudaStream_t root, int warmup, int reps, std::uint64_t hold_ns,
                                        const std::function<void()>& work, std::vector<double>* host_us) {
  cudaEvent_t start, a, b;
  CUDA_CHECK(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> us;
  for (int rep = 0; rep < warmup + reps; ++rep) {
    primary();
    node.barrier(root);
    cu::sleep_on_stream(hold_ns, root);
    CUDA_CHECK(cudaEventRecord(a, root));
    CUDA_CHECK(cudaEventRecord(start, root));
    node.fork_from(start);
    const auto t0 = std::chrono::steady_clock::now();
    {
      cu::host_profile::Window w;
      work();
    }
    const auto t1 = std::chrono::steady_clock::now();
    join_to(node, root);
    CUDA_CHECK(cudaEventRecord(b, root));
    CUDA_CHECK(cudaStreamSynchronize(root));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (rep >= warmup) {
      us.push_back(static_cast<double>(ms) * 1e3);
      if (host_us) host_us->push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  for (auto e : {start, a, b}) cudaEventDestroy(e);
  return us;
}

// `work` timed twice: with the host in the loop (unqueued: what sizes the hold), then queued behind
// a sleep (the GPU's time alone: the samples a curve takes). The derived figures say both, and the
// host's enqueue time per call.
struct QueuedTiming {
  std::vector<double> samples;  // queued, us
  json derived;                 // queued, host_enqueue_us, unqueued_us
};
QueuedTiming time_queued(cu::Node& node, cudaStream_t root, int reps, const std::function<void()>& work,
                         const std::function<void()>& before_queued = {}) {
  const auto together = time_on_node(node, root, 3, reps, work);
  std::vector<double> host;
  const auto hold_ns = static_cast<std::uint64_t>(2e3 * cal::median_of(together)) + 200'000;
  if (before_queued) before_queued();
  QueuedTiming t;
  t.samples = time_on_node_queued(node, root, 2, reps, hold_ns, work, &host);
  t.derived = {{"queued", true}, {"host_enqueue_us", cal::median_of(host)}, {"unqueued_us", cal::median_of(together)}};
  return t;
}

void progress(const std::string& what, const std::string& text) {
  std::printf("%-34s %s\n", what.c_str(), text.c_str());
  std::fflush(stdout);
}

cal::Measurement measurement(const std::string& bench, json config, const std::vector<double>& samples, json derived = json::object()) {
  cal::Measurement m;
  m.benchmark = bench;
  m.config = std::move(config);
  m.time_us = cal::summarize(samples);
  m.derived = std::move(derived);
  progress(bench, m.config.dump() + "  median " + std::to_string(m.time_us.median) + " us  spread " + std::to_string(m.time_us.spread));
  return m;
}

// The per-rank GEMM shapes a run computes (full and sliced), for the virtual profile's gemm_profiles.
std::vector<std::int64_t> gemm_rows_of(const cal::SchemeRunConfig& c) {
  const std::int64_t T = c.ranks;
  std::set<std::int64_t> rows = {c.m};
  if (c.scheme == "data_slicing") rows.insert(c.m / c.params.value("chunks", 4));
  if (c.scheme == "async_tp") rows.insert(c.m / T);
  if (c.scheme == "commfuse") rows.insert(c.m / T / c.params.value("m", 1));
  return {rows.begin(), rows.end()};
}

// Measures a virtual node and returns the measurement set its profile is written from.
cal::MeasurementSet measure_virtual_node(cu::Node& node, const std::string& link, const std::vector<cal::SchemeRunConfig>& runs,
                                         const json& base_env, cudaStream_t root, int reps) {
  cal::MeasurementSet set;
  set.environment = base_env;
  set.environment["sm_count"] = node.rank_sms();
  set.environment["gemm_ctas_per_sm"] = cal::kRunnerGemmCtasPerSm;
  set.environment["virtual_ranks"] = node.ranks();
  set.environment["virtual_link"] = link;
  set.environment["gpu_name"] = base_env.value("gpu_name", std::string("gpu")) + " / " + std::to_string(node.ranks()) + " virtual ranks";
  const int T = node.ranks();
  auto& r0 = node.streams(0);
  // GEMMs on rank 0's partition, with the kernel every scheme uses (kRunnerGemmCtasPerSm CTAs per
  // SM, 128x128 tiles).
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> shapes;
  for (const auto& c : runs) {
    if (c.kind != "gemm_collective") continue;
    for (auto rows : gemm_rows_of(c)) shapes.insert({rows, c.n, c.k});
  }
  // The largest GEMM on every partition at once, each rank with its own A, B and C as in the
  // schemes: what the ranks' GEMMs cost one another on the GPU they share (validated, not fitted).
  // With one shared A and B the four 32-SM GEMMs took 1.06x alone; the schemes' compute-only runs,
  // with operands per rank, 1.35x: the L2 capacity, not its bandwidth, is what they share. The same
  // GEMM with a quarter of the columns puts each rank's B within its share of the L2 (4 ranks:
  // 8 MB of 12.5 MB), the case the L2 model says costs nothing extra (timed alone too, below).
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> concurrent;
  if (!shapes.empty()) {
    const auto [m, n, k] = *std::max_element(shapes.begin(), shapes.end(), [](const auto& x, const auto& y) {
      return std::get<0>(x) * std::get<1>(x) * std::get<2>(x) < std::get<0>(y) * std::get<1>(y) * std::get<2>(y);
    });
    concurrent.push_back({m, n, k});
    if (n % (4 * cu::kSignalTile) == 0) {
      concurrent.push_back({m, n / 4, k});
      shapes.insert({m, n / 4, k});
    }
  }
  const cal::GemmConfig tile = cal::gemm_tile_shape(node.rank_sms(), 8192);
  std::size_t amax = tile.m * tile.k, bmax = tile.k * tile.n, cmax = tile.m * tile.n;
  for (auto [m, n, k] : shapes) {
    amax = std::max<std::size_t>(amax, m * k);
    bmax = std::max<std::size_t>(bmax, k * n);
    cmax = std::max<std::size_t>(cmax, m * n);
  }
  cu::DeviceBuffer<__nv_bfloat16> a(amax), b(bmax), c(cmax);
  cu::fill_random_bf16(a.get(), a.size(), 5, 1.0f, root);
  cu::fill_random_bf16(b.get(), b.size(), 6, 1.0f, root);
  CUDA_CHECK(cudaStreamSynchronize(root));
  auto time_gemm = [&](const char* bench, std::int64_t m, std::int64_t n, std::int64_t k) {
    cu::SignalGemmArgs g;
    g.a = a.get();
    g.b = b.get();
    g.d = c.get();
    g.m = static_cast<int>(m);
    g.n = static_cast<int>(n);
    g.k = static_cast<int>(k);
    g.ctas_per_sm = cal::kRunnerGemmCtasPerSm;
    node.activate(0);
    auto v = cu::time_on_stream_us(r0.compute[0], 3, reps, [&] { cu::signal_gemm(g, r0.compute[0]); });
    primary();
    set.measurements.push_back(measurement(bench, {{"m", m}, {"n", n}, {"k", k}, {"dtype", "bf16"}}, v,
                                           {{"tile_m", cu::kSignalTile}, {"tile_n", cu::kSignalTile}, {"kernel", "signal_gemm"},
                                            {"ctas_per_sm", cal::kRunnerGemmCtasPerSm}}));
  };
  for (auto [m, n, k] : shapes) time_gemm(cal::bench::gemm, m, n, k);
  time_gemm(cal::bench::gemm_tile, tile.m, tile.n, tile.k);
  for (const auto& [m, n, k] : concurrent) {
    std::vector<cu::DeviceBuffer<__nv_bfloat16>> as, bs, cs;
    for (int r = 0; r < T; ++r) {
      as.emplace_back(static_cast<std::size_t>(m * k));
      bs.emplace_back(static_cast<std::size_t>(k * n));
      cs.emplace_back(static_cast<std::size_t>(m * n));
      cu::fill_random_bf16(as.back().get(), as.back().size(), 50 + r, 1.0f, root);
      cu::fill_random_bf16(bs.back().get(), bs.back().size(), 70 + r, 1.0f, root);
    }
    CUDA_CHECK(cudaStreamSynchronize(root));
    auto v = time_on_node(node, root, 3, reps, [&] {
      for (int r = 0; r < T; ++r) {
        cu::SignalGemmArgs g;
        g.a = as[static_cast<std::size_t>(r)].get();
        g.b = bs[static_cast<std::size_t>(r)].get();
        g.d = cs[static_cast<std::size_t>(r)].get();
        g.m = static_cast<int>(m);
        g.n = static_cast<int>(n);
        g.k = static_cast<int>(k);
        g.ctas_per_sm = cal::kRunnerGemmCtasPerSm;
        node.activate(r);
        cu::signal_gemm(g, node.streams(r).compute[0]);
      }
    });
    set.measurements.push_back(measurement(cal::bench::gemm_concurrent, {{"m", m}, {"n", n}, {"k", k}, {"dtype", "bf16"}, {"ranks", T}}, v,
                                           {{"tile_m", cu::kSignalTile}, {"tile_n", cu::kSignalTile}, {"kernel", "signal_gemm"},
                                            {"ctas_per_sm", cal::kRunnerGemmCtasPerSm}, {"operands", "one A, B, C per rank"}}));
  }
  // Rank-to-rank pulls (rank 1 -> rank 0) over the transfer sizes up to 256 MiB.
  cu::DeviceBuffer<unsigned char> src(256u << 20), dst(256u << 20);
  CUDA_CHECK(cudaMemsetAsync(src.get(), 7, src.bytes(), root));
  for (std::int64_t s : cal::transfer_sizes()) {
    if (s > (256LL << 20)) break;
    cu::Transfer x;
    x.src = 1;
    x.dst = 0;
    x.src_ptr = src.get();
    x.dst_ptr = dst.get();
    x.bytes = static_cast<std::size_t>(s);
    x.src_ready = node.streams(1).comm;
    // Queued behind a sleep, like the collectives: the GPU's time alone. Timed with the host in the
    // loop (before 2026-11-23) a small pull took the node's fork and join over every rank's streams:
    // 13 us on two ranks, 50 us on four, where the copy takes 7.
    QueuedTiming t = time_queued(node, root, reps, [&] { node.transfer({x}, 0); });
    t.derived["gbps"] = s / cal::median_of(t.samples) / 1e3;
    set.measurements.push_back(measurement(cal::bench::transfer, {{"path", "copy_engine." + link}, {"bytes", s}}, t.samples, t.derived));
  }
  // The node's own collectives (what no_overlap, data slicing and FlashOverlap call).
  std::vector<cu::DeviceBuffer<__nv_bfloat16>> in, out;
  const std::size_t max_elems = (256u << 20) / 2;
  for (int r = 0; r < T; ++r) {
    in.emplace_back(max_elems);
    out.emplace_back(max_elems);
    cu::fill_random_bf16(in.back().get(), max_elems, 9 + r, 1.0f, root);
  }
  CUDA_CHECK(cudaStreamSynchronize(root));
  for (auto kind : {cu::Node::Collective::all_reduce, cu::Node::Collective::reduce_scatter, cu::Node::Collective::all_gather}) {
    const char* name = kind == cu::Node::Collective::all_reduce ? "all_reduce" : kind == cu::Node::Collective::reduce_scatter ? "reduce_scatter" : "all_gather";
    for (std::int64_t s : cal::transfer_sizes()) {
      if (s < (64 << 10) || s > (256LL << 20) || (s / 2) % T != 0) continue;
      std::vector<const __nv_bfloat16*> ip;
      std::vector<__nv_bfloat16*> op;
      std::vector<cudaStream_t> ready;
      for (int r = 0; r < T; ++r) {
        ip.push_back(in[r].get());
        op.push_back(out[r].get());
        ready.push_back(node.streams(r).comm);
      }
      // Timed as before (host enqueue and GPU together), then queued behind a sleep (the GPU's
      // time alone: the curve) with the host's enqueue time per call (launch.collective_host_us).
      const QueuedTiming t = time_queued(node, root, reps, [&] { node.collective(kind, ip, op, static_cast<std::size_t>(s / 2), ready); },
                                         [] { cu::host_profile::reset(); });
      if (cu::host_profile::enabled_in_env()) {
        std::fprintf(stderr, "  %s %lld B queued: host %.1f us per call: %s\n", name, static_cast<long long>(s),
                     t.derived["host_enqueue_us"].get<double>(), cu::host_profile::report_and_reset(2 + reps).c_str());
      }
      set.measurements.push_back(measurement(cal::bench::collective, {{"primitive", name}, {"bytes", s}, {"ranks", T}, {"implementation", "virtual direct, copy engine"}},
                                             t.samples, t.derived));
    }
  }
  // Host cost inside a stream of work, the way a decode step pays it: kIter iterations back to back,
  // the GPU running what came before, of [every rank launches a small kernel with arguments (the
  // sum of two 64 KiB vectors)], alone and then each followed by one collective of 64 KiB. The
  // per-launch cost is what launch.host_us means for the kernels schemes launch (an empty kernel
  // issued in a tight loop, host_launch below, costs the host less); the difference with the
  // collective is its per-call cost (launch.collective_host_us_by_primitive).
  {
    constexpr int kIter = 16;
    constexpr std::size_t kElems = 32768;
    std::vector<cu::DeviceBuffer<__nv_bfloat16>> small;
    std::vector<const __nv_bfloat16*> ip;
    std::vector<__nv_bfloat16*> op;
    std::vector<cudaStream_t> ready;
    for (int r = 0; r < T; ++r) {
      small.emplace_back(kElems);
      ip.push_back(in[r].get());
      op.push_back(out[r].get());
      ready.push_back(node.streams(r).compute[0]);
    }
    auto sync_all = [&] {
      for (int r = 0; r < T; ++r) {
        for (cudaStream_t x : node.streams(r).all()) CUDA_CHECK(cudaStreamSynchronize(x));
      }
    };
    // Host us per iteration, one sample per repetition.
    auto sequence = [&](const std::function<void()>& after) {
      std::vector<double> us;
      for (int rep = 0; rep < 2 + reps; ++rep) {
        sync_all();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kIter; ++i) {
          for (int r = 0; r < T; ++r) {
            node.activate(r);
            cu::PtrList two;
            two.add(in[r].get());
            two.add(in[r].get() + kElems);
            cu::sum_bf16(small[r].get(), two, kElems, ready[r]);
          }
          if (after) after();
        }
        const auto t1 = std::chrono::steady_clock::now();
        if (rep >= 2) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kIter);
      }
      sync_all();
      primary();
      return us;
    };
    const auto launches = sequence(nullptr);
    const double launches_us = cal::median_of(launches);
    std::vector<double> per_launch;
    for (double v : launches) per_launch.push_back(v / T);
    set.measurements.push_back(measurement(cal::bench::launch, {{"what", "launch_in_stream"}, {"iterations", kIter}, {"round_robin_ranks", T}},
                                           per_launch, {{"kernel", "sum of two bf16 vectors, 64 KiB"}}));
    for (auto kind : {cu::Node::Collective::all_reduce, cu::Node::Collective::reduce_scatter, cu::Node::Collective::all_gather}) {
      const char* name = kind == cu::Node::Collective::all_reduce ? "all_reduce" : kind == cu::Node::Collective::reduce_scatter ? "reduce_scatter" : "all_gather";
      auto v = sequence([&] { node.collective(kind, ip, op, kElems, ready); });
      for (double& x : v) x -= launches_us;
      set.measurements.push_back(measurement(cal::bench::launch,
                                             {{"what", "collective_in_stream"}, {"primitive", name}, {"ranks", T}, {"bytes", 2 * kElems}, {"iterations", kIter}},
                                             v, {{"per_iteration_without_us", launches_us}}));
    }
  }
  // Launch gaps on one partition.
  {
    node.activate(0);
    cudaStream_t s = r0.compute[0];
    constexpr int kChain = 500;
    set.measurements.push_back(measurement(cal::bench::launch, {{"what", "host_launch_one_context"}, {"calls", kChain}},
                                           cu::time_host_calls_us(s, 50, 10, kChain, [&] { cu::empty_kernel(s); })));
    // The profile's launch.host_us: launches round-robin over the ranks, each behind the switch to
    // its rank's green context, as the runner issues every scheme (one thread, rank after rank).
    int next = 0;
    set.measurements.push_back(measurement(cal::bench::launch, {{"what", "host_launch"}, {"calls", kChain}, {"round_robin_ranks", T}},
                                           cu::time_host_calls_us(s, 50, 10, kChain, [&] {
                                             const int r = next++ % T;
                                             node.activate(r);
                                             cu::empty_kernel(node.streams(r).compute[0]);
                                           })));
    for (int r = 0; r < T; ++r) CUDA_CHECK(cudaStreamSynchronize(node.streams(r).compute[0]));
    // The profile's launch.sync_host_us: one dependency between two of a rank's streams (an event
    // recorded on its comm stream, waited on by its compute stream), round-robin over the ranks.
    std::vector<cudaEvent_t> ev(static_cast<std::size_t>(T));
    for (int r = 0; r < T; ++r) {
      node.activate(r);
      CUDA_CHECK(cudaEventCreateWithFlags(&ev[static_cast<std::size_t>(r)], cudaEventDisableTiming));
    }
    next = 0;
    set.measurements.push_back(measurement(cal::bench::launch, {{"what", "stream_dependency"}, {"calls", kChain}, {"round_robin_ranks", T}},
                                           cu::time_host_calls_us(s, 50, 10, kChain, [&] {
                                             const int r = next++ % T;
                                             node.activate(r);
                                             CUDA_CHECK(cudaEventRecord(ev[static_cast<std::size_t>(r)], node.streams(r).comm));
                                             CUDA_CHECK(cudaStreamWaitEvent(node.streams(r).compute[0], ev[static_cast<std::size_t>(r)], 0));
                                           })));
    for (int r = 0; r < T; ++r) CUDA_CHECK(cudaStreamSynchronize(node.streams(r).compute[0]));
    for (cudaEvent_t e : ev) CUDA_CHECK(cudaEventDestroy(e));
    node.activate(0);
    constexpr int kQueued = 256;
    set.measurements.push_back(measurement(cal::bench::launch,
                                           {{"what", "dependent_gap"}, {"kernels", kQueued}, {"queued_behind_sleep", true}},
                                           cu::time_queued_gap_us(s, kQueued, 2, 10)));
    primary();
  }
  // HBM streaming with every rank reading its own weights at once (the one HBM they share).
  {
    const std::int64_t cols = 8192, rows = (256LL << 20) / 2 / cols;
    std::vector<cu::DeviceBuffer<__nv_bfloat16>> w, x, y;
    for (int r = 0; r < T; ++r) {
      w.emplace_back(rows * cols);
      x.emplace_back(cols);
      y.emplace_back(rows);
      cu::fill_random_bf16(w.back().get(), w.back().size(), 30 + r, 1.0f, root);
      cu::fill_random_bf16(x.back().get(), cols, 40, 1.0f, root);
    }
    CUDA_CHECK(cudaStreamSynchronize(root));
    auto v = time_on_node(node, root, 3, reps, [&] {
      for (int r = 0; r < T; ++r) {
        node.activate(r);
        cu::gemv_bf16(y[r].get(), w[r].get(), x[r].get(), rows, cols, node.streams(r).compute[0]);
      }
    });
    const std::int64_t bytes = static_cast<std::int64_t>(T) * rows * cols * 2;
    set.measurements.push_back(measurement(cal::bench::hbm_stream, {{"bytes", bytes}, {"ranks_streaming", T}}, v,
                                           {{"gbps", bytes / cal::median_of(v) / 1e3}}));
  }
  return set;
}

cal::SchemeRunResult run_one(cu::Node& node, const cal::SchemeRunConfig& c, cublasHandle_t cublas, ncclComm_t comm, int warmup, int reps) {
  cal::SchemeRunResult res;
  res.config = c;
  res.tolerance = kTolerance;
  std::function<double()> check;
  std::function<std::vector<double>(bool)> time;
  std::function<std::vector<double>()> host;
  std::string what;
  std::unique_ptr<cu::GemmRun> g;
  std::unique_ptr<cu::DecodeRun> d;
  if (c.kind == "gemm_collective") {
    // Point-to-point steps: async TP pulls by copy engine (its definition); CommFuse takes the
    // config's transport, by default the node's own (copy engine on virtual ranks, NCCL on a real
    // node: what validate assumes for runs that do not say). Refused before any collective, so on a
    // real node every rank refuses together.
    if (c.scheme == "async_tp") node.use_transport(cu::Node::Transport::copy_engine);
    if (c.scheme == "commfuse") {
      const std::string given = c.params.value("transport", std::string(node.is_virtual() ? "copy_engine" : "nccl"));
      node.use_transport(given == "nccl" ? cu::Node::Transport::nccl : cu::Node::Transport::copy_engine);
    }
    g = std::make_unique<cu::GemmRun>(node, c, cublas, comm);
    if (c.scheme == "no_overlap") cu::setup_no_overlap(*g);
    if (c.scheme == "data_slicing") cu::setup_data_slicing(*g, c.params.value("chunks", 4));
    if (c.scheme == "async_tp") cu::setup_async_tp(*g, c.params.value("streams", 2));
    if (c.scheme == "commfuse") cu::setup_commfuse(*g, c.params.value("m", 1), c.params.value("schedule", std::string("ring")));
    if (c.scheme == "flashoverlap") cu::setup_flashoverlap(*g, c.params["groups"].get<std::vector<int>>(), c.params["wave_sms"].get<int>(),
                                                          c.params.value("ctas_per_sm", 1));
    if (!g->enqueue) throw std::runtime_error("scheme " + c.scheme + " does not run gemm_collective");
    g->share_buffers();
    check = [&] { return g->check(); };
    time = [&](bool skip) { return g->time(skip, warmup, reps); };
    host = [&] { return g->host_enqueue_us; };
    what = g->what;
  } else {
    d = std::make_unique<cu::DecodeRun>(node, c, cublas, comm);
    check = [&] { return d->check(); };
    time = [&](bool skip) { return d->time(skip, warmup, reps); };
    host = [&] { return d->host_enqueue_us; };
    what = d->what;
  }
  res.rel_error = check();
  res.passed = std::isfinite(res.rel_error) && res.rel_error <= kTolerance;
  progress(c.id, what);
  progress("", "check: relative error " + std::to_string(res.rel_error) + (res.passed ? " (pass)" : " (FAIL)") +
                   " against cuBLAS + reference collective");
  cu::host_profile::reset();
  res.latency_us = cal::summarize(time(false));
  if (!host().empty()) res.host_enqueue_us = cal::median_of(host());
  if (cu::host_profile::enabled_in_env()) progress("", "host per run: " + cu::host_profile::report_and_reset(warmup + reps));
  res.compute_only_us = cal::summarize(time(true));
  char line[256];
  std::snprintf(line, sizeof line, "latency %.1f us (spread %.3f), compute-only %.1f us, exposed %.1f us, host enqueue %.1f us",
                res.latency_us.median, res.latency_us.spread, res.compute_only_us.median,
                res.latency_us.median - res.compute_only_us.median, res.host_enqueue_us);
  progress("", line);
  return res;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--config") o.config = next();
    else if (a == "--out") o.out = next();
    else if (a == "--only") {
      std::stringstream ss(next());
      for (std::string s; std::getline(ss, s, ',');) o.only.push_back(s);
    } else if (a == "--reps") o.reps = std::stoi(next());
    else if (a == "--warmup") o.warmup = std::stoi(next());
    else if (a == "--profile-schema") o.profile_schema = std::stoi(next());
    else if (a == "--bootstrap-dir") o.bootstrap_dir = next();
    else if (a == "-h" || a == "--help") {
      std::printf("usage: overlap-bench-schemes --config FILE [--out DIR] [--only ID,...] [--reps N] [--warmup N]\n"
                  "                             [--profile-schema 1|2] [--bootstrap-dir DIR]\n");
      return false;
    } else throw std::invalid_argument("unknown argument '" + a + "'");
  }
  if (o.config.empty()) throw std::invalid_argument("--config FILE is required");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    if (!parse(argc, argv, o)) return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlap-bench-schemes: %s\n", e.what());
    return 2;
  }
  cal::SchemeConfigList list;
  try {
    list = cal::load_scheme_config_list(o.config);
  } catch (const overlap::InputError& e) {
    std::fprintf(stderr, "overlap-bench-schemes: error: %s\n", e.what());
    return 2;
  }
  try {
    const auto pr = cu::process_rank_from_env();
    int gpus = 0;
    CUDA_CHECK(cudaGetDeviceCount(&gpus));
    const int device = pr.size > 1 ? pr.local_rank % gpus : 0;
    CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    const auto sm = cu::device_sm_resource(device);
    json env{{"fixture", false}, {"gpu_name", prop.name}, {"host", host}, {"async_engine_count", prop.asyncEngineCount},
             {"l2_bytes", prop.l2CacheSize},
             {"min_sm_partition", sm.min_partition}, {"physical_sm_count", prop.multiProcessorCount},
             {"nccl_version", cu::nccl_version_string()}, {"world_size", pr.size},
             {"results_dir", cal::results_dir_name(prop.name, host)}, {"config", o.config}};
    if (o.out.empty()) o.out = "calibrate/results/" + env["results_dir"].get<std::string>() + "/schemes";
    const int warmup = o.warmup >= 0 ? o.warmup : list.warmup;
    const int reps = o.reps > 0 ? o.reps : list.repetitions;
    cublasHandle_t cublas;
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    cal::SchemeRunSet out;
    out.environment = env;
    std::vector<cal::SchemeRunConfig> runs;
    for (const auto& c : list.runs) {
      if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), c.id) == o.only.end()) continue;
      if (pr.size > 1 && c.ranks != pr.size) continue;
      runs.push_back(c);
    }
    int failed = 0;
    if (pr.size > 1) {
      // Real node: NCCL, one process per GPU.
      out.host = "nodes";
      out.profile = "../profile.yaml";
      const ncclUniqueId id = cu::exchange_nccl_id(pr, o.bootstrap_dir, "schemes");
      ncclComm_t comm;
      NCCL_CHECK(ncclCommInitRank(&comm, pr.size, id, pr.rank));
      auto node = cu::make_nccl_node(comm, pr.rank, pr.size, prop.multiProcessorCount);
      for (const auto& c : runs) {
        // A run refused before its first collective (a transport this node lacks) is refused by
        // every rank alike, so the others go on; a failure inside a collective ends the job.
        try {
          out.runs.push_back(run_one(*node, c, cublas, comm, warmup, reps));
          failed += !out.runs.back().passed;
        } catch (const std::invalid_argument& e) {
          std::fprintf(stderr, "overlap-bench-schemes: rank %d: %s refused: %s\n", pr.rank, c.id.c_str(), e.what());
          ++failed;
        }
      }
      NCCL_CHECK(ncclCommDestroy(comm));
      if (pr.rank != 0) return failed ? 1 : 0;
    } else {
      out.host = "virtual";
      std::map<std::pair<int, std::string>, std::vector<cal::SchemeRunConfig>> by_node;
      for (const auto& c : runs) by_node[{c.ranks, c.link}].push_back(c);
      cudaStream_t root;
      CUDA_CHECK(cudaStreamCreateWithFlags(&root, cudaStreamNonBlocking));
      for (const auto& [key, node_runs] : by_node) {
        const auto [T, link] = key;
        const int sms = cu::virtual_rank_sms(prop.multiProcessorCount, T, std::max(1, sm.min_partition));
        progress("# virtual node", std::to_string(T) + " ranks x " + std::to_string(sms) + " SMs, link " + link);
        auto node = cu::make_virtual_node(device, T, sms, link, 512u << 20);
        const std::string profile = "profile_virtual_t" + std::to_string(T) + "_" + link + ".yaml";
        cal::MeasurementSet vm = measure_virtual_node(*node, link, node_runs, env, root, reps);
        cal::VirtualNodeRecord record{profile, T, link, node->rank_sms(), vm.environment, vm.measurements};
        cal::ProfileOptions po;
        po.schema = o.profile_schema;
        // With the physical GPU's GEMM full-rate limit, PCIe and memory-kernel rates when its
        // calibration sits in the parent folder (calibrate/results/<gpu>-<host>/schemes), exactly as
        // overlap-calibrate-profile --schemes writes it again.
        cal::write_output_file(o.out + "/" + profile, cal::write_virtual_node_profile_yaml(record, o.out + "/..", po));
        out.virtual_nodes.push_back(std::move(record));
        for (const auto& c : node_runs) {
          try {
            cal::SchemeRunResult r = run_one(*node, c, cublas, nullptr, warmup, reps);
            r.profile = profile;
            failed += !r.passed;
            out.runs.push_back(std::move(r));
          } catch (const std::exception& e) {
            std::fprintf(stderr, "overlap-bench-schemes: %s failed: %s\n", c.id.c_str(), e.what());
            ++failed;
            cudaGetLastError();
          }
        }
      }
    }
    cal::write_output_file(o.out + "/schemes.json", cal::scheme_runs_document(out).dump(1) + "\n");
    std::printf("# wrote %s/schemes.json: %zu runs, %d failed their check or did not run\n", o.out.c_str(), out.runs.size(), failed);
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlap-bench-schemes: error: %s\n", e.what());
    return 1;
  }
}
