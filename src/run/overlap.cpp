#include "run/overlap.h"

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <unordered_set>

namespace hd::run {

namespace {

// A run of tokens as bytes, the key of a hash set: exact, no collisions to reason about.
std::string_view run_at(const std::vector<int32_t>& tokens, size_t start, int run) {
  return {reinterpret_cast<const char*>(tokens.data() + start), static_cast<size_t>(run) * 4};
}

}  // namespace

int overlap_run(int chunk) { return std::clamp((chunk - 1) / 2, 4, kOverlapRun); }

Overlap held_out_overlap(const std::vector<std::vector<int32_t>>& calibration,
                         const std::vector<std::vector<int32_t>>& held_out, int run) {
  std::vector<int32_t> all;  // the calibration chunks end to end: a run may cross a boundary
  for (const auto& c : calibration) all.insert(all.end(), c.begin(), c.end());
  std::unordered_set<std::string_view> seen;
  for (size_t i = 0; i + static_cast<size_t>(run) <= all.size(); ++i) seen.insert(run_at(all, i, run));
  Overlap out;
  out.run = run;
  size_t all_tokens = 0, all_shared = 0;
  for (size_t h = 0; h < held_out.size(); ++h) {
    const auto& t = held_out[h];
    if (t.empty()) continue;
    std::vector<bool> covered(t.size(), false);
    for (size_t i = 0; i + static_cast<size_t>(run) <= t.size(); ++i) {
      if (seen.count(run_at(t, i, run))) {
        std::fill(covered.begin() + static_cast<ptrdiff_t>(i),
                  covered.begin() + static_cast<ptrdiff_t>(i) + run, true);
      }
    }
    const auto n = static_cast<size_t>(std::count(covered.begin(), covered.end(), true));
    all_tokens += t.size();
    all_shared += n;
    if (n > 0) {
      out.chunks.push_back({static_cast<int>(h), static_cast<double>(n) / static_cast<double>(t.size())});
    }
  }
  std::stable_sort(out.chunks.begin(), out.chunks.end(),
                   [](const ChunkOverlap& a, const ChunkOverlap& b) { return a.share > b.share; });
  out.share = all_tokens ? static_cast<double>(all_shared) / static_cast<double>(all_tokens) : 0;
  return out;
}

}  // namespace hd::run
