// How far one tap of a candidate is from the reference's: max and mean |Δ| over every value,
// and the max relative to the reference's own scale (max |ref|). Pure.
#pragma once
#include <span>

namespace hd::analysis {

struct TapDelta {
  double max_abs = 0;
  double mean_abs = 0;
  double ref_abs_max = 0;
  double rel_err = 0;  // max_abs / ref_abs_max (0 when both are 0, inf when only the ref is 0)
};

// Same length required (the caller checks shapes first).
TapDelta tap_delta(std::span<const float> reference, std::span<const float> candidate);

}  // namespace hd::analysis
