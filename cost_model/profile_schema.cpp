#include "cost_model/profile_schema.hpp"

namespace overlap::profile_schema {
namespace {

template <class S>
std::string_view type_of(const Key<S>& k) {
  if (!k.type.empty()) return k.type;
  return std::visit(
      [](auto m) -> std::string_view {
        using M = decltype(m);
        if constexpr (std::is_same_v<M, int S::*> || std::is_same_v<M, std::int64_t S::*>) return "int";
        else if constexpr (std::is_same_v<M, double S::*>) return "number";
        else if constexpr (std::is_same_v<M, bool S::*>) return "bool";
        else if constexpr (std::is_same_v<M, std::string S::*>) return "string";
        else if constexpr (std::is_same_v<M, std::map<std::string, double> S::*>) return "number";
        else return "";
      },
      k.member);
}

template <class Array>
void add(std::vector<KeyInfo>& out, const Array& keys) {
  for (const auto* k : keys)
    out.push_back({k->path, type_of(*k), k->check, k->range, k->required, k->doc, k->source});
}

std::string_view first(std::string_view path) { return path.substr(0, path.find('.')); }
std::string_view rest(std::string_view path) {
  const auto dot = path.find('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
}

// A schema path matches a concrete one component by component: equal, or a place holder <...>
// for any one component; <curve> stands for a curve key, which may hold dots (copy_engine.d2d,
// all_reduce.n8.LL), and <key> for a profile key's dotted path (placeholders.<key>.range); "a[]" is "a" followed by an element index.
bool matches(std::string_view pattern, std::string_view path) {
  if (pattern.empty() || path.empty()) return pattern.empty() && path.empty();
  std::string_view p = first(pattern);
  const std::string_view s = first(path);
  const bool list = p.size() > 2 && p.substr(p.size() - 2) == "[]";
  if (list) p.remove_suffix(2);
  if (p == "<curve>" || p == "<key>") {
    for (std::string_view tail = rest(path); !tail.empty(); tail = rest(tail)) {
      if (matches(rest(pattern), tail)) return true;
    }
    return false;
  }
  if (!(p == s || (p.front() == '<' && p.back() == '>'))) return false;
  return matches(rest(pattern), list ? rest(rest(path)) : rest(path));
}

}  // namespace

std::vector<KeyInfo> all_keys() {
  std::vector<KeyInfo> out;
  add(out, kTop);
  add(out, kGpu);
  add(out, kFabric);
  add(out, kLink);
  add(out, kNode);
  add(out, kEdge);
  add(out, kComm);
  add(out, kLaunch);
  add(out, kTransport);
  add(out, kCurve);
  add(out, std::array{&curve_keys::point_bytes, &curve_keys::point_us});
  add(out, kGemm);
  add(out, kPlaceholder);
  return out;
}

const KeyInfo* find_key(const std::string& path) {
  static const std::vector<KeyInfo> keys = all_keys();
  for (const KeyInfo& k : keys) {
    if (matches(k.path, path)) return &k;
  }
  // An entry of a map-valued key ("gpu.peak_tflops.bf16", "comm.latency_us.Ring.LL.base") belongs to
  // the map's row; a section (a top-level row) takes no unknown keys.
  for (auto dot = path.rfind('.'); dot != std::string::npos && dot > 0; dot = path.rfind('.', dot - 1)) {
    const std::string prefix = path.substr(0, dot);
    if (prefix.find('.') == std::string::npos) break;
    for (const KeyInfo& k : keys) {
      if (matches(k.path, prefix)) return &k;
    }
  }
  return nullptr;
}

std::string unit_of(const KeyInfo& k) {
  if (k.check == Check::fraction) return "fraction";
  return k.range ? std::string(k.range->unit) : std::string();
}

}  // namespace overlap::profile_schema
