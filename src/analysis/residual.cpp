#include "analysis/residual.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hd::analysis {

ResidualDiff residual_diff(std::span<const float> a, std::span<const float> b) {
  double aa = 0, bb = 0, ab = 0, dd = 0, mx = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i], d = y - x;
    aa += x * x;
    bb += y * y;
    ab += x * y;
    dd += d * d;
    mx = std::max(mx, std::fabs(d));
  }
  ResidualDiff r;
  r.max_abs = mx;
  r.rel_err =
      dd == 0 ? 0 : (aa == 0 ? std::numeric_limits<double>::infinity() : std::sqrt(dd / aa));
  if (dd == 0) {
    r.cosine = 1;  // bitwise-equal rows: exactly 1, not 1 - rounding
  } else {
    r.cosine = (aa == 0 || bb == 0) ? 0 : ab / std::sqrt(aa * bb);
  }
  return r;
}

}  // namespace hd::analysis
