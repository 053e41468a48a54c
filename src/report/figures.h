// How a figure is written in text: four significant digits (KL spans 1e-7, a floor, to 1, a
// broken quant, and all of it matters), and a mean with its 95 % interval.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "analysis/stats.h"

namespace hd::report {

// NaN (a mean of no value, a floor not measured) is written "n/a", never "nan".
inline std::string num(double v) {
  if (std::isnan(v)) return "n/a";
  return v == 0 ? "0" : fmt::format("{:.4g}", v);
}

// A perplexity: NaN where no position is left to take it over (an arm gives every next token
// no probability: infinite_kl_note says how many it left out).
inline std::string ppl_text(double ppl) {
  return std::isnan(ppl) ? "n/a (every next token masked)" : fmt::format("{:.4f}", ppl);
}

inline std::string with_ci(const analysis::MeanCI& m, double scale = 1) {
  if (std::isnan(m.ci95)) return num(m.mean * scale);
  return num(m.mean * scale) + " ± " + num(m.ci95 * scale);
}

}  // namespace hd::report
