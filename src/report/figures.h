// How a figure is written in text: four significant digits (KL spans 1e-7, a floor, to 1, a
// broken quant, and all of it matters), and a mean with its 95 % interval.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "analysis/stats.h"

namespace hd::report {

inline std::string num(double v) { return v == 0 ? "0" : fmt::format("{:.4g}", v); }

inline std::string with_ci(const analysis::MeanCI& m, double scale = 1) {
  if (std::isnan(m.ci95)) return num(m.mean * scale);
  return num(m.mean * scale) + " ± " + num(m.ci95 * scale);
}

}  // namespace hd::report
