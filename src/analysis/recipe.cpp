#include "analysis/recipe.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

namespace hd::analysis {

std::string regex_escape(const std::string& s) {
  static const std::string meta = R"(\^$.|?*+()[]{}/)";
  std::string out;
  for (char c : s) {
    if (meta.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string exact_name_pattern(const std::string& name) {
  std::string out = "^";
  out.append(regex_escape(name)).append("$");
  return out;
}

namespace {

// "blk.12.ffn_down.weight" -> {12, "ffn_down.weight"}; -1 for a tensor outside the blocks.
std::pair<int, std::string> split_layer(const std::string& name) {
  const std::string prefix = "blk.";
  if (name.rfind(prefix, 0) != 0) return {-1, name};
  const size_t dot = name.find('.', prefix.size());
  const std::string digits = name.substr(prefix.size(), dot - prefix.size());
  if (dot == std::string::npos || digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {-1, name};
  return {std::stoi(digits), name.substr(dot + 1)};
}

std::string without_weight(const std::string& s) {
  const std::string suffix = ".weight";
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0
             ? s.substr(0, s.size() - suffix.size())
             : s;
}

}  // namespace

std::vector<TensorGroup> tensor_groups(const std::vector<std::string>& names,
                                       int layers_per_group) {
  if (layers_per_group < 1) throw std::invalid_argument("layers_per_group < 1");
  std::vector<TensorGroup> groups;
  std::map<std::pair<int, std::string>, size_t> index;  // (first layer, class) -> group
  std::vector<std::vector<int>> layers;                 // per group, its layers
  for (const std::string& n : names) {
    const auto [layer, rest] = split_layer(n);
    const int first = layer < 0 ? -1 : layer / layers_per_group * layers_per_group;
    const auto key = std::make_pair(first, layer < 0 ? n : rest);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      groups.push_back({"", {}, ""});
      layers.emplace_back();
    }
    groups[it->second].tensors.push_back(n);
    if (layer >= 0) layers[it->second].push_back(layer);
  }
  for (const auto& [key, g] : index) {
    const auto& [first, rest] = key;
    TensorGroup& group = groups[g];
    if (first < 0) {
      group.name = without_weight(rest);
      group.pattern = exact_name_pattern(rest);
      continue;
    }
    std::vector<int> ls = layers[g];
    std::sort(ls.begin(), ls.end());
    ls.erase(std::unique(ls.begin(), ls.end()), ls.end());
    const std::string range = ls.size() == 1 ? std::to_string(ls[0])
                                             : std::to_string(ls.front()) + "-" +
                                                   std::to_string(ls.back());
    group.name.append("blk.").append(range).append(".").append(without_weight(rest));
    std::string alternatives;
    for (int l : ls) {
      if (!alternatives.empty()) alternatives.append("|");
      alternatives.append(std::to_string(l));
    }
    if (ls.size() > 1) alternatives = "(" + alternatives + ")";
    group.pattern.append("^blk\\.").append(alternatives).append("\\.").append(regex_escape(rest));
    group.pattern.append("$");
  }
  return groups;
}

namespace {

// The DP table: best[w] the least delta with units <= w over the groups so far, and each
// group's choice at every w for the walk back.
struct Knapsack {
  uint64_t unit = 1;
  uint64_t base = 0;                      // the sum of each group's smallest bytes
  std::vector<std::vector<uint64_t>> units;  // per group, per option
  std::vector<double> best;
  std::vector<std::vector<uint16_t>> pick;
};

Knapsack solve(const std::vector<GroupChoices>& groups) {
  Knapsack k;
  uint64_t span = 0;
  std::vector<uint64_t> least(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].options.empty()) throw std::invalid_argument("a group without options");
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& o : groups[g].options) lo = std::min(lo, o.bytes), hi = std::max(hi, o.bytes);
    least[g] = lo;
    k.base += lo;
    span += hi - lo;
  }
  const uint64_t buckets = std::max<uint64_t>(256, std::min<uint64_t>(1 << 15, (1ull << 26) / std::max<size_t>(groups.size(), 1)));
  k.unit = std::max<uint64_t>(1, (span + buckets - 1) / buckets);
  uint64_t width = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<uint64_t> u;
    uint64_t widest = 0;
    for (const auto& o : groups[g].options) {
      u.push_back((o.bytes - least[g] + k.unit - 1) / k.unit);
      widest = std::max(widest, u.back());
    }
    k.units.push_back(std::move(u));
    width += widest;
  }
  k.best.assign(width + 1, 0.0);
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<double> next(width + 1, std::numeric_limits<double>::infinity());
    std::vector<uint16_t> pick(width + 1, 0);
    for (uint64_t w = 0; w <= width; ++w) {
      for (size_t t = 0; t < groups[g].options.size(); ++t) {
        const uint64_t c = k.units[g][t];
        if (c > w) continue;
        const double v = k.best[w - c] + groups[g].options[t].delta_kl;
        if (v < next[w]) next[w] = v, pick[w] = static_cast<uint16_t>(t);
      }
    }
    k.best = std::move(next);
    k.pick.push_back(std::move(pick));
  }
  return k;
}

Allocation walk_back(const std::vector<GroupChoices>& groups, const Knapsack& k, uint64_t w) {
  Allocation a;
  a.feasible = true;
  a.choice.assign(groups.size(), 0);
  for (size_t g = groups.size(); g-- > 0;) {
    const size_t t = k.pick[g][w];
    a.choice[g] = t;
    w -= k.units[g][t];
    a.bytes += groups[g].options[t].bytes;
    a.delta_kl += groups[g].options[t].delta_kl;
  }
  return a;
}

}  // namespace

Allocation allocate_within_bytes(const std::vector<GroupChoices>& groups, uint64_t budget) {
  const Knapsack k = solve(groups);
  if (budget < k.base) return {};
  const uint64_t w = std::min<uint64_t>((budget - k.base) / k.unit, k.best.size() - 1);
  return walk_back(groups, k, w);
}

Allocation allocate_within_kl(const std::vector<GroupChoices>& groups, double max_delta) {
  const Knapsack k = solve(groups);
  // The sums are taken in another order than least_delta's: a target equal to it may differ
  // from the table's last entry in its last bits, and still be met.
  const double slack = 1e-12 * (1 + std::fabs(max_delta));
  for (uint64_t w = 0; w < k.best.size(); ++w) {
    if (k.best[w] <= max_delta + slack) return walk_back(groups, k, w);
  }
  return {};
}

namespace {
// The sum over groups of each group's best option by `better` (a strict order on one field).
template <typename T, typename Field, typename Better>
T sum_of_best(const std::vector<GroupChoices>& groups, Field field, Better better) {
  T s = 0;
  for (const auto& g : groups) {
    T best = field(g.options.front());
    for (const auto& o : g.options) best = better(field(o), best) ? field(o) : best;
    s += best;
  }
  return s;
}
uint64_t bytes_of(const GroupOption& o) { return o.bytes; }
double delta_of(const GroupOption& o) { return o.delta_kl; }
}  // namespace

uint64_t smallest_bytes(const std::vector<GroupChoices>& groups) {
  return sum_of_best<uint64_t>(groups, bytes_of, std::less<>());
}

uint64_t largest_bytes(const std::vector<GroupChoices>& groups) {
  return sum_of_best<uint64_t>(groups, bytes_of, std::greater<>());
}

double least_delta(const std::vector<GroupChoices>& groups) {
  return sum_of_best<double>(groups, delta_of, std::less<>());
}

namespace {
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t m = i; m <= j; ++m) r[order[m]] = (static_cast<double>(i + j) / 2.0) + 1.0;
    i = j + 1;
  }
  return r;
}
}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return NAN;
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n;
  const double my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx == 0 || syy == 0 ? NAN : sxy / std::sqrt(sxx * syy);
}

}  // namespace hd::analysis
