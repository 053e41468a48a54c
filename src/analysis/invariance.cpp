#include "analysis/invariance.h"

#include <algorithm>
#include <functional>

namespace hd::analysis {
namespace {

bool fits(const std::vector<InvarianceRow>& rows, const std::function<bool(int)>& rule) {
  return std::all_of(rows.begin(), rows.end(),
                     [&](const InvarianceRow& r) { return r.identical == rule(r.ubatch); });
}

std::string ranges(const std::vector<int>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(sorted[i]);
    if (j > i) out += (j == i + 1 ? ", " : "–") + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

// "2, 4 or 8"
std::string alternatives(const std::vector<int>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + std::to_string(values[i]);
  }
  return out;
}

// The rules the rows fit, each said on its own.
struct Fitting {
  std::vector<int> periods;  // m such that identical <=> multiple of m
  bool divides_chunk = false;
  bool from_first = false;  // identical <=> at least the smallest identical size
};

Fitting fitting_rules(const std::vector<InvarianceRow>& rows, const std::vector<int>& same,
                      int chunk) {
  Fitting f;
  int largest = 0;
  for (const auto& r : rows) largest = std::max(largest, r.ubatch);
  // One identical size fits any of its divisors: a period needs two to be more than a guess.
  if (same.size() >= 2) {
    for (int m = 2; m <= largest; ++m) {
      if (fits(rows, [m](int u) { return u % m == 0; })) f.periods.push_back(m);
    }
    f.divides_chunk = fits(rows, [chunk](int u) { return u > 0 && chunk % u == 0; });
  }
  f.from_first = fits(rows, [&](int u) { return u >= same.front(); });
  return f;
}

// "from ubatch t up", exact when t - 1 was tested, else naming the sizes nobody ran.
std::string from_up(const std::vector<InvarianceRow>& rows, int t) {
  int below = 0;  // the largest size tested below t (every one of them differs)
  for (const auto& r : rows) {
    if (r.ubatch < t) below = std::max(below, r.ubatch);
  }
  if (below == t - 1) return "bitwise identical exactly from ubatch " + std::to_string(t) + " up";
  std::vector<int> untested;
  for (int u = below + 1; u < t; ++u) untested.push_back(u);
  return "bitwise identical from ubatch " + std::to_string(t) + " up among the sizes tested, at " +
         "none below (" + ranges(untested) + " untested: the change may lie there)";
}

}  // namespace

std::string invariance_pattern(const std::vector<InvarianceRow>& rows, int chunk) {
  if (rows.empty()) return "nothing tested";
  std::vector<int> same;
  for (const auto& r : rows) {
    if (r.identical) same.push_back(r.ubatch);
  }
  std::sort(same.begin(), same.end());
  if (same.size() == rows.size()) return "bitwise identical at every ubatch tested";
  if (same.empty()) return "no ubatch tested is bitwise identical to the reference";
  const Fitting f = fitting_rules(rows, same, chunk);
  const size_t n_rules = f.periods.size() + (f.divides_chunk ? 1 : 0) + (f.from_first ? 1 : 0);
  if (n_rules == 1 && f.periods.size() == 1) {
    return "bitwise identical exactly at multiples of " + std::to_string(f.periods[0]);
  }
  if (n_rules == 1 && f.divides_chunk) {
    return "bitwise identical exactly where the ubatch divides the chunk (equal splits)";
  }
  if (n_rules == 1) return from_up(rows, same.front());
  std::string listed = "bitwise identical at ubatch " + ranges(same) + " only";
  if (n_rules == 0) return listed;
  std::vector<std::string> rules;
  if (!f.periods.empty()) rules.push_back("multiples of " + alternatives(f.periods));
  if (f.divides_chunk) rules.push_back("sizes that divide the chunk");
  if (f.from_first) rules.push_back("every size from " + std::to_string(same.front()) + " up");
  std::string joined;
  for (const auto& r : rules) joined += (joined.empty() ? "" : "; ") + r;
  return listed + ", which fits several rules alike (" + joined +
         "): other sizes would tell them apart";
}

}  // namespace hd::analysis
