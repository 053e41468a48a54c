#include "analysis/head_diff.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "errors.h"

namespace hd::analysis {

HeadDelta head_delta(std::span<const float> reference, std::span<const float> candidate,
                     int channels, int n_heads) {
  if (n_heads < 1 || channels < n_heads || channels % n_heads != 0) {
    throw InputError("cannot split " + std::to_string(channels) + " channels into " +
                     std::to_string(n_heads) + " heads");
  }
  if (reference.size() != candidate.size() || reference.size() % channels != 0) {
    throw InputError("per-head: the tensors' shapes differ");
  }
  const size_t head_dim = static_cast<size_t>(channels / n_heads);
  HeadDelta d;
  d.max_abs.assign(static_cast<size_t>(n_heads), 0.0);
  for (size_t i = 0; i < reference.size(); ++i) {
    const size_t head = (i % static_cast<size_t>(channels)) / head_dim;
    const double delta = std::fabs(static_cast<double>(candidate[i]) - reference[i]);
    d.max_abs[head] = std::max(d.max_abs[head], delta);
  }
  d.worst = static_cast<int>(std::max_element(d.max_abs.begin(), d.max_abs.end()) -
                             d.max_abs.begin());
  std::vector<double> sorted = d.max_abs;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size() / 2;
  d.median = sorted.size() % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
  const double worst = d.max_abs[static_cast<size_t>(d.worst)];
  d.concentration = worst == 0     ? std::numeric_limits<double>::quiet_NaN()
                    : d.median == 0 ? std::numeric_limits<double>::infinity()
                                    : worst / d.median;
  return d;
}

}  // namespace hd::analysis
