// Distance between two arms' residual rows at one point and position.
#pragma once
#include <span>

namespace hd::analysis {

struct ResidualDiff {
  double rel_err = 0;  // ||b - a||_2 / ||a||_2   (0 when a == b; inf when a == 0 != b)
  double cosine = 1;   // a.b / (||a|| ||b||)      (1 when both are 0)
  double max_abs = 0;  // max_i |b_i - a_i|
};

ResidualDiff residual_diff(std::span<const float> a, std::span<const float> b);

}  // namespace hd::analysis
