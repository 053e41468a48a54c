#include "analysis/floor_sample.h"

#include <algorithm>

#include "errors.h"

namespace hd::analysis {
namespace {

constexpr int kAutoEvery = 8;  // auto: one chunk in 8 ...
constexpr int kAutoAtLeast = 4;  // ... at least 4 (two per split)
constexpr int kAutoAllUpTo = 8;  // ... and every chunk of a run this short

// Decimal digits only (no sign, no space on either side), or 0.
int count_of(const std::string& choice) {
  const bool digits = !choice.empty() && choice.size() <= 9 &&
                      choice.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) return 0;
  return std::stoi(choice);
}

}  // namespace

void check_floor_chunks(const std::string& choice) {
  if (choice == "all" || choice == "auto" || count_of(choice) >= 1) return;
  throw InputError("--floor-chunks must be 'auto', 'all' or a number of chunks (at least 1), "
                   "not '" + choice + "'");
}

std::vector<int> floor_sample(const std::string& choice, int n_chunks) {
  check_floor_chunks(choice);
  int k = n_chunks;
  if (choice == "auto" && n_chunks > kAutoAllUpTo) {
    k = std::max(kAutoAtLeast, (n_chunks + kAutoEvery - 1) / kAutoEvery);
  } else if (choice != "all" && choice != "auto") {
    k = count_of(choice);
  }
  std::vector<int> out;
  if (k >= n_chunks) {
    for (int c = 0; c < n_chunks; ++c) out.push_back(c);
    return out;
  }
  // m pairs of the text's n/2, the i-th at the middle of the i-th of m equal stretches.
  const int pairs = n_chunks / 2, m = (k + 1) / 2;
  for (int i = 0; i < m; ++i) {
    const int j = static_cast<int>((2LL * i + 1) * pairs / (2LL * m));
    out.push_back(2 * j);
    if (static_cast<int>(out.size()) < k) out.push_back(2 * j + 1);
  }
  return out;
}

std::string floor_rule_text(const std::string& choice) {
  if (choice == "all") return "every chunk";
  if (choice == "auto") {
    return "1 in " + std::to_string(kAutoEvery) + ", at least " + std::to_string(kAutoAtLeast) +
           "; every chunk of runs of " + std::to_string(kAutoAllUpTo) + " or fewer";
  }
  return choice + (choice == "1" ? " chunk" : " chunks");
}

}  // namespace hd::analysis
