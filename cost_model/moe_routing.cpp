#include "cost_model/moe_routing.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <string>

#include <yaml-cpp/yaml.h>

#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/text.hpp"
#include "cost_model/units.hpp"
#include "cost_model/yaml_reader.hpp"

namespace overlap {
namespace {

using Kind = MoeRoutingSpec::Kind;

// Rounds quotas q_e (summing to `total`, each >= 0) to integers summing to `total`: floors, then one
// more to the largest fractional parts; ties go in the order e = start, start+1, ... (mod E). Experts
// not in `open` get nothing.
std::vector<std::int64_t> largest_remainder(const std::vector<double>& quota, std::int64_t total, int start,
                                            const std::vector<bool>& open) {
  const int e_count = static_cast<int>(quota.size());
  std::vector<std::int64_t> out(quota.size(), 0);
  std::vector<double> frac(quota.size(), -1.0);
  std::int64_t given = 0;
  for (int e = 0; e < e_count; ++e) {
    if (!open[static_cast<std::size_t>(e)]) continue;
    const double fl = std::floor(quota[static_cast<std::size_t>(e)]);
    out[static_cast<std::size_t>(e)] = static_cast<std::int64_t>(fl);
    frac[static_cast<std::size_t>(e)] = quota[static_cast<std::size_t>(e)] - fl;
    given += out[static_cast<std::size_t>(e)];
  }
  std::vector<int> order;
  for (int j = 0; j < e_count; ++j) {
    const int e = (start + j) % e_count;
    if (open[static_cast<std::size_t>(e)]) order.push_back(e);
  }
  // Stable: equal fractions keep the rotated order.
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return frac[static_cast<std::size_t>(a)] > frac[static_cast<std::size_t>(b)]; });
  // The floors fall short of `total` by less than one slot per expert (by a slot more or less where
  // the quotas' floating sum is off): one each in that order.
  for (std::size_t i = 0; given < total && !order.empty(); i = (i + 1) % order.size(), ++given)
    ++out[static_cast<std::size_t>(order[i])];
  return out;
}

// One source rank's slots over experts with weights w_e (>= 0, sum > 0): T k w_e / sum w by largest
// remainder, no expert above T (a token's top-k experts are distinct); an expert at T is closed and
// the rest re-split over the open experts.
std::vector<std::int64_t> split_slots(const std::vector<double>& weight, std::int64_t tokens, int top_k, int start) {
  const std::size_t e_count = weight.size();
  const std::int64_t total = tokens * top_k;
  std::vector<bool> open(e_count, true);
  std::vector<std::int64_t> fixed(e_count, 0);
  std::int64_t left = total;
  for (;;) {
    if (left == 0) return fixed;
    double w_open = 0;
    for (std::size_t e = 0; e < e_count; ++e)
      if (open[e]) w_open += weight[e];
    std::vector<double> quota(e_count, 0.0);
    for (std::size_t e = 0; e < e_count; ++e)
      if (open[e])  // weights that underflowed to 0 (a huge S) share what is left evenly
        quota[e] = w_open > 0
                       ? static_cast<double>(left) * weight[e] / w_open
                       : static_cast<double>(left) / static_cast<double>(std::count(open.begin(), open.end(), true));
    std::vector<std::int64_t> got = largest_remainder(quota, left, start, open);
    bool capped = false;
    for (std::size_t e = 0; e < e_count; ++e)
      if (open[e] && got[e] > tokens) {
        open[e] = false;
        fixed[e] = tokens;
        left -= tokens;
        capped = true;
      }
    if (!capped) {
      for (std::size_t e = 0; e < e_count; ++e)
        if (open[e]) fixed[e] = got[e];
      return fixed;
    }
    // top_k <= E: the open experts can take what is left (T each), and an expert is closed only
    // while the others are under T, so some stay open while slots are left.
  }
}

CountMatrix read_histogram(const MoeShape& shape, const std::string& file) {
  const std::string text = read_input_file(file, "routing histogram");
  const std::string key = "routing.histogram";
  const std::size_t rows = static_cast<std::size_t>(shape.ep_ranks);
  const std::size_t cols = static_cast<std::size_t>(shape.experts);
  CountMatrix m;
  std::vector<int> row_line;  // each row's line, for the row-sum check
  auto check_cell = [&](std::int64_t v, std::size_t r, std::size_t e, int line) {
    const std::string k = key + "." + std::to_string(r) + "." + std::to_string(e);
    if (v < 0) throw InputError(file, line, k, "a token count must be >= 0 (got " + std::to_string(v) + ")");
    if (v > shape.tokens_per_rank)
      throw InputError(file, line, k,
                       "more slots (" + std::to_string(v) + ") than the rank's tokens_per_rank (" +
                           std::to_string(shape.tokens_per_rank) + "): a token's top-k experts are distinct");
  };
  const bool yaml =
      file.size() >= 5 && (file.substr(file.size() - 5) == ".yaml" || file.substr(file.size() - 4) == ".yml");
  if (yaml) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& ex) {
      throw InputError(file, ex.mark.line + 1, key, std::string("not valid YAML: ") + ex.msg);
    }
    const YamlReader top(root, key, file);
    top.expect_sequence();
    if (top.size() != rows)
      throw InputError(file, top.line(), key,
                       std::to_string(top.size()) + " rows, expected one per EP rank (" + std::to_string(rows) + ")");
    for (std::size_t r = 0; r < rows; ++r) {
      const YamlReader row = top.element(r);
      row.expect_sequence();
      if (row.size() != cols)
        throw InputError(
            file, row.line(), row.path(),
            std::to_string(row.size()) + " columns, expected one per expert (" + std::to_string(cols) + ")");
      m.emplace_back();
      row_line.push_back(row.line());
      for (std::size_t e = 0; e < cols; ++e) {
        const YamlReader cell = row.element(e);
        const std::int64_t v = cell.as_int();
        check_cell(v, r, e, cell.line());
        m.back().push_back(v);
      }
    }
  } else {
    std::istringstream in(text);
    std::string line_text;
    int line = 0;
    while (std::getline(in, line_text)) {
      ++line;
      const std::string t = trim(line_text);
      if (t.empty() || t[0] == '#') continue;
      const std::size_t r = m.size();
      if (r >= rows) throw InputError(file, line, key, "more than " + std::to_string(rows) + " rows (one per EP rank)");
      std::vector<std::int64_t> row;
      // Every comma separates two fields, so "1,2," has an empty third field (an error below).
      for (std::size_t begin = 0;;) {
        const std::size_t comma = t.find(',', begin);
        const std::string f = trim(t.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
        const std::size_t e = row.size();
        const auto v = parse_decimal_int(f);
        if (!v)
          throw InputError(file, line, key + "." + std::to_string(r) + "." + std::to_string(e),
                           "a token count must be an integer (got '" + f + "')");
        if (e < cols) check_cell(*v, r, e, line);
        row.push_back(*v);
        if (comma == std::string::npos) break;
        begin = comma + 1;
      }
      if (row.size() != cols)
        throw InputError(
            file, line, key + "." + std::to_string(r),
            std::to_string(row.size()) + " columns, expected one per expert (" + std::to_string(cols) + ")");
      m.push_back(std::move(row));
      row_line.push_back(line);
    }
    if (m.size() != rows)
      throw InputError(file, line, key,
                       std::to_string(m.size()) + " rows, expected one per EP rank (" + std::to_string(rows) + ")");
  }
  const std::int64_t slots = shape.tokens_per_rank * shape.top_k;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int64_t sum = std::accumulate(m[r].begin(), m[r].end(), std::int64_t{0});
    if (sum != slots)
      throw InputError(file, row_line[r], key + "." + std::to_string(r),
                       "the row routes " + std::to_string(sum) +
                           " token-slots, expected tokens_per_rank x top_k = " + std::to_string(slots));
  }
  return m;
}

}  // namespace

MoeRoutingSpec parse_moe_routing(const std::string& text, const std::string& file, int line, const std::string& key) {
  const std::string t = trim(text);
  const std::size_t colon = t.find(':');
  const std::string name = trim(t.substr(0, colon));
  const std::string arg = colon == std::string::npos ? std::string() : trim(t.substr(colon + 1));
  MoeRoutingSpec spec;
  if (name == "uniform" && colon == std::string::npos) return spec;
  if (name == "zipf" && colon != std::string::npos) {
    const auto s = parse_decimal_real(arg);
    if (!s || !std::isfinite(*s) || *s < 0)
      throw InputError(file, line, key, "zipf needs an exponent S >= 0, e.g. 'zipf: 1.2' (got '" + arg + "')");
    spec.kind = Kind::zipf;
    spec.zipf_s = *s;
    return spec;
  }
  if (name == "histogram" && colon != std::string::npos) {
    if (arg.empty()) throw InputError(file, line, key, "histogram needs a file: 'histogram: FILE'");
    spec.kind = Kind::histogram;
    spec.histogram_file = arg;
    return spec;
  }
  throw InputError(file, line, key, "expected 'uniform', 'zipf: S' or 'histogram: FILE' (got '" + t + "')");
}

void validate_moe_shape(const MoeShape& s, const std::string& file, int line) {
  if (s.experts < 1)
    throw InputError(file, line, "moe.experts", "must be >= 1 (got " + std::to_string(s.experts) + ")");
  if (s.top_k < 1) throw InputError(file, line, "moe.top_k", "must be >= 1 (got " + std::to_string(s.top_k) + ")");
  if (s.top_k > s.experts)
    throw InputError(file, line, "moe.top_k",
                     "top_k (" + std::to_string(s.top_k) + ") exceeds the experts (" + std::to_string(s.experts) +
                         "): a token's top-k experts are distinct");
  if (s.ep_ranks < 1) throw InputError(file, line, "moe.ep", "must be >= 1 (got " + std::to_string(s.ep_ranks) + ")");
  if (s.experts % s.ep_ranks != 0)
    throw InputError(file, line, "moe.ep",
                     "EP (" + std::to_string(s.ep_ranks) + ") must divide the experts (" + std::to_string(s.experts) +
                         "): each rank holds experts / EP of them");
  if (s.tokens_per_rank < 1)
    throw InputError(file, line, "moe.tokens_per_rank", "must be >= 1 (got " + std::to_string(s.tokens_per_rank) + ")");
  if (s.capacity_factor && !(std::isfinite(*s.capacity_factor) && *s.capacity_factor > 0))
    throw InputError(file, line, "moe.capacity_factor",
                     "must be > 0 (got " + std::to_string(*s.capacity_factor) + "); leave it unset for dropless");
}

CountMatrix dispatch_bytes(const MoeRouting& routing, std::int64_t bytes_per_token) {
  CountMatrix m = routing.pairs;
  for (auto& row : m)
    for (auto& b : row) b = checked_mul(b, bytes_per_token);
  return m;
}

CountMatrix combine_bytes(const MoeRouting& routing, std::int64_t bytes_per_token) {
  const CountMatrix d = dispatch_bytes(routing, bytes_per_token);
  CountMatrix m(d.size(), std::vector<std::int64_t>(d.size(), 0));
  for (std::size_t s = 0; s < d.size(); ++s)
    for (std::size_t r = 0; r < d.size(); ++r) m[r][s] = d[s][r];
  return m;
}

std::vector<int> zipf_popularity_order(int experts, std::uint64_t seed) {
  std::vector<int> order(static_cast<std::size_t>(std::max(0, experts)));
  std::iota(order.begin(), order.end(), 0);
  // Fisher-Yates with the engine's raw output: std::shuffle and the std distributions are
  // implementation-defined, std::mt19937_64's sequence is not. The modulo's bias (at most E / 2^64)
  // does not matter for choosing which expert is popular.
  std::mt19937_64 rng(seed);
  for (std::size_t i = order.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng() % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::int64_t MoeRouting::dropped() const {
  std::int64_t d = 0;
  for (std::size_t s = 0; s < routed.size(); ++s)
    for (std::size_t e = 0; e < routed[s].size(); ++e) d += routed[s][e] - tokens[s][e];
  return d;
}

std::int64_t MoeRouting::received(int rank) const {
  const auto& row = local_expert_tokens.at(static_cast<std::size_t>(rank));
  return std::accumulate(row.begin(), row.end(), std::int64_t{0});
}

std::int64_t MoeRouting::expert_load(int expert) const {
  std::int64_t n = 0;
  for (const auto& row : tokens) n += row.at(static_cast<std::size_t>(expert));
  return n;
}

MoeRouting route_tokens(const MoeShape& shape, const MoeRoutingSpec& spec, const std::string& file, int line) {
  validate_moe_shape(shape, file, line);
  const int e_count = shape.experts;
  const int ep = shape.ep_ranks;
  const std::int64_t t = shape.tokens_per_rank;
  const std::int64_t slots = checked_mul(t, shape.top_k);
  checked_mul(slots, ep);  // the layer's total slot count fits 64 bits
  MoeRouting out;
  out.experts = e_count;
  out.ep_ranks = ep;
  out.experts_per_rank = e_count / ep;
  // Uniform's remainder rule: rank s's R extra slots start at expert s R (mod E).
  const std::int64_t rem = slots % e_count;
  auto start_of = [&](int s) { return static_cast<int>((static_cast<std::int64_t>(s) * rem) % e_count); };

  switch (spec.kind) {
    case Kind::uniform:
      for (int s = 0; s < ep; ++s) {
        std::vector<std::int64_t> row(static_cast<std::size_t>(e_count), slots / e_count);
        for (std::int64_t j = 0; j < rem; ++j) ++row[static_cast<std::size_t>((start_of(s) + j) % e_count)];
        out.routed.push_back(std::move(row));
      }
      break;
    case Kind::zipf: {
      if (!(std::isfinite(spec.zipf_s) && spec.zipf_s >= 0))
        throw InputError(file, line, "moe.routing", "zipf needs an exponent S >= 0");
      const std::vector<int> order = zipf_popularity_order(e_count, spec.seed);
      std::vector<double> weight(static_cast<std::size_t>(e_count), 0.0);
      for (int i = 0; i < e_count; ++i)
        weight[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] =
            1.0 / std::pow(static_cast<double>(i + 1), spec.zipf_s);
      for (int s = 0; s < ep; ++s) out.routed.push_back(split_slots(weight, t, shape.top_k, start_of(s)));
      break;
    }
    case Kind::histogram:
      out.routed = read_histogram(shape, spec.histogram_file);
      break;
  }

  // Capacity per source rank and expert (see the header): ceil(T k / E x C).
  out.tokens = out.routed;
  if (shape.capacity_factor) {
    const double cap = std::ceil(static_cast<double>(slots) / e_count * *shape.capacity_factor);
    out.expert_capacity = static_cast<std::int64_t>(std::min(cap, static_cast<double>(slots)));
    for (auto& row : out.tokens)
      for (auto& c : row) c = std::min(c, out.expert_capacity);
  }

  const int per_rank = out.experts_per_rank;
  out.pairs.assign(static_cast<std::size_t>(ep), std::vector<std::int64_t>(static_cast<std::size_t>(ep), 0));
  out.local_expert_tokens.assign(static_cast<std::size_t>(ep),
                                 std::vector<std::int64_t>(static_cast<std::size_t>(per_rank), 0));
  for (int s = 0; s < ep; ++s)
    for (int e = 0; e < e_count; ++e) {
      const std::int64_t c = out.tokens[static_cast<std::size_t>(s)][static_cast<std::size_t>(e)];
      const int dst = e / per_rank;
      out.pairs[static_cast<std::size_t>(s)][static_cast<std::size_t>(dst)] += c;
      out.local_expert_tokens[static_cast<std::size_t>(dst)][static_cast<std::size_t>(e % per_rank)] += c;
    }
  return out;
}

}  // namespace overlap
