// DeepEP's dispatch and combine (deepep.hpp): what each GPU's NIC and NVLink port carry, and the time.
#include "cost_model/deepep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace overlap {

void check_deepep_layout(const DeepEpLayout& l) {
  if (l.ep < 1 || l.gpus_per_node < 1 || l.ep % l.gpus_per_node != 0)
    throw std::invalid_argument(
        fmt::format("DeepEP: ep {} must be a whole number of nodes of {} GPUs", l.ep, l.gpus_per_node));
  if (l.experts < l.ep || l.experts % l.ep != 0)
    throw std::invalid_argument(fmt::format("DeepEP: {} experts do not spread evenly over ep {}", l.experts, l.ep));
  if (l.top_k < 1 || l.top_k > l.experts)
    throw std::invalid_argument(fmt::format("DeepEP: top_k {} must lie in [1, {} experts]", l.top_k, l.experts));
  const int nodes = l.ep / l.gpus_per_node;
  if (l.max_nodes < 0 || l.max_nodes > nodes)
    throw std::invalid_argument(fmt::format("DeepEP: max_nodes {} must lie in [0, {} nodes]", l.max_nodes, nodes));
  if (l.max_nodes > 0 && static_cast<long long>(l.max_nodes) * (l.experts / nodes) < l.top_k)
    throw std::invalid_argument(fmt::format("DeepEP: {} nodes of {} experts cannot hold top_k {}", l.max_nodes,
                                            l.experts / nodes, l.top_k));
}

std::vector<DeepEpPortBytes> deepep_port_bytes(DeepEpKernel kernel, const DeepEpLayout& l,
                                               const std::vector<std::vector<std::vector<int>>>& experts_of,
                                               double token_bytes) {
  check_deepep_layout(l);
  if (experts_of.size() != static_cast<std::size_t>(l.ep))
    throw std::invalid_argument(fmt::format("DeepEP: a routing of {} GPUs for ep {}", experts_of.size(), l.ep));
  if (!(token_bytes > 0) || !std::isfinite(token_bytes))
    throw std::invalid_argument("DeepEP: token_bytes must be positive");
  const int per_gpu = l.experts / l.ep;
  auto node_of = [&](int gpu) { return gpu / l.gpus_per_node; };
  std::vector<DeepEpPortBytes> ports(static_cast<std::size_t>(l.ep));
  auto at = [&](int gpu) -> DeepEpPortBytes& { return ports[static_cast<std::size_t>(gpu)]; };
  for (int g = 0; g < l.ep; ++g) {
    for (const std::vector<int>& experts : experts_of[static_cast<std::size_t>(g)]) {
      std::set<int> gpus;
      for (int e : experts) {
        if (e < 0 || e >= l.experts)
          throw std::invalid_argument(fmt::format("DeepEP: expert {} of GPU {} is outside [0, {})", e, g, l.experts));
        gpus.insert(e / per_gpu);
      }
      if (std::set<int>(experts.begin(), experts.end()).size() != experts.size())
        throw std::invalid_argument(fmt::format("DeepEP: a token of GPU {} lists an expert twice", g));
      if (kernel == DeepEpKernel::low_latency) {
        // One message per selection, straight to the expert's GPU.
        for (int e : experts) {
          const int dst = e / per_gpu;
          if (node_of(dst) != node_of(g)) {
            at(g).rdma_send += token_bytes;
            at(dst).rdma_recv += token_bytes;
          } else if (dst != g) {
            at(g).nvlink_send += token_bytes;
            at(dst).nvlink_recv += token_bytes;
          }
        }
        continue;
      }
      std::set<int> reached;
      for (int gpu : gpus) reached.insert(node_of(gpu));
      if (l.max_nodes > 0 && static_cast<int>(reached.size()) > l.max_nodes)
        throw std::invalid_argument(fmt::format("DeepEP: a token of GPU {} reaches {} nodes; max_nodes is {}", g,
                                                reached.size(), l.max_nodes));
      for (int n : reached) {
        // One RDMA copy per node, to the GPU of the same index there (the source itself on its node).
        const int forwarder = n == node_of(g) ? g : n * l.gpus_per_node + g % l.gpus_per_node;
        if (forwarder != g) {
          at(g).rdma_send += token_bytes;
          at(forwarder).rdma_recv += token_bytes;
        }
        // Every GPU of node n holding its experts gets a copy through the forwarder's NVLink stage, the
        // forwarder itself too (its own copy goes through the same queue and receiver; deepep.hpp).
        for (int target : gpus)
          if (node_of(target) == n) {
            at(forwarder).nvlink_send += token_bytes;
            at(target).nvlink_recv += token_bytes;
          }
      }
    }
  }
  return ports;
}

DeepEpPortBytes deepep_expected_port_bytes(DeepEpKernel kernel, const DeepEpLayout& l, std::int64_t tokens_per_gpu,
                                           double token_bytes) {
  check_deepep_layout(l);
  if (tokens_per_gpu < 0) throw std::invalid_argument("DeepEP: a negative token count");
  const double t = static_cast<double>(tokens_per_gpu);
  const double g = l.gpus_per_node, ep = l.ep, k = l.top_k;
  const double nodes = ep / g;
  DeepEpPortBytes p;
  if (kernel == DeepEpKernel::low_latency) {
    // Each selection's GPU is uniform over the group: on another node with (ep - g) / ep, another GPU of
    // this node with (g - 1) / ep.
    p.rdma_send = p.rdma_recv = t * k * (ep - g) / ep * token_bytes;
    p.nvlink_send = p.nvlink_recv = t * k * (g - 1) / ep * token_bytes;
    return p;
  }
  // Normal kernels: the token's k experts uniform over the experts of M nodes (M = max_nodes, or all).
  const double m = l.max_nodes > 0 ? l.max_nodes : nodes;
  const double reached = m * (1.0 - std::pow(1.0 - 1.0 / m, k));  // distinct nodes among M
  // Its own node is among those reached with probability reached / nodes (the M nodes uniform).
  p.rdma_send = p.rdma_recv = t * reached * (1.0 - 1.0 / nodes) * token_bytes;
  // A reached node holds k_n >= 1 of the experts, k_n ~ Binomial(k, 1/M); they lie on
  // g (1 - (1 - 1/g)^k_n) distinct GPUs, each a copy of the NVLink stage (the forwarder's own included).
  double weighted = 0, reach = 0;
  double choose = 1;  // C(k, kn)
  for (int kn = 1; kn <= l.top_k; ++kn) {
    choose = choose * (k - kn + 1) / kn;
    const double pk = choose * std::pow(1.0 / m, kn) * std::pow(1.0 - 1.0 / m, k - kn);
    weighted += pk * g * (1.0 - std::pow(1.0 - 1.0 / g, kn));
    reach += pk;
  }
  const double targets = reach > 0 ? weighted / reach : 0.0;
  // Every GPU forwards, on average, as many node copies as it sends.
  p.nvlink_send = p.nvlink_recv = t * reached * targets * token_bytes;
  return p;
}

namespace {

Ps port_time_ps(double bytes, double gbps) {
  if (bytes <= 0) return 0;
  if (!(gbps > 0)) throw std::invalid_argument("DeepEP: a port with bytes to move has no rate");
  return checked_ps(bytes / gbps * 1e3);  // 1 GB/s = 1e-3 bytes per ps
}

}  // namespace

Ps deepep_time_ps(const DeepEpPortBytes& p, const DeepEpRates& r) {
  if (r.latency_us < 0 || r.rdma_gbps < 0 || r.nvlink_gbps < 0) throw std::invalid_argument("DeepEP: a negative rate");
  const Ps rdma = port_time_ps(std::max(p.rdma_send, p.rdma_recv), r.rdma_gbps);
  const Ps nvlink = port_time_ps(std::max(p.nvlink_send, p.nvlink_recv), r.nvlink_gbps);
  return checked_ps(r.latency_us * 1e6) + std::max(rdma, nvlink);
}

Ps deepep_time_ps(const std::vector<DeepEpPortBytes>& per_gpu, const DeepEpRates& r) {
  Ps worst = deepep_time_ps(DeepEpPortBytes{}, r);
  for (const DeepEpPortBytes& p : per_gpu) worst = std::max(worst, deepep_time_ps(p, r));
  return worst;
}

DeepEpDedup deepep_dedup_ratios(DeepEpKernel kernel, const DeepEpLayout& l) {
  DeepEpDedup r;
  if (kernel == DeepEpKernel::low_latency) return r;
  const DeepEpPortBytes normal = deepep_expected_port_bytes(DeepEpKernel::normal, l, 1, 1.0);
  const DeepEpPortBytes selections = deepep_expected_port_bytes(DeepEpKernel::low_latency, l, 1, 1.0);
  if (selections.rdma_send > 0) r.rdma = normal.rdma_send / selections.rdma_send;
  // Every selection, its own GPU's included, passes the NVLink stage once before deduplication.
  r.nvlink = normal.nvlink_send / l.top_k;
  return r;
}

std::vector<DeepEpPortBytes> deepep_port_bytes_of_pairs(DeepEpKernel kernel, const DeepEpLayout& l,
                                                        const PairBytes& pairs) {
  check_deepep_layout(l);
  const int n = l.ep, g = l.gpus_per_node;
  if (pairs.size() != static_cast<std::size_t>(n))
    throw std::invalid_argument(fmt::format("DeepEP: {} byte rows for ep {}", pairs.size(), n));
  for (const auto& row : pairs)
    if (row.size() != static_cast<std::size_t>(n)) throw std::invalid_argument("DeepEP: the byte matrix is not square");
  const DeepEpDedup dedup = deepep_dedup_ratios(kernel, l);
  std::vector<DeepEpPortBytes> out(static_cast<std::size_t>(n));
  auto at = [&](int gpu) -> DeepEpPortBytes& { return out[static_cast<std::size_t>(gpu)]; };
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      const Bytes raw = pairs[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
      if (raw < 0) throw std::invalid_argument("DeepEP: a negative pair");
      const double b = static_cast<double>(raw);
      if (b == 0) continue;
      const bool normal = kernel == DeepEpKernel::normal;
      if (s == d) {  // its own GPU: through the normal kernels' NVLink stage (its queue and receiver)
        if (normal) {
          at(s).nvlink_send += b * dedup.nvlink;
          at(d).nvlink_recv += b * dedup.nvlink;
        }
        continue;
      }
      if (s / g == d / g) {  // its own node: over NVLink
        at(s).nvlink_send += b * dedup.nvlink;
        at(d).nvlink_recv += b * dedup.nvlink;
        continue;
      }
      const int f = normal ? deepep_forwarder(s, d, g) : d;
      at(s).rdma_send += b * dedup.rdma;
      at(f).rdma_recv += b * dedup.rdma;
      if (normal) {
        at(f).nvlink_send += b * dedup.nvlink;
        at(d).nvlink_recv += b * dedup.nvlink;
      }
    }
  return out;
}

DeepEpRates deepep_rates(const HardwareProfile& hw) {
  const FabricSpec& f = hw.fabric;
  const auto nvlink = f.links.find("nvlink");
  if (nvlink == f.links.end())
    throw std::invalid_argument("DeepEP's kernels move a node's tokens over NVLink; the profile has no fabric.links.nvlink");
  DeepEpRates r;
  r.nvlink_gbps = nvlink->second.bandwidth_gbps * hw.comm.bandwidth_efficiency;
  r.latency_us = kDeepEpFixedCostUs;
  const auto network = f.links.find("network");
  if (f.topology == "multi_node" && network != f.links.end()) {
    const int per_node = f.gpus_per_node > 0 ? f.gpus_per_node : f.num_gpus;
    const int nics = f.nics_per_node > 0 ? std::min(f.nics_per_node, per_node) : per_node;
    r.rdma_gbps = network->second.bandwidth_gbps * f.nic_efficiency * nics / per_node;
  }
  return r;
}

double deepep_fp8_token_bytes(std::int64_t hidden) {
  return static_cast<double>(hidden) + static_cast<double>(hidden) / 128.0 * 4.0;
}

double deepep_bf16_token_bytes(std::int64_t hidden) { return 2.0 * static_cast<double>(hidden); }

}  // namespace overlap
