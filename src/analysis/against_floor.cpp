#include "analysis/against_floor.h"

#include <cmath>

namespace hd::analysis {

double upper_end(const MeanCI& floor) {
  return floor.mean + (std::isnan(floor.ci95) ? 0 : floor.ci95);
}

Standing standing(const MeanCI& value, double floor_hi) {
  Standing s;
  if (std::isnan(value.mean)) return s;
  const bool has_interval = !std::isnan(value.ci95);
  const double low = std::fabs(value.mean) - (has_interval ? value.ci95 : 0);
  s.includes_zero = has_interval && low <= 0;
  // A floor of exactly 0 puts nothing below it: only "interval includes 0" can say that.
  s.below_floor = !std::isnan(floor_hi) && floor_hi > 0 && low <= floor_hi;
  return s;
}

std::vector<std::string> standing_notes(const Standing& s) {
  std::vector<std::string> v;
  if (s.includes_zero) v.emplace_back(kIncludesZero);
  if (s.below_floor) v.emplace_back(kBelowFloor);
  return v;
}

std::string standing_text(const Standing& s) {
  std::string out;
  for (const auto& n : standing_notes(s)) out += (out.empty() ? "" : "; ") + n;
  return out;
}

std::string few_chunks_note(size_t n_chunks) {
  if (n_chunks >= kFewChunks) return "";
  return std::to_string(n_chunks) + (n_chunks == 1 ? " chunk: no intervals" : " chunks") +
         (n_chunks == 1 ? "" : ": intervals are wide");
}

}  // namespace hd::analysis
