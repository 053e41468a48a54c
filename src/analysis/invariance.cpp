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
  const int largest = std::max_element(rows.begin(), rows.end(), [](auto& a, auto& b) {
                        return a.ubatch < b.ubatch;
                      })->ubatch;
  for (int m = 2; m <= largest; ++m) {
    if (same.size() >= 2 && fits(rows, [m](int u) { return u % m == 0; })) {
      return "bitwise identical exactly at multiples of " + std::to_string(m);
    }
  }
  if (same.size() >= 2 && fits(rows, [chunk](int u) { return chunk % u == 0; })) {
    return "bitwise identical exactly where the ubatch divides the chunk (equal splits)";
  }
  if (fits(rows, [&](int u) { return u >= same.front(); })) {
    return "bitwise identical exactly from ubatch " + std::to_string(same.front()) + " up";
  }
  return "bitwise identical at ubatch " + ranges(same) + " only";
}

}  // namespace hd::analysis
