#pragma once
// Hand-built nodes for engine tests: numbers chosen so every expected time is exact.
#include "sim/engine.hpp"
#include "sim/node_config.hpp"

namespace overlap::sim::test {

// `gpus` GPUs on one switch; each GPU port has `port_gbps` per direction and no latency.
inline NodeConfig switch_node(int gpus, int sms, int copy_engines, double port_gbps = 100.0, Ps latency_ps = 0) {
  NodeConfig n;
  for (int g = 0; g < gpus; ++g) n.gpus.push_back(GpuConfig{sms, copy_engines});
  for (int g = 0; g < gpus; ++g) n.fabric.add_node("gpu" + std::to_string(g), g);
  const int sw = n.fabric.add_node("switch");
  for (int g = 0; g < gpus; ++g) {
    n.fabric.add_link(g, sw, port_gbps, latency_ps, "up" + std::to_string(g), "port");
    n.fabric.add_link(sw, g, port_gbps, latency_ps, "down" + std::to_string(g), "port");
  }
  for (int g = 0; g < gpus; ++g) n.fabric.set_hbm(g, 1000.0);
  return n;
}

// One tile-time used throughout: 1 us.
inline constexpr Ps kTile = 1'000'000;

inline Op tiled(std::string name, StreamId s, std::int64_t tiles, Ps cta_ps = kTile) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::tiled;
  op.stream = s;
  op.ctas = tiles;
  op.cta_ps = cta_ps;
  return op;
}

inline Op comm_kernel(std::string name, StreamId s, int channels, Ps duration_ps) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::comm_kernel;
  op.stream = s;
  op.channels = channels;
  op.duration_ps = duration_ps;
  op.comm = true;
  return op;
}

inline Op copy(std::string name, StreamId s, int src, int dst, Bytes bytes) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::copy;
  op.stream = s;
  op.src_gpu = src;
  op.dst_gpu = dst;
  op.bytes = bytes;
  op.comm = true;
  return op;
}

inline Op delay(std::string name, StreamId s, Ps ps) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::delay;
  op.stream = s;
  op.delay_ps = ps;
  return op;
}

}  // namespace overlap::sim::test
