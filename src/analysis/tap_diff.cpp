#include "analysis/tap_diff.h"

#include <cmath>
#include <limits>

namespace hd::analysis {

TapDelta tap_delta(std::span<const float> ref, std::span<const float> cand) {
  TapDelta d;
  double sum = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double delta = std::fabs(double(cand[i]) - double(ref[i]));
    d.max_abs = std::max(d.max_abs, delta);
    d.ref_abs_max = std::max(d.ref_abs_max, std::fabs(double(ref[i])));
    sum += delta;
  }
  d.mean_abs = ref.empty() ? 0 : sum / double(ref.size());
  d.rel_err = d.ref_abs_max > 0 ? d.max_abs / d.ref_abs_max
              : d.max_abs > 0   ? std::numeric_limits<double>::infinity()
                                : 0;
  return d;
}

}  // namespace hd::analysis
