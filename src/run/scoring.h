// The one scoring loop of every kind that compares two arms' passes: B's rows of logits
// against A's, position by position, over the full vocabulary (analysis/kl.h score_position),
// and the totals a kind keeps of them. A diff's session, a sweep's combinations, a floor's
// ubatch splits and a recommendation's variants all score through it, so a change to how a
// position is scored is made once.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "analysis/kl.h"

namespace hd::run {

// Two arms' rows of logits for positions first_output.. (vocab floats each; row 0 is position
// first_output), and the tokens: position p predicts tokens[p + 1].
struct PassRows {
  std::span<const float> a, b;
  size_t vocab = 0;
  std::span<const int32_t> tokens;
  int first_output = 0;

  std::span<const float> row_a(int p) const { return a.subspan(offset(p), vocab); }
  std::span<const float> row_b(int p) const { return b.subspan(offset(p), vocab); }
  size_t offset(int p) const { return static_cast<size_t>(p - first_output) * vocab; }
};

// Scores positions [from, to) in order, calling each(p, score).
template <typename Each>
void score_positions(const PassRows& r, int from, int to, analysis::ScoreScratch& scratch,
                     Each&& each) {
  for (int p = from; p < to; ++p) {
    each(p, analysis::score_position(r.row_a(p), r.row_b(p), r.tokens[static_cast<size_t>(p + 1)],
                                     scratch));
  }
}

// Whether A's and B's greedy tokens differ (the lowest id among ties, as llama-perplexity).
inline bool top1_changed(const analysis::PositionScore& s) { return s.top_a.id[0] != s.top_b.id[0]; }

// The totals a kind keeps of many scored positions: their count, the KL's sum and largest,
// how many top-1 tokens changed.
struct ScoreTotals {
  int64_t positions = 0, flips = 0;
  double kl_sum = 0, kl_max = 0;

  void add(const analysis::PositionScore& s) {
    ++positions;
    kl_sum += s.kl;
    kl_max = std::max(kl_max, s.kl);
    flips += top1_changed(s);
  }
  double kl_mean() const { return positions ? kl_sum / static_cast<double>(positions) : NAN; }
  double flip_rate() const {
    return positions ? static_cast<double>(flips) / static_cast<double>(positions) : NAN;
  }
};

}  // namespace hd::run
