// How a divergence in an attention output spreads over its heads. The tensor is the attention
// before its output projection, [rows][n_heads * head_dim] with head h in columns
// [h * head_dim, (h + 1) * head_dim). Pure.
#pragma once
#include <span>
#include <vector>

namespace hd::analysis {

struct HeadDelta {
  std::vector<double> max_abs;  // per head, over every row and the head's columns
  int worst = 0;                // the head with the largest max |Δ| (lowest index among ties)
  double median = 0;            // of max_abs (the mean of the middle two for an even count)
  // worst / median: one damaged head among healthy ones is inf; damage spread evenly is 1.
  // NaN when no head moved at all (0 / 0: there is nothing to concentrate).
  double concentration = 0;
};

// Same length required; channels must be a multiple of n_heads (InputError otherwise).
HeadDelta head_delta(std::span<const float> reference, std::span<const float> candidate,
                     int channels, int n_heads);

}  // namespace hd::analysis
